//! The emulator's configuration file (one YAML file, documented in emulator/CONFIG.md): the
//! binary's own settings (its two ports, the telemetry stream, the control endpoint) next to the
//! link's sections (`seed`, `geometry`, `forward`, `return`: `linkmodel::config`), loading with
//! path resolution and validation, and the file's JSON Schema (`--print-schema config`).
//!
//! The link's sections are resolved and validated by `linkmodel::load`, after the binary's own;
//! [`EmulatorConfig::link`] is what the link model is built from.

use std::path::{Path, PathBuf};

use linkmodel::config::{check_range, GeometryConfig};
use linkmodel::load::{base_dir_of, parse_yaml};
use linkmodel::{ConfigError, Dir, DirectionConfig, LinkConfig};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The whole emulator configuration: one YAML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmulatorConfig {
    /// Seed of every random choice of the run (erasures, bit errors, reordering), per direction.
    pub seed: u64,
    pub ports: PortsConfig,
    pub telemetry: TelemetryConfig,
    pub control: ControlConfig,
    /// Optional GEO geometry; gives the propagation delay of a direction without `delay_ms` /
    /// `delay_file`.
    pub geometry: Option<GeometryConfig>,
    /// Gateway -> terminal (DVB-S2 by default).
    pub forward: DirectionConfig,
    /// Terminal -> gateway (DVB-RCS2 by default).
    #[serde(rename = "return")]
    pub return_: DirectionConfig,
    /// Directory relative file paths were resolved against (the config file's directory).
    #[serde(skip)]
    #[schemars(skip)]
    pub base_dir: PathBuf,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        let link = LinkConfig::default();
        EmulatorConfig {
            seed: link.seed,
            ports: PortsConfig::default(),
            telemetry: TelemetryConfig::default(),
            control: ControlConfig::default(),
            geometry: link.geometry,
            forward: link.forward,
            return_: link.return_,
            base_dir: link.base_dir,
        }
    }
}

/// The two ports of the emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PortsConfig {
    /// Gateway side (forward packets are read here, return packets written here).
    pub gw: PortConfig,
    /// Terminal side.
    pub st: PortConfig,
}

impl Default for PortsConfig {
    fn default() -> Self {
        PortsConfig {
            gw: PortConfig {
                kind: PortKind::AfPacket,
                interface: "emu-gw".into(),
                queue: None,
                xdp_mode: None,
            },
            st: PortConfig {
                kind: PortKind::AfPacket,
                interface: "emu-st".into(),
                queue: None,
                xdp_mode: None,
            },
        }
    }
}

/// How a port is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PortKind {
    /// An existing interface (veth end, NIC) opened with a packet socket.
    AfPacket,
    /// A TAP device (created if missing).
    Tap,
    /// One receive queue of an existing interface through an AF_XDP socket.
    AfXdp,
}

/// How an `af_xdp` port's socket is bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum XdpMode {
    /// Zero-copy where the driver supports it, copy mode otherwise.
    Auto,
    /// Zero-copy or refuse to start.
    Zerocopy,
    /// Copy mode (any driver).
    Copy,
}

/// One port: `{kind: af_packet|tap|af_xdp, interface: NAME}`, and for `af_xdp`
/// `queue: N` (default 0) and `xdp_mode: auto|zerocopy|copy` (default auto).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    #[serde(default = "default_port_kind")]
    pub kind: PortKind,
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[^/ \x00]+$"))]
    pub interface: String,
    /// `af_xdp` only: the receive queue the port serves (one queue per port), at most 1023
    /// (checked by `validate`, as the interface must be given next to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<u32>,
    /// `af_xdp` only: zero-copy or copy-mode binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xdp_mode: Option<XdpMode>,
}

fn default_port_kind() -> PortKind {
    PortKind::AfPacket
}

/// Which per-packet events the telemetry stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventLevel {
    None,
    Losses,
    All,
}

/// Telemetry stream (Unix stream socket, newline-delimited JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    pub socket: PathBuf,
    #[schemars(range(min = 10, max = 60000), extend("x-unit" = "ms"))]
    pub period_ms: u64,
    pub events: EventLevel,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            socket: PathBuf::from("/run/satlab/emulator-telemetry.sock"),
            period_ms: 100,
            events: EventLevel::Losses,
        }
    }
}

/// Control HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControlConfig {
    pub listen: String,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            listen: "127.0.0.1:8781".into(),
        }
    }
}

/// The configuration's JSON Schema (draft 2020-12), pretty-printed: doc comments are the
/// descriptions, `minimum`/`maximum` the bounds `validate()` checks (kept equal by hand; a test
/// below and the API's drift test compare them), `x-unit` the unit and `x-when` the values of a
/// sibling kind field (`type`, `model`, `mode`, `kind`) under which a field is used.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(EmulatorConfig);
    serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes")
}

impl EmulatorConfig {
    /// Reads, parses and validates a configuration file; relative paths in it resolve against the
    /// file's directory.
    pub fn from_yaml_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        Self::parse(&text, &path.display().to_string(), base_dir_of(path))
    }

    /// Parses and validates YAML text; relative paths resolve against the current directory.
    #[cfg(test)]
    pub fn from_yaml_str(s: &str) -> Result<Self, ConfigError> {
        Self::parse(s, "<config>", PathBuf::from("."))
    }

    fn parse(text: &str, name: &str, base: PathBuf) -> Result<Self, ConfigError> {
        let mut cfg: EmulatorConfig = parse_yaml(text, name)?;
        cfg.base_dir = base;
        cfg.resolve();
        cfg.validate()?;
        Ok(cfg)
    }

    /// Fills per-direction defaults and makes relative paths absolute-ish (joined to base_dir).
    fn resolve(&mut self) {
        let base = self.base_dir.clone();
        if self.telemetry.socket.is_relative() {
            self.telemetry.socket = base.join(&self.telemetry.socket);
        }
        self.forward.resolve(Dir::Forward, &base);
        self.return_.resolve(Dir::Return, &base);
    }

    /// The link's sections, what the link model is built from.
    pub fn link(&self) -> LinkConfig {
        LinkConfig {
            seed: self.seed,
            geometry: self.geometry.clone(),
            forward: self.forward.clone(),
            return_: self.return_.clone(),
            base_dir: self.base_dir.clone(),
        }
    }

    /// Checks every bound and loads every referenced file once (errors name file and line): the
    /// binary's settings, then the link's sections.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, p) in [("ports.gw", &self.ports.gw), ("ports.st", &self.ports.st)] {
            let n = p.interface.len();
            if n == 0 || n > 15 || p.interface.contains(['/', ' ', '\0']) {
                return Err(ConfigError::field(
                    format!("{name}.interface"),
                    format!(
                        "{:?} is not a valid interface name (1 to 15 characters, no '/' or spaces)",
                        p.interface
                    ),
                ));
            }
            if p.kind != PortKind::AfXdp {
                for (field, given) in [
                    ("queue", p.queue.is_some()),
                    ("xdp_mode", p.xdp_mode.is_some()),
                ] {
                    if given {
                        return Err(ConfigError::field(
                            format!("{name}.{field}"),
                            "is only for kind af_xdp",
                        ));
                    }
                }
            }
            check_range(&format!("{name}.queue"), p.queue.unwrap_or(0), 0, 1023, "")?;
        }
        if self.ports.gw.interface == self.ports.st.interface {
            return Err(ConfigError::field(
                "ports.st.interface",
                "must differ from ports.gw.interface",
            ));
        }
        check_range(
            "telemetry.period_ms",
            self.telemetry.period_ms,
            10,
            60_000,
            " ms",
        )?;
        if self.control.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::field(
                "control.listen",
                format!(
                    "{:?} is not an address:port such as 127.0.0.1:8781",
                    self.control.listen
                ),
            ));
        }
        let link = self.link();
        link.validate()?;
        // The decoder's ceiling (kind dvbs2_waveform): the emulator knows the decoder.
        crate::waveform_channel::check(&link)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkmodel::Direction;

    fn err(yaml: &str) -> String {
        EmulatorConfig::from_yaml_str(yaml).unwrap_err().to_string()
    }

    #[test]
    fn empty_config_has_geo_defaults() {
        let c = EmulatorConfig::from_yaml_str("").unwrap();
        assert_eq!(c.seed, 1);
        assert_eq!(c.control.listen, "127.0.0.1:8781");
        assert_eq!(c.telemetry.period_ms, 100);
        assert_eq!(c.telemetry.events, EventLevel::Losses);
        assert_eq!(c.ports.gw.kind, PortKind::AfPacket);
        // The link's sections resolve as the link model's own (whose defaults
        // crates/linkmodel/tests/config.rs checks).
        assert_eq!(c.link(), LinkConfig::from_yaml_str("").unwrap());
        // The resolved configuration serializes (emulator --check prints it as JSON).
        let j = serde_json::to_value(&c).unwrap();
        assert_eq!(j["return"]["kind"], "rcs2");
    }

    #[test]
    fn field_errors_name_path_value_and_limit() {
        // A row gives the whole message or its start.
        for (yaml, want) in [
            (
                "telemetry: {period_ms: 1}",
                "telemetry.period_ms: value 1 is outside the allowed range [10, 60000] ms",
            ),
            ("control: {listen: localhost}", "control.listen:"),
            (
                "ports: {gw: {interface: a}, st: {interface: a}}",
                "ports.st.interface",
            ),
            (
                "ports: {gw: {interface: a, queue: 1}}",
                "ports.gw.queue: is only for kind af_xdp",
            ),
            (
                "ports: {st: {interface: a, kind: tap, xdp_mode: copy}}",
                "ports.st.xdp_mode: is only for kind af_xdp",
            ),
            (
                "ports: {gw: {interface: a, kind: af_xdp, queue: 5000}}",
                "ports.gw.queue: value 5000 is outside the allowed range [0, 1023]",
            ),
            // The link's sections are checked too (linkmodel's tests/config.rs has the rest).
            (
                "forward: {acm: {margin_db: 50}}",
                "forward.acm.margin_db: value 50 is outside the allowed range [0, 20] dB",
            ),
            ("seed: -1", "<config>: seed"),
        ] {
            let e = err(yaml);
            assert!(e.starts_with(want), "{yaml}: {e}");
        }
        let c = EmulatorConfig::from_yaml_str(
            "ports: {gw: {interface: a, kind: af_xdp, queue: 2, xdp_mode: copy}}",
        )
        .unwrap();
        assert_eq!(c.ports.gw.kind, PortKind::AfXdp);
        assert_eq!(
            (c.ports.gw.queue, c.ports.gw.xdp_mode),
            (Some(2), Some(XdpMode::Copy))
        );
    }

    #[test]
    fn example_configs_in_the_repository_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios/links");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().and_then(|x| x.to_str()) == Some("yaml") {
                let c = EmulatorConfig::from_yaml_file(&p)
                    .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                Direction::new(&c.link(), Dir::Forward).unwrap();
                Direction::new(&c.link(), Dir::Return).unwrap();
                n += 1;
            }
        }
        assert!(n >= 3, "{n} example configs");
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
        let text = json_schema();
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
                // Cross-field rules (kind fixed for rate_bps, a peak of slope x period) may refuse
                // a value within bounds, but never for being out of range.
                assert!(
                    !e.to_string().contains("outside the allowed range"),
                    "{path}={hi}: {e}"
                );
            }
        }
    }
}
