//! The receiver's configuration: one definition for its JSON file (`--config`), its flags and a
//! scenario's `receiver.withhold` section. `--print-schema` prints [`Config`]'s JSON Schema;
//! `make schemas` commits it as api/satlab/withhold_schema.json and generates the service's model
//! of the scenario section from its [`Withhold`] definition (api/satlab/records/withhold.py).

use crate::logic::Params;
use binkit::bounds::check_range;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt::Display;
use std::path::Path;

/// A bounded setting: its place in the file, its range and unit (the flags take the same range).
pub struct Bound<T> {
    pub field: &'static str,
    pub lo: T,
    pub hi: T,
    pub unit: &'static str,
}

impl<T> Bound<T> {
    const fn new(field: &'static str, lo: T, hi: T, unit: &'static str) -> Bound<T> {
        Bound {
            field,
            lo,
            hi,
            unit,
        }
    }
}

impl<T: PartialOrd + Display + Copy> Bound<T> {
    /// Err naming the field and the range when `v` is outside it (or NaN).
    fn check(&self, v: T) -> Result<(), String> {
        check_range(self.field, v, self.lo, self.hi, self.unit)
    }
}

pub const IMMEDIATE_DUPACKS: Bound<u32> = Bound::new("withhold.immediate_dupacks", 0, 2, "");
pub const HISTORY_EPISODES: Bound<u32> = Bound::new("withhold.history_episodes", 1, 1024, "");
pub const IAT_WEIGHT: Bound<f64> = Bound::new("withhold.iat_weight", 1e-3, 1.0, "");
pub const INITIAL_THRESHOLD_PACKETS: Bound<u32> =
    Bound::new("withhold.initial_threshold_packets", 1, 10_000, " packets");
pub const RTT_MS: Bound<f64> = Bound::new("withhold.rtt_ms", 1.0, 60_000.0, " ms");

/// Yang's reordering-robust receiver (Yang 2001, section 3.2; endhosts/withhold): the
/// receiving host withholds dupACKs up to the largest reordering stride seen, through NFQUEUE.
/// The open parameters of the thesis are chosen here (endhosts/README.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Withhold {
    /// dupACKs sent at once (0 for senders using Limited Transmit)
    #[schemars(range(min = IMMEDIATE_DUPACKS.lo, max = IMMEDIATE_DUPACKS.hi))]
    pub immediate_dupacks: u32,
    /// reordering episodes whose largest stride is kept
    #[schemars(range(min = HISTORY_EPISODES.lo, max = HISTORY_EPISODES.hi))]
    pub history_episodes: u32,
    /// EWMA weight of the newest inter-arrival time
    #[schemars(range(min = IAT_WEIGHT.lo, max = IAT_WEIGHT.hi))]
    pub iat_weight: f64,
    /// threshold before any reordering is recorded
    #[schemars(range(min = INITIAL_THRESHOLD_PACKETS.lo, max = INITIAL_THRESHOLD_PACKETS.hi))]
    pub initial_threshold_packets: u32,
    /// receiver RTT estimate: a hole filled later was a retransmission
    #[schemars(range(min = RTT_MS.lo, max = RTT_MS.hi), extend("x-unit" = "ms"))]
    pub rtt_ms: f64,
}

impl Default for Withhold {
    fn default() -> Withhold {
        Withhold {
            immediate_dupacks: 2,
            history_episodes: 16,
            iat_weight: 0.125,
            initial_threshold_packets: 3,
            rtt_ms: 600.0,
        }
    }
}

impl Withhold {
    fn validate(&self) -> Result<(), String> {
        IMMEDIATE_DUPACKS.check(self.immediate_dupacks)?;
        HISTORY_EPISODES.check(self.history_episodes)?;
        IAT_WEIGHT.check(self.iat_weight)?;
        INITIAL_THRESHOLD_PACKETS.check(self.initial_threshold_packets)?;
        RTT_MS.check(self.rtt_ms)
    }

    /// The per-flow parameters of the logic.
    pub fn params(&self) -> Params {
        Params {
            immediate_dupacks: self.immediate_dupacks,
            history: self.history_episodes as usize,
            iat_weight: self.iat_weight,
            initial_threshold: self.initial_threshold_packets,
            rtt_ns: (self.rtt_ms * 1e6) as u64,
        }
    }
}

pub const DEFAULT_QUEUE_OUT: u16 = 7;
pub const DEFAULT_QUEUE_IN: u16 = 8;

fn default_queue_out() -> u16 {
    DEFAULT_QUEUE_OUT
}

fn default_queue_in() -> u16 {
    DEFAULT_QUEUE_IN
}

/// satlab-withhold's configuration file (JSON): the ports and queues, which the testbed sets per
/// run, and the receiver's settings, a scenario's `receiver.withhold` as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "WithholdConfig")]
pub struct Config {
    /// receiving TCP ports whose flows are withheld
    #[schemars(length(min = 1), inner(range(min = 1)))]
    pub ports: Vec<u16>,
    /// NFQUEUE number for the outgoing ACKs
    #[serde(default = "default_queue_out")]
    pub queue_out: u16,
    /// NFQUEUE number for the incoming data (not queue_out's)
    #[serde(default = "default_queue_in")]
    pub queue_in: u16,
    /// the receiver's settings
    #[serde(default)]
    pub withhold: Withhold,
}

impl Config {
    pub fn from_json_file(p: &Path) -> Result<Config, String> {
        let s = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        Self::from_json_str(&s).map_err(|e| format!("{}: {e}", p.display()))
    }

    /// Parses and validates a file's text; errors name the field.
    pub fn from_json_str(s: &str) -> Result<Config, String> {
        let c: Config = serde_json::from_str(s).map_err(|e| e.to_string())?;
        c.validate()?;
        Ok(c)
    }

    /// The rules the schema states (bounds, a port at least) and the one it cannot (two queues).
    pub fn validate(&self) -> Result<(), String> {
        if self.ports.is_empty() {
            return Err("ports: give at least one port".into());
        }
        if self.ports.contains(&0) {
            return Err("ports: 0 is not a port".into());
        }
        if self.queue_in == self.queue_out {
            return Err("queue_in: must differ from queue_out".into());
        }
        self.withhold.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::Config;

    #[test]
    fn a_file_gives_the_settings_and_the_defaults() {
        let c = Config::from_json_str(r#"{"ports": [5001, 5002], "withhold": {"rtt_ms": 75}}"#)
            .unwrap();
        assert_eq!(c.ports, [5001, 5002]);
        assert_eq!((c.queue_out, c.queue_in), (7, 8));
        assert_eq!(c.withhold.rtt_ms, 75.0);
        assert_eq!(c.withhold.history_episodes, 16);
        assert_eq!(c.withhold.params().rtt_ns, 75_000_000);
    }

    #[test]
    fn errors_name_the_field_and_the_limit() {
        let cases = [
            (
                r#"{"ports": [1], "withhold": {"history_episodes": 2000}}"#,
                "withhold.history_episodes: value 2000 is outside the allowed range [1, 1024]",
            ),
            (
                r#"{"ports": [1], "withhold": {"rtt_ms": 0.5}}"#,
                "withhold.rtt_ms: value 0.5 is outside the allowed range [1, 60000] ms",
            ),
            (r#"{"ports": []}"#, "ports: give at least one port"),
            (r#"{"ports": [1], "queue_in": 7}"#, "queue_in: must differ"),
            (
                r#"{"ports": [1], "withhold": {"rtt": 1}}"#,
                "unknown field `rtt`",
            ),
            (r#"{"withhold": {}}"#, "missing field `ports`"),
        ];
        for (text, want) in cases {
            let err = Config::from_json_str(text).unwrap_err();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
