//! The egress AQM stage: admission of each packet to the egress queue, by drop-tail, RED or RED
//! with ECN marking. The queue and RED itself are `crate::aqm` (Floyd & Jacobson, "Random Early
//! Detection Gateways for Congestion Avoidance", IEEE/ACM ToN 1993, Fig. 2, with the pseudo-code
//! there; ECN marking as RFC 3168 §5, and a drop above max_th also in ECN mode, §7). The verdicts
//! are also the samples of the egress link's CETEN congestion survival (ETEN report, BBN TR 8333,
//! §2.2 "Cumulative ETEN": congestion survival kept like corruption survival, at the queue).

use crate::aqm::{Queue, Verdict};
use crate::process;
use crate::state::Shared;
use std::sync::atomic::Ordering;

/// Once per round, before the packets: RED's idle decay counts idle time in packets of 1500 bytes
/// at the pacing rate of this round (`s` in Floyd & Jacobson's Fig. 2). Without a pacing rate (line
/// rate) the last value stays.
///
/// Reads: `rate` (bit/s). Writes: `queue.red.pkt_time_ns`.
pub fn follow_rate(queue: &mut Queue, rate: Option<f64>) {
    if let Some(r) = rate {
        if let Some(red) = queue.red.as_mut() {
            red.pkt_time_ns = 1500.0 * 8.0 / r * 1e9;
        }
    }
}

/// Per packet, after IP-ERN and CETEN: the AQM's verdict on the frame. Admitted, it joins the queue
/// (with CE set when RED marks an ECT packet; counted in the ERN queue when `is_ern`) and is a
/// survived congestion sample; dropped (RED early or forced drop, or a hard limit), it is a lost
/// sample and is handed back to the caller (to recycle). An ECN mark is not a loss.
///
/// Reads: the frame's IPv4 ECN field and length; `queue` (length, bytes, RED average). Writes:
/// `queue`; the ECN field (CE) and IPv4 checksum; `Shared::congestion` (one sample); counters
/// `aqm_enqueued`, `aqm_marked`, `aqm_early_drops`, `aqm_forced_drops`, `aqm_tail_drops`.
pub fn admit(
    sh: &Shared,
    queue: &mut Queue,
    mut f: Vec<u8>,
    is_ern: bool,
    now: u64,
) -> Option<Vec<u8>> {
    let ect = process::is_ect(&f);
    let v = queue.admit(f.len(), ect, now);
    match v {
        Verdict::Enqueue | Verdict::Mark => {
            if v == Verdict::Mark && process::set_ce(&mut f) {
                sh.c.aqm_marked.fetch_add(1, Ordering::Relaxed);
            }
            sh.c.aqm_enqueued.fetch_add(1, Ordering::Relaxed);
            queue.push(f, is_ern);
            sh.congestion_sample(true);
            None
        }
        _ => {
            match v {
                Verdict::EarlyDrop => &sh.c.aqm_early_drops,
                Verdict::ForcedDrop => &sh.c.aqm_forced_drops,
                _ => &sh.c.aqm_tail_drops,
            }
            .fetch_add(1, Ordering::Relaxed);
            sh.congestion_sample(false);
            Some(f)
        }
    }
}

/// Once per round, after sending: the queue's gauges for the HTTP endpoint.
///
/// Reads: `queue`. Writes: `Shared::queue_packets`, `queue_bytes`, `queue_ern_bytes`, `red_avg`.
pub fn publish(sh: &Shared, queue: &Queue) {
    sh.queue_packets
        .store(queue.len() as u64, Ordering::Relaxed);
    sh.queue_bytes
        .store(queue.bytes() as u64, Ordering::Relaxed);
    sh.queue_ern_bytes
        .store(queue.ern_bytes() as u64, Ordering::Relaxed);
    if let Some(red) = &queue.red {
        sh.red_avg.set(red.avg);
    }
}
