//! The types the I/O side exchanges with a [`crate::Direction`] (see docs/emulator-contract.md).

use crate::segment::SegmentKey;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which way a [`crate::Direction`] carries packets. Forward = gateway -> terminal (gw port to st port).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    Forward,
    Return,
}

impl Dir {
    /// The other direction (the one that carries this direction's ACM feedback).
    pub fn opposite(self) -> Dir {
        match self {
            Dir::Forward => Dir::Return,
            Dir::Return => Dir::Forward,
        }
    }

    /// "forward" / "return", as in the JSON contract and in configuration field paths.
    pub fn as_str(self) -> &'static str {
        match self {
            Dir::Forward => "forward",
            Dir::Return => "return",
        }
    }
}

/// Where the bit errors of a corrupted packet fell. When several regions are hit, the most
/// significant one is reported: IP header, then transport header, then payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HitRegion {
    IpHeader,
    TransportHeader,
    Payload,
}

/// A packet hit by bit errors: the most significant region hit and how many bits were flipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hit {
    #[serde(rename = "where")]
    pub where_: HitRegion,
    pub bits_flipped: u32,
    /// The TCP data segment the packet was, read before any bit was flipped (Oracle ETEN key);
    /// only filled when the direction has `oracle_eten` configured and the packet is an IPv4 TCP
    /// segment with payload. Not part of any JSON.
    #[serde(skip)]
    pub segment: Option<SegmentKey>,
}

/// Why a packet did not come out of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossCause {
    /// The queue was full (packet or byte limit) when the packet was offered (drop-tail).
    QueueDrop,
    /// A BBFrame (or burst) carrying the packet, or one of its fragments, was erased (PER draw).
    FrameErasure,
    /// The packet got bit errors and `bit_errors.action` is `drop`.
    Corruption(Hit),
}

/// What happened to one offered packet. Every offered packet yields exactly one outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Leaves the far port now; `corrupted` is set when bits were flipped (action `deliver`).
    Deliver {
        frame: Vec<u8>,
        corrupted: Option<Hit>,
    },
    /// Lost; queue drops come out at once, erasures and corruption drops at the time the packet
    /// would have reached the receiver (that is where a real receiver notices them).
    Lost { frame: Vec<u8>, cause: LossCause },
}

/// The MODCOD in use (status JSON `modcod`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModcodStatus {
    pub id: u32,
    pub name: String,
    pub efficiency: f64,
    pub required_esn0_db: f64,
}

/// Per-direction counters (status JSON `counters`); they only grow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Counters {
    pub offered_packets: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub queue_drops: u64,
    pub frame_erasures: u64,
    pub erased_packets: u64,
    pub corrupted_packets: u64,
    pub reordered_packets: u64,
}

impl Counters {
    /// Adds `o`'s counts (a beam's counters are its terminals' summed).
    pub fn add(&mut self, o: &Counters) {
        self.offered_packets += o.offered_packets;
        self.delivered_packets += o.delivered_packets;
        self.delivered_bytes += o.delivered_bytes;
        self.queue_drops += o.queue_drops;
        self.frame_erasures += o.frame_erasures;
        self.erased_packets += o.erased_packets;
        self.corrupted_packets += o.corrupted_packets;
        self.reordered_packets += o.reordered_packets;
    }
}

/// Status of one direction; the JSON field names are part of the contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DirectionStatus {
    pub direction: Dir,
    /// MODCOD the transmitter uses now; `null` for a fixed-rate link.
    pub modcod: Option<ModcodStatus>,
    /// Es/N0 (total C/N, dB) at the receiver now.
    pub esn0_db: f64,
    /// Total attenuation (uplink + downlink) now, dB.
    pub attenuation_db: f64,
    /// Rate of the data field (after PL framing and BBHEADER, before GSE), bit/s.
    pub useful_rate_bps: f64,
    /// One-way propagation delay now, ms.
    pub delay_ms: f64,
    /// Long-run average BER of the bit-error model (0 for none or an error-pattern file).
    pub ber: f64,
    pub queue_packets: u64,
    pub queue_bytes: u64,
    pub counters: Counters,
    /// Per-class queues (`queue.classes`), in configuration order; absent without classes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub classes: Vec<ClassStatus>,
    /// The terminal's capacity requests and grant in the current superframe (`return.dama`);
    /// absent without DAMA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dama: Option<Box<DamaStatus>>,
    /// The terminals of the beam (`forward.beam`; on the return link with `return.dama`, the
    /// return beam of the same terminals), in configuration order; absent with one terminal.
    /// With a beam, `modcod`, `esn0_db`, `attenuation_db` and `useful_rate_bps` above are the
    /// first terminal's, the queue and counters the sum over the terminals.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terminals: Vec<TerminalStatus>,
    /// A forward beam's carrier: the mean useful rate of the frames it sent (their MODCODs'
    /// data-field rates weighted by airtime, over about the last 100 ms of airtime), bit/s: what
    /// the beam carries with the terminals the scheduler serves now. Absent without a beam.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carrier_useful_rate_bps: Option<f64>,
}

/// One terminal of a beam (forward or return): its link now and what the carrier sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TerminalStatus {
    pub name: String,
    /// MODCOD of the terminal's next frame.
    pub modcod: Option<ModcodStatus>,
    /// Es/N0 at the terminal now, dB.
    pub esn0_db: f64,
    /// Total attenuation now, dB.
    pub attenuation_db: f64,
    /// Rate of the data field at the terminal's MODCOD, bit/s (the carrier's, were it alone).
    pub useful_rate_bps: f64,
    pub queue_packets: u64,
    pub queue_bytes: u64,
    /// BBFRAMEs the carrier sent at this terminal's MODCOD.
    pub frames: u64,
    /// GSE bytes (headers + data) the carrier sent the terminal.
    pub sent_bytes: u64,
    pub counters: Counters,
    /// The terminal's DAMA requests and grant in the current superframe (return link of a beam
    /// with `return.dama`); absent on the forward link. There `frames` counts RCS2 bursts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dama: Option<Box<DamaStatus>>,
}

/// DAMA on the return link (`return.dama`): what the terminal asked for at the start of the
/// current superframe and what the gateway granted it for this superframe. On a return beam each
/// terminal has its own (`terminals[].dama`) and the direction's is their sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DamaStatus {
    /// Superframe number (superframe 0 starts when the emulator starts).
    pub superframe: u64,
    /// Superframes from a request leaving the terminal to its grant being usable.
    pub request_delay_superframes: u64,
    /// Payload of one timeslot (one burst at the terminal's MODCOD), bytes.
    pub slot_bytes: u32,
    /// RBDC rate the terminal requested in this superframe (0: no RBDC request), kbit/s.
    pub requested_rbdc_kbps: f64,
    /// VBDC volume the terminal requested in this superframe, bytes.
    pub requested_vbdc_bytes: u64,
    /// Timeslots granted in this superframe.
    pub granted_slots: u32,
    /// Capacity granted in this superframe, kbit/s (slot payloads; the sum of the four below).
    pub granted_kbps: f64,
    /// Of which CRA, kbit/s.
    pub cra_kbps: f64,
    /// Of which RBDC, kbit/s.
    pub rbdc_kbps: f64,
    /// Of which VBDC, kbit/s.
    pub vbdc_kbps: f64,
    /// Of which free capacity, kbit/s.
    pub fca_kbps: f64,
    /// Requests sent in contention slots so far (`dama.contention`; 0 without it).
    pub contention_attempts: u64,
    /// Of which lost in a collision.
    pub contention_collisions: u64,
    /// Of the collisions, those with another terminal of the return beam (the rest met the
    /// `background_load` only); 0 for one terminal.
    #[serde(default)]
    pub contention_beam_collisions: u64,
}

/// Status and counters of one traffic class of the queue (counters only grow).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClassStatus {
    pub name: String,
    /// Strict priority level (0 first).
    pub priority: u8,
    /// Deficit-round-robin weight within its level.
    pub weight: u32,
    /// Packets of the class in the queue now.
    pub queue_packets: u64,
    /// Bytes of the class in the queue now.
    pub queue_bytes: u64,
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    /// Packets dropped on arrival (class or queue limit).
    pub dropped_packets: u64,
    pub dropped_bytes: u64,
    /// Packets taken from the queue into a frame.
    pub sent_packets: u64,
    pub sent_bytes: u64,
    /// Sum of the queueing delays of the sent packets (arrival to the start of the frame that
    /// carries their first byte), ms; the mean is this / `sent_packets`.
    pub queue_delay_sum_ms: f64,
    /// Largest queueing delay of a sent packet, ms.
    pub queue_delay_max_ms: f64,
}
