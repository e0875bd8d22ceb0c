//! Configuration loading and validation.

use std::path::{Path, PathBuf};

use linkmodel::config::{BitErrorModel, EventLevel, LinkKind, PortKind};
use linkmodel::{ConfigError, Dir, Direction, EmulatorConfig};

fn err(yaml: &str) -> String {
    EmulatorConfig::from_yaml_str(yaml).unwrap_err().to_string()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linkmodel-cfg-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn empty_config_has_geo_defaults() {
    let c = EmulatorConfig::from_yaml_str("").unwrap();
    assert_eq!(c.seed, 1);
    assert_eq!(c.control.listen, "127.0.0.1:8781");
    assert_eq!(c.telemetry.period_ms, 100);
    assert_eq!(c.telemetry.events, EventLevel::Losses);
    assert_eq!(c.ports.gw.kind, PortKind::AfPacket);
    assert_eq!(c.forward.kind, Some(LinkKind::Dvbs2));
    assert_eq!(c.return_.kind, Some(LinkKind::Rcs2));
    assert_eq!(c.forward.symbol_rate_baud, Some(40e6));
    assert_eq!(c.forward.uplink.attenuation.tick_ms, Some(1000));
    // The resolved configuration serializes (emulator --check prints it as JSON).
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["return"]["kind"], "rcs2");
    assert_eq!(j["forward"]["acm"]["mode"], "acm");
}

#[test]
fn field_errors_name_path_value_and_limit() {
    assert_eq!(
        err("forward: {acm: {margin_db: 50}}"),
        "forward.acm.margin_db: value 50 is outside the allowed range [0, 20] dB"
    );
    assert_eq!(
        err("return: {queue: {limit_packets: 0}}"),
        "return.queue.limit_packets: value 0 is outside the allowed range [1, 10000000] packets"
    );
    assert_eq!(
        err("forward: {downlink: {attenuation: {type: on_off, amplitude_db: 200}}}"),
        "forward.downlink.attenuation.amplitude_db: value 200 is outside the allowed range [0, 100] dB"
    );
    assert_eq!(
        err("telemetry: {period_ms: 1}"),
        "telemetry.period_ms: value 1 is outside the allowed range [10, 60000] ms"
    );
    assert!(err("forward: {acm: {mode: ccm}}").starts_with("forward.acm.modcod: required"));
    assert!(err("forward: {acm: {mode: ccm, modcod: 29}}")
        .starts_with("forward.acm.modcod: MODCOD id 29 is not in the table"));
    assert!(err("forward: {frame: short, acm: {mode: ccm, modcod: 28}}")
        .starts_with("forward.acm.modcod: MODCOD id 28 (32APSK 9/10) does not exist"));
    assert!(err("forward: {acm: {mode: vcm, vcm_modcods: [28, 99]}}")
        .starts_with("forward.acm.vcm_modcods[1]: MODCOD id 99"));
    assert!(err("return: {kind: fixed}").starts_with("return.rate_bps: required"));
    assert!(err("forward: {gse_label_bytes: 4}").starts_with("forward.gse_label_bytes: value 4"));
    assert!(
        err("forward: {delay_ms: 10, delay_file: {path: x}}").starts_with("forward.delay_file:")
    );
    assert!(err("control: {listen: localhost}").starts_with("control.listen:"));
    assert!(
        err("ports: {gw: {interface: a}, st: {interface: a}}").starts_with("ports.st.interface")
    );
    assert!(err("forward: {uplink: {sky_noise: {enabled: true}}}")
        .starts_with("forward.uplink.sky_noise.enabled"));
    assert!(err("forward: {bit_errors: {model: pattern}}")
        .starts_with("forward.bit_errors.pattern_file: required"));
    assert!(err("return: {oracle_eten: {map_pin: eten_oracle}}")
        .starts_with("return.oracle_eten.map_pin: eten_oracle is not an absolute path"));
    assert!(err("forward: {oracle_eten: {}}").contains("missing field `map_pin`"));
}

#[test]
fn yaml_errors_name_the_problem() {
    let e = err("forward: {acm: {margn_db: 1}}");
    assert!(e.contains("unknown field `margn_db`"), "{e}");
    let e = err("seed: -1");
    assert!(e.starts_with("<config>: seed"), "{e}");
}

#[test]
fn relative_paths_resolve_against_the_config_dir_and_files_are_checked() {
    let d = tmpdir("rel");
    std::fs::create_dir_all(d.join("traces")).unwrap();
    std::fs::write(d.join("traces/rain.csv"), "0 0\n10 2\n5 1\n").unwrap();
    let yaml = "forward:\n  downlink:\n    attenuation: {type: file, file: traces/rain.csv}\n";
    std::fs::write(d.join("link.yaml"), yaml).unwrap();
    let e = EmulatorConfig::from_yaml_file(&d.join("link.yaml")).unwrap_err();
    match &e {
        ConfigError::File { file, line, reason } => {
            assert!(Path::new(file).ends_with("traces/rain.csv"), "{file}");
            assert_eq!(*line, 3);
            assert!(
                reason.contains("tick 5 is not after the previous tick 10"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    std::fs::write(d.join("traces/rain.csv"), "0 0\n10 2\n").unwrap();
    let c = EmulatorConfig::from_yaml_file(&d.join("link.yaml")).unwrap();
    assert_eq!(
        c.forward.downlink.attenuation.file.as_deref(),
        Some(d.join("traces/rain.csv").as_path())
    );
    // A missing file names itself.
    std::fs::remove_file(d.join("traces/rain.csv")).unwrap();
    let e = EmulatorConfig::from_yaml_file(&d.join("link.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("traces/rain.csv: cannot read"), "{e}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn tables_and_patterns_from_files() {
    let d = tmpdir("tables");
    std::fs::write(
        d.join("modcod.txt"),
        "nb_fmt = 2\n1 QPSK 1/2 0.988858 1.00\n2 8PSK 3/4 2.228124 7.91\n",
    )
    .unwrap();
    std::fs::write(
        d.join("per.csv"),
        "modcod_id,esn0_db,per\n2,7.5,0.5\n2,7.9,1e-7\n",
    )
    .unwrap();
    std::fs::write(d.join("errors.pat"), "0 8\n3 9 10\n").unwrap();
    let yaml = "
forward:
  modcod_table: modcod.txt
  per_table: per.csv
  bit_errors: {model: pattern, pattern_file: errors.pat, action: drop}
";
    std::fs::write(d.join("l.yaml"), yaml).unwrap();
    let c = EmulatorConfig::from_yaml_file(&d.join("l.yaml")).unwrap();
    assert_eq!(c.forward.bit_errors.model, BitErrorModel::Pattern);
    let dir = Direction::new(&c, Dir::Forward).unwrap();
    let s = dir.status(0);
    assert_eq!(s.modcod.unwrap().id, 2);
    std::fs::write(d.join("per.csv"), "2,7.5,0.5\n2,7.9,2\n").unwrap();
    let e = EmulatorConfig::from_yaml_file(&d.join("l.yaml"))
        .unwrap_err()
        .to_string();
    assert!(e.ends_with("per.csv:2: per 2 is outside [0, 1]"), "{e}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn geometry_gives_the_delay() {
    let c = EmulatorConfig::from_yaml_str(
        "geometry: {satellite_longitude_deg: 13, gateway: {lat_deg: 43.6, lon_deg: 1.44}, terminal: {lat_deg: 48.86, lon_deg: 2.35, alt_m: 35}}",
    )
    .unwrap();
    let f = Direction::new(&c, Dir::Forward).unwrap().status(0).delay_ms;
    let r = Direction::new(&c, Dir::Return).unwrap().status(0).delay_ms;
    assert!(f > 250.0 && f < 258.0, "{f}");
    assert!((f - r).abs() < 1e-9);
}

#[test]
fn example_configs_in_the_repository_are_valid() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/links");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) == Some("yaml") {
            let c = EmulatorConfig::from_yaml_file(&p)
                .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            Direction::new(&c, Dir::Forward).unwrap();
            Direction::new(&c, Dir::Return).unwrap();
            n += 1;
        }
    }
    assert!(n >= 3, "{n} example configs");
}

#[test]
fn numbers_in_exponent_form() {
    let c = EmulatorConfig::from_yaml_str(
        "forward: {symbol_rate_baud: 40e6}\nreturn: {kind: fixed, rate_bps: 2e6}",
    )
    .unwrap();
    assert_eq!(c.forward.symbol_rate_baud, Some(40e6));
    assert_eq!(c.return_.rate_bps, Some(2e6));
}

/// The numeric leaves of a schema object with their bounds: (dotted path, is integer, min, max).
fn bounded_leaves(
    root: &serde_json::Value,
    s: &serde_json::Value,
    path: &str,
    out: &mut Vec<(String, bool, f64, f64)>,
) {
    let s = match s.get("$ref").and_then(|r| r.as_str()) {
        Some(r) => &root["$defs"][r.trim_start_matches("#/$defs/")],
        None => s,
    };
    if let Some(variants) = s.get("anyOf").and_then(|v| v.as_array()) {
        for v in variants {
            bounded_leaves(root, v, path, out);
        }
        return;
    }
    if let Some(props) = s.get("properties").and_then(|p| p.as_object()) {
        for (k, v) in props {
            bounded_leaves(root, v, &format!("{path}.{k}"), out);
        }
        return;
    }
    if let (Some(lo), Some(hi)) = (s["minimum"].as_f64(), s["maximum"].as_f64()) {
        let types = s["type"].to_string();
        out.push((path.to_string(), types.contains("integer"), lo, hi));
    }
}

fn with_value(path: &str, v: serde_json::Value) -> String {
    let mut doc = v;
    for key in path.trim_start_matches('.').rsplit('.') {
        doc = serde_json::json!({ key: doc });
    }
    doc.to_string() // JSON is YAML
}

#[test]
fn schema_is_json_with_the_bounds_validate_checks() {
    let text = linkmodel::config::json_schema();
    let root: serde_json::Value = serde_json::from_str(&text).unwrap();
    let dir = &root["$defs"]["DirectionConfig"]["properties"];
    assert_eq!(dir["roll_off"]["maximum"], 1.0);
    let acm = &root["$defs"]["AcmConfig"]["properties"];
    assert_eq!(acm["margin_db"]["maximum"], 20.0);
    assert_eq!(acm["margin_db"]["x-unit"], "dB");
    let mut leaves = Vec::new();
    for top in ["telemetry", "forward", "return"] {
        bounded_leaves(
            &root,
            &root["properties"][top],
            &format!(".{top}"),
            &mut leaves,
        );
    }
    assert!(leaves.len() > 40, "{} bounded fields", leaves.len());
    // delay_file needs a real file next to its bound; its refresh period is checked elsewhere.
    for (path, integer, lo, hi) in leaves.into_iter().filter(|l| !l.0.contains("delay_file")) {
        let field = path.trim_start_matches('.');
        // Just outside each bound (integers: one past; floats: a relative step).
        let step = |b: f64| {
            if integer {
                1.0
            } else {
                b.abs().max(1.0) * 1e-6
            }
        };
        let mut outside = vec![hi + step(hi)];
        if !(integer && lo == 0.0) {
            outside.push(lo - step(lo));
        }
        for v in outside {
            let value = if integer {
                serde_json::json!(v as i64)
            } else {
                serde_json::json!(v)
            };
            let yaml = with_value(&path, value);
            let e = EmulatorConfig::from_yaml_str(&yaml)
                .expect_err(&format!("{yaml} should be refused"));
            assert!(e.to_string().contains(field), "{yaml}: {e}");
        }
        let inside = if integer {
            serde_json::json!(hi as i64)
        } else {
            serde_json::json!(hi)
        };
        if let Err(e) = EmulatorConfig::from_yaml_str(&with_value(&path, inside)) {
            // Cross-field rules (kind fixed for rate_bps, a peak of slope x period) may refuse a
            // value within bounds, but never for being out of range.
            assert!(
                !e.to_string().contains("outside the allowed range"),
                "{path}={hi}: {e}"
            );
        }
    }
}
