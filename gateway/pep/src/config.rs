//! The PEP's configuration: one YAML (or JSON) file; pep/README.md documents every field.
//!
//! Unknown fields are errors; every number has bounds, and an error names the field and the bound.

use binkit::bounds::check_range;
use schemars::JsonSchema;
use serde::Deserialize;
use std::net::SocketAddr;
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

/// How the satellite leg's sockets are set up. Terrestrial legs keep the kernel's defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Satellite {
    /// TCP_CONGESTION of satellite-leg sockets: any kernel module or registered BPF struct_ops name.
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[A-Za-z0-9_]+$"))]
    pub congestion_control: String,
    /// SO_SNDBUF and SO_RCVBUF (forced past the sysctl maxima) of satellite-leg sockets, bytes.
    /// Size for the GEO bandwidth-delay product: rate x RTT, e.g. 20 Mbit/s x 0.6 s = 1.5 MB; the
    /// kernel doubles the value for its bookkeeping. 0 = leave the kernel's autotuning.
    #[schemars(range(max = 1_073_741_823), extend("x-unit" = "bytes"))]
    pub buffer_bytes: u64,
    /// Initial congestion and receive window, packets: the `initcwnd`/`initrwnd` metric of every
    /// route out of `intercept.satellite_interface`, set at start and restored at exit (Linux has no
    /// socket option for the initial window). 0 = leave the routes alone.
    #[schemars(range(max = 1000))]
    pub initial_window_packets: u32,
}

impl Default for Satellite {
    fn default() -> Self {
        Satellite {
            congestion_control: "cubic".into(),
            buffer_bytes: 4 << 20,
            initial_window_packets: 10,
        }
    }
}

/// HTTP endpoint for counters and connection records.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Http {
    /// Listen address (inside the edge's namespace); None = no endpoint.
    pub listen: Option<SocketAddr>,
}

impl Default for Http {
    fn default() -> Self {
        Http {
            listen: Some("127.0.0.1:8792".parse().expect("literal address")),
        }
    }
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Which edge (label).
    pub edge: Edge,
    /// Interception.
    #[serde(default)]
    pub intercept: Intercept,
    /// Satellite-leg socket settings.
    #[serde(default)]
    pub satellite: Satellite,
    /// Connections relayed at once; one more is refused with a reset and counted.
    #[serde(default = "max_connections")]
    #[schemars(range(min = 1, max = 1_000_000))]
    pub max_connections: u32,
    /// A connection with no byte relayed in either direction for this long is reset on both legs.
    #[serde(default = "idle_timeout_s")]
    #[schemars(range(min = 0.1, max = 86400.0), extend("x-unit" = "s"))]
    pub idle_timeout_s: f64,
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
    /// HTTP endpoint.
    #[serde(default)]
    pub http: Http,
}

fn max_connections() -> u32 {
    2048
}
fn idle_timeout_s() -> f64 {
    300.0
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
        self.satellite.validate()?;
        self.validate_relay()
    }

    /// The top-level numbers: how many connections, how long, how much is buffered and logged.
    fn validate_relay(&self) -> Result<(), String> {
        let max = self.max_connections as f64;
        check_range("max_connections", max, 1.0, 1_000_000.0, "")?;
        check_range("idle_timeout_s", self.idle_timeout_s, 0.1, 86400.0, " s")?;
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

impl Satellite {
    fn validate(&self) -> Result<(), String> {
        let cc = &self.congestion_control;
        if cc.is_empty()
            || cc.len() > 15
            || !cc.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "satellite.congestion_control: {cc:?} is not a TCP congestion control name (1-15 characters of [A-Za-z0-9_])"
            ));
        }
        let b = self.buffer_bytes as f64;
        if b != 0.0 {
            check_range(
                "satellite.buffer_bytes",
                b,
                65536.0,
                1073741823.0,
                " bytes (or 0)",
            )?;
        }
        let iw = self.initial_window_packets as f64;
        check_range(
            "satellite.initial_window_packets",
            iw,
            0.0,
            1000.0,
            " packets",
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
        assert_eq!(c.satellite.congestion_control, "cubic");
        assert_eq!(c.http.listen.unwrap().port(), 8792);
    }

    #[test]
    fn errors_name_the_field_and_bound() {
        let e = Config::from_yaml_str("edge: st\nidle_timeout_s: 0").unwrap_err();
        assert!(
            e.contains("idle_timeout_s") && e.contains("[0.1, 86400]"),
            "{e}"
        );
        let e =
            Config::from_yaml_str("edge: st\nsatellite: {congestion_control: 'a b'}").unwrap_err();
        assert!(e.contains("satellite.congestion_control"), "{e}");
        let e = Config::from_yaml_str("edge: st\nsatellite: {buffer_bytes: 10}").unwrap_err();
        assert!(e.contains("satellite.buffer_bytes"), "{e}");
        let e = Config::from_yaml_str("edge: st\nbogus: 1").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn schema_carries_the_bounds_validate_checks() {
        let s: serde_json::Value =
            serde_json::from_str(&binkit::schema::pretty::<Config>()).unwrap();
        let idle = &s["properties"]["idle_timeout_s"];
        assert_eq!(
            (idle["minimum"].as_f64(), idle["maximum"].as_f64()),
            (Some(0.1), Some(86400.0))
        );
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], serde_json::json!(["edge"]));
    }
}
