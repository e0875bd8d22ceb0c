//! The gateway's configuration: one YAML file (gateway/README.md documents every field).
//!
//! Unknown fields are errors; every number has bounds, and an error names the field and the bound.

use binkit::bounds::check_range;
use binkit::http::{DefaultPort, Http};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Which satellite edge this gateway is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The gateway (hub) edge: its egress feeds the forward link, its ingress is the return link.
    Gw,
    /// The terminal edge: its egress feeds the return link, its ingress is the forward link.
    St,
}

impl Role {
    /// `gw` or `st`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Gw => "gw",
            Role::St => "st",
        }
    }
    /// Emulator direction name of the link this edge transmits on.
    pub fn egress_direction(self) -> &'static str {
        match self {
            Role::Gw => "forward",
            Role::St => "return",
        }
    }
    /// Emulator direction name of the link this edge receives from.
    pub fn ingress_direction(self) -> &'static str {
        match self {
            Role::Gw => "return",
            Role::St => "forward",
        }
    }
}

/// Interfaces.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ports {
    /// Toward the local router (the peer of the router's satellite-side veth / NIC).
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[^/ ]+$"))]
    pub inside: String,
    /// Toward the satellite link (the emulator's port or the modem).
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[^/ ]+$"))]
    pub outside: String,
}

/// Link telemetry source.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Telemetry {
    /// Unix stream socket of the emulator's telemetry (docs/emulator-contract.md); None = no telemetry.
    pub socket: Option<PathBuf>,
    /// Delay between reconnection attempts, ms.
    #[schemars(range(min = 10, max = 60000), extend("x-unit" = "ms"))]
    pub reconnect_ms: u64,
}

impl Default for Telemetry {
    fn default() -> Self {
        Telemetry {
            socket: None,
            reconnect_ms: 500,
        }
    }
}

/// AQM discipline of the egress queue (Serialize: the schema then carries its default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AqmKind {
    /// Drop on arrival when a limit would be exceeded.
    DropTail,
    /// RED (Floyd & Jacobson 1993), early drops.
    Red,
    /// RED marking CE on ECN-capable packets instead of early drops.
    RedEcn,
}

/// Egress queue and AQM.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Aqm {
    /// Discipline.
    pub kind: AqmKind,
    /// Hard limit, packets.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub limit_packets: u64,
    /// Hard limit, bytes.
    #[schemars(range(min = 64, max = 17_179_869_184u64))]
    pub limit_bytes: u64,
    /// RED minimum threshold (average queue, packets).
    #[schemars(range(min = 0.0, max = 1e7))]
    pub min_th_packets: f64,
    /// RED maximum threshold (average queue, packets).
    #[schemars(range(min = 0.0, max = 1e7))]
    pub max_th_packets: f64,
    /// RED mark/drop probability at max_th.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub max_p: f64,
    /// RED averaging weight.
    #[schemars(range(min = 1e-6, max = 1.0))]
    pub w_q: f64,
}

impl Default for Aqm {
    fn default() -> Self {
        Aqm {
            kind: AqmKind::DropTail,
            limit_packets: 1000,
            limit_bytes: 1_500_000,
            min_th_packets: 5.0,
            max_th_packets: 15.0,
            max_p: 0.1,
            w_q: 0.002,
        }
    }
}

/// Egress pacing.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Egress {
    /// Fixed pacing rate, bit/s (overrides telemetry).
    #[schemars(range(min = 1e3, max = 1e11), extend("x-unit" = "bit/s"))]
    pub rate_bps: Option<f64>,
    /// Pace at this fraction of the link's current useful rate (egress pacing rate / useful rate).
    #[schemars(range(min = 0.1, max = 1.0))]
    pub rate_factor: f64,
    /// Rate before telemetry arrives; None = forward at line rate until then.
    #[schemars(range(min = 1e3, max = 1e11), extend("x-unit" = "bit/s"))]
    pub fallback_rate_bps: Option<f64>,
    /// Bytes added to every frame when pacing (the link's encapsulation; GSE complete packet with a
    /// 3-byte label: 7).
    #[schemars(range(min = 0, max = 256), extend("x-unit" = "bytes"))]
    pub overhead_bytes: u32,
    /// Queue and AQM.
    pub aqm: Aqm,
}

impl Default for Egress {
    fn default() -> Self {
        Egress {
            rate_bps: None,
            rate_factor: 0.97,
            fallback_rate_bps: None,
            overhead_bytes: 7,
            aqm: Aqm::default(),
        }
    }
}

/// ETEN notifier.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Eten {
    /// Send BETEN notices for corrupted (and erased) packets.
    pub enabled: bool,
    /// Source address of the notices (this edge router's address).
    pub source_ip: Option<Ipv4Addr>,
    /// Notify erasures too (not only corruption).
    pub notify_erased: bool,
    /// HMAC-SHA256 key, hex; None = no MAC.
    #[schemars(length(min = 32, max = 128), regex(pattern = r"^([0-9a-fA-F]{2})+$"))]
    pub hmac_key_hex: Option<String>,
    /// Token-bucket rate limit, notices per second.
    #[schemars(range(min = 0.0, max = 1e7))]
    pub rate_limit_per_s: f64,
    /// Token-bucket depth.
    #[schemars(range(min = 1.0, max = 1e7))]
    pub burst: f64,
    /// Ethernet source of notices; None = learned from forwarded frames.
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$"))]
    pub src_mac: Option<String>,
    /// Ethernet destination of notices; None = learned.
    #[schemars(regex(pattern = r"^[0-9a-fA-F]{1,2}(:[0-9a-fA-F]{1,2}){5}$"))]
    pub dst_mac: Option<String>,
}

impl Default for Eten {
    fn default() -> Self {
        Eten {
            enabled: false,
            source_ip: None,
            notify_erased: true,
            hmac_key_hex: None,
            rate_limit_per_s: 1000.0,
            burst: 100.0,
            src_mac: None,
            dst_mac: None,
        }
    }
}

/// CETEN statistics and stamping.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Ceten {
    /// Stamp the CETEN option's forward fields.
    pub enabled: bool,
    /// EWMA weight of the newest packet in the per-link survival estimates (the ETEN report's
    /// 0.5 forgets a corruption within about ten packets; smaller values remember longer).
    #[schemars(range(min = 1e-6, max = 1.0))]
    pub alpha: f64,
    /// Reflect forward values into the reverse fields of the local hosts' ACKs (receiver proxy).
    pub reflect: bool,
    /// Flows remembered for reflection.
    #[schemars(range(min = 1, max = 10_000_000))]
    pub max_flows: usize,
}

impl Default for Ceten {
    fn default() -> Self {
        Ceten {
            enabled: false,
            alpha: 0.5,
            reflect: false,
            max_flows: 65536,
        }
    }
}

/// IP-ERN router (XCP laws).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Ern {
    /// Compute and apply feedback: the IP-ERN router (XCP laws on ERN traffic).
    pub enabled: bool,
    /// ERN-over-TCP ports (either port of a segment); empty = any port.
    #[schemars(length(max = ERN_PORTS_MAX))]
    pub ports: Vec<u16>,
    /// Efficiency controller gain on spare bandwidth.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub alpha: f64,
    /// Efficiency controller gain on the persistent queue.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub beta: f64,
    /// Fairness controller shuffling fraction.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub gamma: f64,
    /// Capacity = this fraction of the pacing rate.
    #[schemars(range(min = 0.1, max = 2.0))]
    pub capacity_factor: f64,
    /// Control interval before any RTT is known, ms.
    #[schemars(extend("x-unit" = "ms"))]
    pub initial_interval_ms: f64,
    /// Lower bound of the control interval, ms.
    #[schemars(range(min = 1.0, max = 60000.0), extend("x-unit" = "ms"))]
    pub min_interval_ms: f64,
    /// Upper bound of the control interval, ms.
    #[schemars(range(max = 60000.0), extend("x-unit" = "ms"))]
    pub max_interval_ms: f64,
}

impl Default for Ern {
    fn default() -> Self {
        Ern {
            enabled: false,
            ports: Vec::new(),
            alpha: 0.4,
            beta: 0.226,
            gamma: 0.1,
            capacity_factor: 1.0,
            initial_interval_ms: 600.0,
            min_interval_ms: 10.0,
            max_interval_ms: 5000.0,
        }
    }
}

/// The metrics/status endpoint's default port (the PEP's is 8792: both can run in one namespace).
pub struct HttpPort;
impl DefaultPort for HttpPort {
    const PORT: u16 = 8791;
}

/// The whole file.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Which edge.
    pub role: Role,
    /// Interfaces.
    pub ports: Ports,
    /// Seed of the AQM's random draws.
    #[serde(default = "one")]
    pub seed: u64,
    /// Telemetry.
    #[serde(default)]
    pub telemetry: Telemetry,
    /// Egress queue, pacing, AQM.
    #[serde(default)]
    pub egress: Egress,
    /// ETEN notifier.
    #[serde(default)]
    pub eten: Eten,
    /// CETEN.
    #[serde(default)]
    pub ceten: Ceten,
    /// IP-ERN.
    #[serde(default)]
    pub ern: Ern,
    /// HTTP endpoint (metrics and status).
    #[serde(default)]
    pub http: Http<HttpPort>,
}

fn one() -> u64 {
    1
}

/// Parses a MAC address `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for (i, part) in s.split(':').enumerate() {
        if i >= 6 {
            return None;
        }
        out[i] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// Parses a hex string.
pub fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Config {
    /// Parses and validates a YAML document.
    pub fn from_yaml_str(s: &str) -> Result<Config, String> {
        let c: Config = serde_yaml::from_str(s).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    /// Reads, parses and validates a file.
    pub fn from_yaml_file(p: &Path) -> Result<Config, String> {
        let s = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        Self::from_yaml_str(&s).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Checks bounds and cross-field rules, section by section in the order of the file. The
    /// fixed bounds are also in the JSON Schema (`--print-schema`, the `schemars` attributes above),
    /// kept equal by hand; cross-field rules such as max_th > min_th are checked here only.
    pub fn validate(&self) -> Result<(), String> {
        self.ports.validate()?;
        self.telemetry.validate()?;
        self.egress.validate()?;
        self.eten.validate()?;
        self.ceten.validate()?;
        self.ern.validate()
    }
}

impl Ports {
    fn validate(&self) -> Result<(), String> {
        for (f, n) in [
            ("ports.inside", &self.inside),
            ("ports.outside", &self.outside),
        ] {
            if n.is_empty() || n.len() > 15 || n.contains('/') || n.contains(' ') {
                return Err(format!(
                    "{f}: '{n}' is not an interface name (1-15 chars, no '/' or space)"
                ));
            }
        }
        if self.inside == self.outside {
            return Err("ports.outside: must differ from ports.inside".into());
        }
        Ok(())
    }
}

impl Telemetry {
    fn validate(&self) -> Result<(), String> {
        let ms = self.reconnect_ms as f64;
        check_range("telemetry.reconnect_ms", ms, 10.0, 60000.0, " ms")
    }
}

impl Egress {
    fn validate(&self) -> Result<(), String> {
        for (f, r) in [
            ("egress.rate_bps", self.rate_bps),
            ("egress.fallback_rate_bps", self.fallback_rate_bps),
        ] {
            if let Some(r) = r {
                check_range(f, r, 1e3, 1e11, " bit/s")?;
            }
        }
        check_range("egress.rate_factor", self.rate_factor, 0.1, 1.0, "")?;
        let overhead = f64::from(self.overhead_bytes);
        check_range("egress.overhead_bytes", overhead, 0.0, 256.0, " bytes")?;
        self.aqm.validate()
    }
}

impl Aqm {
    fn validate(&self) -> Result<(), String> {
        let (packets, bytes) = (self.limit_packets as f64, self.limit_bytes as f64);
        check_range("egress.aqm.limit_packets", packets, 1.0, 1e7, " packets")?;
        check_range(
            "egress.aqm.limit_bytes",
            bytes,
            64.0,
            17179869184.0,
            " bytes",
        )?;
        for (f, th) in [
            ("egress.aqm.min_th_packets", self.min_th_packets),
            ("egress.aqm.max_th_packets", self.max_th_packets),
        ] {
            check_range(f, th, 0.0, 1e7, " packets")?;
        }
        if self.max_th_packets <= self.min_th_packets {
            return Err(format!(
                "egress.aqm.max_th_packets: value {} must be greater than min_th_packets ({})",
                self.max_th_packets, self.min_th_packets
            ));
        }
        check_range("egress.aqm.max_p", self.max_p, 0.0, 1.0, "")?;
        check_range("egress.aqm.w_q", self.w_q, 1e-6, 1.0, "")
    }
}

impl Eten {
    fn validate(&self) -> Result<(), String> {
        if self.enabled && self.source_ip.is_none() {
            return Err("eten.source_ip: required when eten.enabled is true".into());
        }
        let rate = self.rate_limit_per_s;
        check_range("eten.rate_limit_per_s", rate, 0.0, 1e7, " notices/s")?;
        check_range("eten.burst", self.burst, 1.0, 1e7, " notices")?;
        if let Some(k) = &self.hmac_key_hex {
            match parse_hex(k) {
                Some(b) if (16..=64).contains(&b.len()) => {}
                _ => return Err("eten.hmac_key_hex: must be 16 to 64 bytes in hex".into()),
            }
        }
        for (f, m) in [
            ("eten.src_mac", &self.src_mac),
            ("eten.dst_mac", &self.dst_mac),
        ] {
            if let Some(m) = m {
                if parse_mac(m).is_none() {
                    return Err(format!(
                        "{f}: '{m}' is not a MAC address (aa:bb:cc:dd:ee:ff)"
                    ));
                }
            }
        }
        Ok(())
    }
}

impl Ceten {
    fn validate(&self) -> Result<(), String> {
        check_range("ceten.alpha", self.alpha, 1e-6, 1.0, "")?;
        let flows = self.max_flows as f64;
        check_range("ceten.max_flows", flows, 1.0, 1e7, " flows")
    }
}

/// Most `ern.ports` (each segment is matched against the list).
const ERN_PORTS_MAX: usize = 64;

impl Ern {
    fn validate(&self) -> Result<(), String> {
        let ports = self.ports.len();
        check_range("ern.ports (how many)", ports, 0, ERN_PORTS_MAX, " ports")?;
        for (f, gain) in [
            ("ern.alpha", self.alpha),
            ("ern.beta", self.beta),
            ("ern.gamma", self.gamma),
        ] {
            check_range(f, gain, 0.0, 1.0, "")?;
        }
        check_range("ern.capacity_factor", self.capacity_factor, 0.1, 2.0, "")?;
        // The interval bounds nest: min in [1, 60000], max in [min, 60000], initial in [min, max].
        let (min, max) = (self.min_interval_ms, self.max_interval_ms);
        check_range("ern.min_interval_ms", min, 1.0, 60000.0, " ms")?;
        check_range("ern.max_interval_ms", max, min, 60000.0, " ms")?;
        check_range(
            "ern.initial_interval_ms",
            self.initial_interval_ms,
            min,
            max,
            " ms",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_and_defaults() {
        let c = Config::from_yaml_str("role: st\nports: {inside: stx, outside: wan}\n").unwrap();
        assert_eq!(c.role, Role::St);
        assert_eq!(c.egress.aqm.kind, AqmKind::DropTail);
        assert_eq!(c.ceten.alpha, 0.5);
        assert_eq!(c.ern.beta, 0.226);
        assert_eq!(c.role.ingress_direction(), "forward");
        // The shared `http` section with the gateway's own default port (the PEP's is 8792).
        assert_eq!(c.http.listen.unwrap().port(), 8791);
    }

    #[test]
    fn errors_name_field_and_bound() {
        let e = Config::from_yaml_str(
            "role: gw\nports: {inside: a, outside: b}\negress: {aqm: {max_p: 2}}\n",
        )
        .unwrap_err();
        assert!(
            e.contains("egress.aqm.max_p") && e.contains("[0, 1]"),
            "{e}"
        );
        let e = Config::from_yaml_str("role: gw\nports: {inside: a, outside: b}\nfoo: 1\n")
            .unwrap_err();
        assert!(e.contains("unknown field"), "{e}");
        let e = Config::from_yaml_str(
            "role: gw\nports: {inside: a, outside: b}\neten: {enabled: true}\n",
        )
        .unwrap_err();
        assert!(e.contains("eten.source_ip"), "{e}");
        let ports: Vec<String> = (1..=65).map(|p| p.to_string()).collect();
        let many = format!(
            "role: gw\nports: {{inside: a, outside: b}}\nern: {{ports: [{}]}}\n",
            ports.join(", ")
        );
        let e = Config::from_yaml_str(&many).unwrap_err();
        assert!(e.contains("ern.ports") && e.contains("[0, 64]"), "{e}");
    }

    #[test]
    fn helpers() {
        assert_eq!(parse_mac("02:5a:00:00:00:01"), Some([2, 0x5a, 0, 0, 0, 1]));
        assert_eq!(parse_mac("02:5a:00"), None);
        assert_eq!(parse_hex("00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(parse_hex("0"), None);
    }

    #[test]
    fn schema_carries_the_bounds_validate_checks() {
        let s: serde_json::Value =
            serde_json::from_str(&binkit::schema::pretty::<Config>()).unwrap();
        let rate = &s["$defs"]["Egress"]["properties"]["rate_factor"];
        assert_eq!(
            (rate["minimum"].as_f64(), rate["maximum"].as_f64()),
            (Some(0.1), Some(1.0))
        );
        assert_eq!(s["additionalProperties"], false);
        assert_eq!(s["required"], serde_json::json!(["role", "ports"]));
    }
}
