//! Loading and validation of the link's configuration (the emulator's own sections, the whole
//! file and its JSON Schema are tested in emulator/src/settings.rs).

use std::path::{Path, PathBuf};

use linkmodel::config::{BitErrorModel, LinkKind};
use linkmodel::{ConfigError, Dir, Direction, LinkConfig};

mod common;
use common::err;

/// The error the configuration file `path` is refused with.
fn file_err(path: &Path) -> String {
    LinkConfig::from_yaml_file(path).unwrap_err().to_string()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("linkmodel-cfg-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn empty_config_has_geo_defaults() {
    let c = LinkConfig::from_yaml_str("").unwrap();
    assert_eq!(c.seed, 1);
    assert_eq!(c.forward.kind, Some(LinkKind::Dvbs2));
    assert_eq!(c.return_.kind, Some(LinkKind::Rcs2));
    assert_eq!(c.forward.symbol_rate_baud, Some(40e6));
    assert_eq!(c.forward.uplink.attenuation.tick_ms, Some(1000));
    // The resolved configuration serializes.
    let j = serde_json::to_value(&c).unwrap();
    assert_eq!(j["return"]["kind"], "rcs2");
    assert_eq!(j["forward"]["acm"]["mode"], "acm");
}

#[test]
fn field_errors_name_path_value_and_limit() {
    // A row gives the whole message or its start.
    for (yaml, want) in [
        (
            "forward: {acm: {margin_db: 50}}",
            "forward.acm.margin_db: value 50 is outside the allowed range [0, 20] dB",
        ),
        (
            "return: {queue: {limit_packets: 0}}",
            "return.queue.limit_packets: value 0 is outside the allowed range [1, 10000000] packets",
        ),
        (
            "forward: {downlink: {attenuation: {type: on_off, amplitude_db: 200}}}",
            "forward.downlink.attenuation.amplitude_db: value 200 is outside the allowed range [0, 100] dB",
        ),
        ("forward: {acm: {mode: ccm}}", "forward.acm.modcod: required"),
        (
            "forward: {acm: {mode: ccm, modcod: 29}}",
            "forward.acm.modcod: MODCOD id 29 is not in the table",
        ),
        (
            "forward: {frame: short, acm: {mode: ccm, modcod: 28}}",
            "forward.acm.modcod: MODCOD id 28 (32APSK 9/10) does not exist",
        ),
        (
            "forward: {acm: {mode: vcm, vcm_modcods: [28, 99]}}",
            "forward.acm.vcm_modcods[1]: MODCOD id 99",
        ),
        ("return: {kind: fixed}", "return.rate_bps: required"),
        ("forward: {gse_label_bytes: 4}", "forward.gse_label_bytes: value 4"),
        (
            "forward: {delay_ms: 10, delay_file: {path: x}}",
            "forward.delay_file:",
        ),
        (
            "forward: {uplink: {sky_noise: {enabled: true}}}",
            "forward.uplink.sky_noise.enabled",
        ),
        (
            "forward: {bit_errors: {model: pattern}}",
            "forward.bit_errors.pattern_file: required",
        ),
        (
            "return: {oracle_eten: {map_pin: eten_oracle}}",
            "return.oracle_eten.map_pin: eten_oracle is not an absolute path",
        ),
    ] {
        let e = err(yaml);
        assert!(e.starts_with(want), "{yaml}: {e}");
    }
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
    let e = LinkConfig::from_yaml_file(&d.join("link.yaml")).unwrap_err();
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
    let c = LinkConfig::from_yaml_file(&d.join("link.yaml")).unwrap();
    assert_eq!(
        c.forward.downlink.attenuation.file.as_deref(),
        Some(d.join("traces/rain.csv").as_path())
    );
    // A missing file names itself.
    std::fs::remove_file(d.join("traces/rain.csv")).unwrap();
    let e = file_err(&d.join("link.yaml"));
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
    let c = LinkConfig::from_yaml_file(&d.join("l.yaml")).unwrap();
    assert_eq!(c.forward.bit_errors.model, BitErrorModel::Pattern);
    let dir = Direction::new(&c, Dir::Forward).unwrap();
    let s = dir.status(0);
    assert_eq!(s.modcod.unwrap().id, 2);
    std::fs::write(d.join("per.csv"), "2,7.5,0.5\n2,7.9,2\n").unwrap();
    let e = file_err(&d.join("l.yaml"));
    assert!(e.ends_with("per.csv:2: per 2 is outside [0, 1]"), "{e}");
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn geometry_gives_the_delay() {
    let c = LinkConfig::from_yaml_str(
        "geometry: {satellite_longitude_deg: 13, gateway: {lat_deg: 43.6, lon_deg: 1.44}, terminal: {lat_deg: 48.86, lon_deg: 2.35, alt_m: 35}}",
    )
    .unwrap();
    let f = Direction::new(&c, Dir::Forward).unwrap().status(0).delay_ms;
    let r = Direction::new(&c, Dir::Return).unwrap().status(0).delay_ms;
    assert!(f > 250.0 && f < 258.0, "{f}");
    assert!((f - r).abs() < 1e-9);
}

#[test]
fn numbers_in_exponent_form() {
    let c = LinkConfig::from_yaml_str(
        "forward: {symbol_rate_baud: 40e6}\nreturn: {kind: fixed, rate_bps: 2e6}",
    )
    .unwrap();
    assert_eq!(c.forward.symbol_rate_baud, Some(40e6));
    assert_eq!(c.return_.rate_bps, Some(2e6));
}
