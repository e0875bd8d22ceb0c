//! State shared by the gateway's threads: counters, link estimates, the notice hand-off and the
//! snapshots the HTTP endpoint reports.

use crate::config::Config;
use crate::ewma::Survival;
use crate::xcp::Decision;
use netio::sys::{Clock, Notifier};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

binkit::counters! {
    /// Monotonic counters (Prometheus `satlab_gateway_<name>_total`).
    pub struct Counters {
        egress_rx_frames: "frames read on the inside port (after GSO segmentation)",
        egress_rx_bytes: "bytes read on the inside port",
        egress_tx_frames: "frames sent on the outside port",
        egress_tx_bytes: "bytes sent on the outside port",
        egress_tx_failed: "frames the outside port refused",
        ingress_rx_frames: "frames read on the outside port",
        ingress_tx_frames: "frames sent on the inside port",
        ingress_tx_bytes: "bytes sent on the inside port",
        ingress_tx_failed: "frames the inside port refused",
        gso_segments: "segments cut from GSO super-packets",
        aqm_enqueued: "packets admitted to the egress queue",
        aqm_marked: "packets admitted with CE set by RED",
        aqm_early_drops: "RED early drops",
        aqm_forced_drops: "RED forced drops (average at or above max_th)",
        aqm_tail_drops: "drops at the hard queue limits",
        eten_events: "corrupted/erased link events on the incoming link",
        eten_notices: "ETEN notices queued toward senders",
        eten_rate_limited: "notices suppressed by the rate limit",
        eten_unidentified: "events without an intact flow (no ports/sequence)",
        ceten_corruption_samples: "corruption survival samples (incoming link events)",
        ceten_congestion_samples: "congestion survival samples (egress queue, emulator queue drops)",
        ceten_stamped: "CETEN options whose forward fields were multiplied",
        ceten_reflected: "CETEN reverse fields written on ACKs",
        ceten_inserted: "CETEN options inserted into pure ACKs",
        ern_packets: "ERN data packets counted by the controller",
        ern_feedback_lowered: "ERN packets whose H_feedback was lowered",
        ern_intervals: "XCP control intervals completed",
        telemetry_lines: "telemetry lines read",
        telemetry_connects: "connections to the telemetry socket",
        telemetry_errors: "telemetry lines that did not parse",
    }
}

/// An f64 in an atomic.
#[derive(Debug, Default)]
pub struct AtomicF64(AtomicU64);

impl AtomicF64 {
    /// A value.
    pub fn new(v: f64) -> AtomicF64 {
        AtomicF64(AtomicU64::new(v.to_bits()))
    }
    /// Reads.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
    /// Writes.
    pub fn set(&self, v: f64) {
        self.0.store(v.to_bits(), Ordering::Relaxed)
    }
}

/// A flow as the reflection table keys it: (src, dst, sport, dport) of the data direction.
pub type FlowId = (IpAddr, IpAddr, u16, u16);

/// Everything shared.
pub struct Shared {
    /// The configuration.
    pub cfg: Config,
    /// Counters.
    pub c: Counters,
    /// Run clock.
    pub clock: Clock,
    /// Stop request.
    pub stop: AtomicBool,
    /// Useful rate of the egress link from telemetry, bit/s (NaN = unknown).
    pub egress_useful_bps: AtomicF64,
    /// Useful rate of the ingress link from telemetry, bit/s (NaN = unknown).
    pub ingress_useful_bps: AtomicF64,
    /// Pacing rate in force, bit/s (NaN = none).
    pub pace_bps: AtomicF64,
    /// When the egress useful rate last changed (gateway clock, ns; 0 = never).
    pub egress_rate_changed_ns: AtomicU64,
    /// Latest telemetry records (egress, ingress).
    pub link_status: Mutex<(serde_json::Value, serde_json::Value)>,
    /// Telemetry connected.
    pub telemetry_connected: AtomicBool,
    /// Corruption survival of the incoming link.
    pub corruption: Mutex<Survival>,
    /// Congestion survival of the egress link.
    pub congestion: Mutex<Survival>,
    /// Fixed-point copies for the data path.
    pub corruption_q16: AtomicU32,
    /// Fixed-point copy of the congestion estimate.
    pub congestion_q16: AtomicU32,
    /// Last forward CETEN values seen per incoming flow (for reflection).
    pub reflect: Mutex<HashMap<FlowId, (u16, u16)>>,
    /// Notices waiting for the egress thread.
    pub notices: Mutex<Vec<Vec<u8>>>,
    /// Wakes the egress thread.
    pub egress_wake: Mutex<Option<Notifier>>,
    /// Learned (local router MAC, remote router MAC).
    pub macs: Mutex<Option<([u8; 6], [u8; 6])>>,
    /// Egress queue snapshot: packets, bytes, ERN bytes.
    pub queue_packets: AtomicU64,
    /// Bytes queued.
    pub queue_bytes: AtomicU64,
    /// ERN bytes queued.
    pub queue_ern_bytes: AtomicU64,
    /// RED average queue, packets.
    pub red_avg: AtomicF64,
    /// Last XCP decision and the interval in force.
    pub xcp: Mutex<(Decision, f64)>,
}

impl Shared {
    /// Fresh state.
    pub fn new(cfg: Config) -> Shared {
        let alpha = cfg.ceten.alpha;
        Shared {
            cfg,
            c: Counters::default(),
            clock: Clock::start(),
            stop: AtomicBool::new(false),
            egress_useful_bps: AtomicF64::new(f64::NAN),
            ingress_useful_bps: AtomicF64::new(f64::NAN),
            pace_bps: AtomicF64::new(f64::NAN),
            egress_rate_changed_ns: AtomicU64::new(0),
            link_status: Mutex::new((serde_json::Value::Null, serde_json::Value::Null)),
            telemetry_connected: AtomicBool::new(false),
            corruption: Mutex::new(Survival::new(alpha)),
            congestion: Mutex::new(Survival::new(alpha)),
            corruption_q16: AtomicU32::new(0xffff),
            congestion_q16: AtomicU32::new(0xffff),
            reflect: Mutex::new(HashMap::new()),
            notices: Mutex::new(Vec::new()),
            egress_wake: Mutex::new(None),
            macs: Mutex::new(None),
            queue_packets: AtomicU64::new(0),
            queue_bytes: AtomicU64::new(0),
            queue_ern_bytes: AtomicU64::new(0),
            red_avg: AtomicF64::new(0.0),
            xcp: Mutex::new((Decision::default(), f64::NAN)),
        }
    }

    /// The pacing rate the egress should use now, bit/s (None = line rate).
    pub fn pacing_rate_bps(&self) -> Option<f64> {
        let e = &self.cfg.egress;
        if let Some(r) = e.rate_bps {
            return Some(r);
        }
        let u = self.egress_useful_bps.get();
        if u.is_finite() && u > 0.0 {
            return Some(u * e.rate_factor);
        }
        e.fallback_rate_bps
    }

    /// One corruption sample of the incoming link.
    pub fn corruption_sample(&self, survived: bool) {
        let n = &self.c.ceten_corruption_samples;
        sample(&self.corruption, &self.corruption_q16, n, survived);
    }

    /// One congestion sample of the egress link.
    pub fn congestion_sample(&self, survived: bool) {
        let n = &self.c.ceten_congestion_samples;
        sample(&self.congestion, &self.congestion_q16, n, survived);
    }

    /// Hands a notice to the egress thread and wakes it.
    pub fn push_notice(&self, frame: Vec<u8>) {
        self.notices.lock().expect("notices lock").push(frame);
        if let Some(n) = self.egress_wake.lock().expect("wake lock").as_ref() {
            n.notify();
        }
    }
}

/// One sample into a survival estimate, its fixed-point copy for the data path and its count.
fn sample(survival: &Mutex<Survival>, q16: &AtomicU32, count: &AtomicU64, survived: bool) {
    let mut s = survival.lock().expect("survival lock");
    s.sample(survived);
    q16.store(
        u32::from(packet::ceten::to_q16(s.estimate)),
        Ordering::Relaxed,
    );
    count.fetch_add(1, Ordering::Relaxed);
}
