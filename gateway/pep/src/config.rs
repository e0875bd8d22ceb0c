//! The PEP's configuration: one YAML (or JSON) file; pep/README.md documents every field.
//!
//! Unknown fields are errors; every number has bounds, and an error names the field and the bound.

use binkit::bounds::check_range;
use binkit::http::{DefaultPort, Http};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;

/// Which satellite edge this PEP runs at (a label in its status and records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Edge {
    /// The gateway (hub) edge.
    Gw,
    /// The terminal edge.
    St,
}

impl Edge {
    /// `gw` or `st`.
    pub fn as_str(self) -> &'static str {
        match self {
            Edge::Gw => "gw",
            Edge::St => "st",
        }
    }
}

/// Transparent interception: which TCP the kernel hands to the PEP (TPROXY, as PEPsal does).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Intercept {
    /// Interfaces whose incoming TCP is intercepted with the accepting leg terrestrial.
    #[schemars(
        length(min = 1),
        inner(length(min = 1, max = 15), regex(pattern = r"^[A-Za-z0-9._-]+$"))
    )]
    pub terrestrial_interfaces: Vec<String>,
    /// The interface toward the satellite link; incoming TCP there is intercepted with the
    /// accepting leg on the satellite, and routes out of it get the initial window.
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[A-Za-z0-9._-]+$"))]
    pub satellite_interface: String,
    /// More interfaces whose incoming TCP counts as arriving from the satellite (e.g. the `wan`
    /// port of a satlab-gateway bump at the same edge, where the kernel also receives the link).
    #[schemars(inner(length(min = 1, max = 15), regex(pattern = r"^[A-Za-z0-9._-]+$")))]
    pub satellite_extra_interfaces: Vec<String>,
    /// TPROXY port for connections arriving from the terrestrial side.
    #[schemars(range(min = 1))]
    pub terrestrial_port: u16,
    /// TPROXY port for connections arriving from the satellite side.
    #[schemars(range(min = 1))]
    pub satellite_port: u16,
    /// Firewall mark of intercepted packets, and the policy-routing table that delivers them locally.
    #[schemars(range(min = 1))]
    pub mark: u32,
    /// Routing table number for `local 0.0.0.0/0 dev lo`.
    #[schemars(range(min = 1, max = 252))]
    pub table: u32,
    /// Install the nftables rules, the `ip rule` and the local route at start and remove them at exit.
    /// false: an operator installs equivalent rules (pep/README.md shows them).
    pub install: bool,
}

impl Default for Intercept {
    fn default() -> Self {
        Intercept {
            terrestrial_interfaces: vec!["lan".into()],
            satellite_interface: "sat0".into(),
            satellite_extra_interfaces: Vec::new(),
            terrestrial_port: 8793,
            satellite_port: 8794,
            mark: 0x5e9,
            table: 159,
            install: true,
        }
    }
}

/// The PEP's relay settings: what a scenario's `pep` section gives (api/satlab/scenario.py embeds
/// this type, generated from `--print-schema` by `make schemas`; the testbed adds only `edges`,
/// where the PEP runs). `congestion_control`, `buffer_bytes` and `initial_window_packets` set up
/// the satellite leg's sockets; terrestrial legs keep the kernel's defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
#[schemars(rename = "PepRelay")]
pub struct Settings {
    /// the satellite leg's TCP_CONGESTION: a kernel module or a registered BPF struct_ops name
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[A-Za-z0-9_]+$"))]
    pub congestion_control: String,
    /// satellite-leg SO_SNDBUF/SO_RCVBUF (forced past the sysctl maxima), bytes: 0 (the kernel's
    /// autotuning) or 65536 to 1073741823; size for the GEO bandwidth-delay product (rate x RTT,
    /// e.g. 20 Mbit/s x 0.6 s = 1.5 MB; the kernel doubles the value for its bookkeeping)
    #[schemars(
        range(max = BUFFER_BYTES_MAX),
        extend("x-minimum-unless-zero" = BUFFER_BYTES_MIN, "x-unit" = "bytes")
    )]
    pub buffer_bytes: u64,
    /// initcwnd/initrwnd of every route out of `intercept.satellite_interface`, packets, set at
    /// start and restored at exit (Linux has no socket option for the initial window); 0: the
    /// routes as they are
    #[schemars(range(max = 1000))]
    pub initial_window_packets: u32,
    /// connections relayed at once; one more is refused with a reset and counted
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_connections: u32,
    /// a connection with no byte relayed either way for this long is reset on both legs
    #[schemars(range(min = 0.1, max = 86400.0), extend("x-unit" = "s"))]
    pub idle_timeout_s: f64,
}

/// `settings.buffer_bytes`, when not 0: the schema says "0 or at least" as `x-minimum-unless-zero`
/// (an `anyOf` would generate a union of two models on the service's side, not an int).
const BUFFER_BYTES_MIN: u64 = 65536;
const BUFFER_BYTES_MAX: u64 = 1_073_741_823;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            congestion_control: "cubic".into(),
            buffer_bytes: 4 << 20,
            initial_window_packets: 10,
            max_connections: 2048,
            idle_timeout_s: 300.0,
        }
    }
}

/// The endpoint's default port (the gateway's is 8791: both can run in one namespace).
pub struct HttpPort;
impl DefaultPort for HttpPort {
    const PORT: u16 = 8792;
}

/// The whole file: what the testbed sets per edge (edge, interception, HTTP endpoint) and the
/// relay `settings`, a scenario's `pep` section as given.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "PepConfig")]
pub struct Config {
    /// Which edge (label).
    pub edge: Edge,
    /// Interception.
    #[serde(default)]
    pub intercept: Intercept,
    /// The relay settings (a scenario's `pep` section).
    #[serde(default)]
    pub settings: Settings,
    /// Time allowed for the outgoing leg's handshake.
    #[serde(default = "connect_timeout_s")]
    #[schemars(range(min = 0.1, max = 600.0), extend("x-unit" = "s"))]
    pub connect_timeout_s: f64,
    /// Capacity of each direction's splice pipe, bytes (F_SETPIPE_SZ; rounded up to pages).
    #[serde(default = "pipe_bytes")]
    #[schemars(range(min = 4096, max = 1_048_576), extend("x-unit" = "bytes"))]
    pub pipe_bytes: u32,
    /// Finished connections kept for GET /connections and the final record (oldest dropped first).
    #[serde(default = "connection_log")]
    #[schemars(range(max = 1_000_000))]
    pub connection_log: usize,
    /// HTTP endpoint (counters and connection records).
    #[serde(default)]
    pub http: Http<HttpPort>,
}

fn connect_timeout_s() -> f64 {
    30.0
}
fn pipe_bytes() -> u32 {
    1 << 18
}
fn connection_log() -> usize {
    10_000
}

impl Config {
    /// Parses and validates YAML (JSON is YAML too).
    pub fn from_yaml_str(s: &str) -> Result<Config, String> {
        let c: Config = serde_yaml::from_str(s).map_err(|e| format!("configuration: {e}"))?;
        c.validate()?;
        Ok(c)
    }

    /// Reads, parses and validates a file.
    pub fn from_yaml_file(p: &Path) -> Result<Config, String> {
        let s = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        Config::from_yaml_str(&s)
    }

    /// Checks bounds and cross-field rules, section by section in the order of the file. The
    /// fixed bounds are also in the JSON Schema (`--print-schema`, the `schemars` attributes above),
    /// kept equal by hand; cross-field rules such as the two ports differing are checked here only.
    pub fn validate(&self) -> Result<(), String> {
        self.intercept.validate()?;
        self.settings.validate()?;
        self.validate_relay()
    }

    /// The top-level numbers: the onward handshake's time, how much is buffered and logged.
    fn validate_relay(&self) -> Result<(), String> {
        check_range(
            "connect_timeout_s",
            self.connect_timeout_s,
            0.1,
            600.0,
            " s",
        )?;
        let pipe = self.pipe_bytes as f64;
        check_range("pipe_bytes", pipe, 4096.0, 1048576.0, " bytes")?;
        let log = self.connection_log as f64;
        check_range("connection_log", log, 0.0, 1_000_000.0, "")
    }
}

impl Intercept {
    fn validate(&self) -> Result<(), String> {
        if self.terrestrial_interfaces.is_empty() {
            return Err(
                "intercept.terrestrial_interfaces: at least one interface is required".into(),
            );
        }
        for name in self
            .terrestrial_interfaces
            .iter()
            .chain(&self.satellite_extra_interfaces)
            .chain([&self.satellite_interface])
        {
            if name.is_empty()
                || name.len() > 15
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(format!(
                    "intercept: interface name {name:?} is not 1-15 characters of [A-Za-z0-9._-]"
                ));
            }
        }
        let (t, s) = (self.terrestrial_port, self.satellite_port);
        if t == 0 || s == 0 || t == s {
            return Err("intercept.terrestrial_port, satellite_port: two different non-zero ports are required".into());
        }
        check_range("intercept.mark", self.mark as f64, 1.0, u32::MAX as f64, "")?;
        check_range("intercept.table", self.table as f64, 1.0, 252.0, "")
    }
}

impl Settings {
    fn validate(&self) -> Result<(), String> {
        let cc = &self.congestion_control;
        if cc.is_empty()
            || cc.len() > 15
            || !cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "settings.congestion_control: {cc:?} is not a TCP congestion control name (1-15 characters of [A-Za-z0-9_])"
            ));
        }
        if self.buffer_bytes != 0 {
            check_range(
                "settings.buffer_bytes",
                self.buffer_bytes,
                BUFFER_BYTES_MIN,
                BUFFER_BYTES_MAX,
                " bytes (or 0)",
            )?;
        }
        let iw = self.initial_window_packets;
        check_range("settings.initial_window_packets", iw, 0, 1000, " packets")?;
        let max = self.max_connections;
        check_range("settings.max_connections", max, 1, 1_000_000, "")?;
        check_range(
            "settings.idle_timeout_s",
            self.idle_timeout_s,
            0.1,
            86400.0,
            " s",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_file_takes_defaults() {
        let c = Config::from_yaml_str("edge: gw").unwrap();
        assert_eq!(c.intercept.satellite_interface, "sat0");
        assert_eq!(c.settings.congestion_control, "cubic");
        assert_eq!(c.settings.max_connections, 2048);
        assert_eq!(c.http.listen.unwrap().port(), 8792);
    }

    #[test]
    fn errors_name_the_field_and_bound() {
        let e = Config::from_yaml_str("edge: st\nsettings: {idle_timeout_s: 0}").unwrap_err();
        assert!(
            e.contains("settings.idle_timeout_s") && e.contains("[0.1, 86400]"),
            "{e}"
        );
        let e =
            Config::from_yaml_str("edge: st\nsettings: {congestion_control: 'a b'}").unwrap_err();
        assert!(e.contains("settings.congestion_control"), "{e}");
        let e = Config::from_yaml_str("edge: st\nsettings: {buffer_bytes: 10}").unwrap_err();
        assert!(e.contains("settings.buffer_bytes"), "{e}");
        let e = Config::from_yaml_str("edge: st\nconnect_timeout_s: 0").unwrap_err();
        assert!(e.contains("connect_timeout_s"), "{e}");
        let e = Config::from_yaml_str("edge: st\nbogus: 1").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn schema_carries_the_bounds_validate_checks() {
        let s: serde_json::Value =
            serde_json::from_str(&binkit::schema::pretty::<Config>()).unwrap();
        let idle = &s["$defs"]["PepRelay"]["properties"]["idle_timeout_s"];
        assert_eq!(
            (idle["minimum"].as_f64(), idle["maximum"].as_f64()),
            (Some(0.1), Some(86400.0))
        );
        let buffer = &s["$defs"]["PepRelay"]["properties"]["buffer_bytes"];
        assert_eq!(buffer["x-minimum-unless-zero"], BUFFER_BYTES_MIN);
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], serde_json::json!(["edge"]));
    }
}
