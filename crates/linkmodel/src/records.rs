//! The emulator's records as others read them: the `GET /status` document and the lines of the
//! telemetry stream (docs/emulator-contract.md). This is their one definition: the emulator
//! writes them (its fast line encoder is checked against these types by its tests), the gateway
//! reads the stream into them, and `satlab-emulator --print-schema status|telemetry` prints their
//! JSON Schemas, from which the service's Python and the web UI's TypeScript types are generated
//! (`make schemas`).

use crate::types::{Dir, DirectionStatus, HitRegion};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::Ipv4Addr;

/// What happened to a packet (an event line's `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// Left the far port intact.
    Delivered,
    /// Hit by bit errors (delivered with flipped bits, or dropped when the action is `drop`).
    Corrupted,
    /// Lost with an erased BBFrame / burst.
    Erased,
    /// Dropped by the full queue.
    QueueDrop,
}

impl EventKind {
    /// The JSON name.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Delivered => "delivered",
            EventKind::Corrupted => "corrupted",
            EventKind::Erased => "erased",
            EventKind::QueueDrop => "queue_drop",
        }
    }
}

/// One line of the telemetry stream, told apart by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TelemetryLine {
    /// A direction's status: periodically and whenever its MODCOD changes.
    Telemetry(Box<StatusLine>),
    /// One packet's outcome (`telemetry.events`: `losses` or `all`).
    Event(EventLine),
}

/// A status line: when, and the direction's status (the same record as in `GET /status`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StatusLine {
    /// Milliseconds since the emulator started (microsecond resolution).
    pub t_ms: f64,
    #[serde(flatten)]
    pub status: DirectionStatus,
}

/// An event line. The flow fields are there only where the bit errors left the headers they come
/// from intact: none after an IP-header hit; addresses and protocol but no ports or sequence
/// after a transport-header hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventLine {
    /// Milliseconds since the emulator started (microsecond resolution).
    pub t_ms: f64,
    pub direction: Dir,
    pub kind: EventKind,
    /// Frame length in bytes (Ethernet header included).
    pub len: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src: Option<Ipv4Addr>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst: Option<Ipv4Addr>,
    /// IP protocol number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sport: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dport: Option<u16>,
    /// TCP sequence number (`null` for other protocols; absent without ports).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub seq: Option<Option<u32>>,
    /// Where bit errors fell, for corrupted packets (`null` otherwise).
    pub hit: Option<HitRegion>,
}

/// A field that is there, even as `null` (`Some(None)`), unlike one that is absent (`None`).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The `GET /status` (and `POST /control` answer) document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EmulatorStatus {
    /// Seconds since the emulator started.
    pub uptime_s: f64,
    pub forward: DirectionStatus,
    #[serde(rename = "return")]
    pub return_: DirectionStatus,
    /// How late the data plane released delivered packets against the model's delivery times.
    pub release_error: ReleaseErrors,
}

/// Release error of each direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseErrors {
    pub forward: ReleaseSummary,
    #[serde(rename = "return")]
    pub return_: ReleaseSummary,
}

/// Quantiles of the release error of one direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReleaseSummary {
    /// Packets measured.
    pub count: u64,
    /// Median, µs (upper edge of its 1-µs bucket; beyond the histogram, the largest error rounded
    /// up; `null` with no packets).
    pub p50_us: Option<u64>,
    /// 99th percentile, µs.
    pub p99_us: Option<u64>,
    /// 99.9th percentile, µs.
    pub p999_us: Option<u64>,
    /// Largest error seen, µs.
    pub max_us: f64,
    /// Mean, µs.
    pub mean_us: Option<f64>,
}

/// The JSON Schema of the `GET /status` document.
pub fn status_schema() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(EmulatorStatus)).expect("serializes")
}

/// The JSON Schema of one telemetry line.
pub fn telemetry_schema() -> String {
    serde_json::to_string_pretty(&schemars::schema_for!(TelemetryLine)).expect("serializes")
}
