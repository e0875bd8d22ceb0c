//! The data planes' part of the ETEN notifier, BETEN form (Krishnan, Allman, Partridge, Sterbenz,
//! "Explicit Transport Error Notification (ETEN) for Error-Prone Wireless and Satellite Networks",
//! BBN TR 8333, 2002, §2.1.2 "Backward ETEN"): the notice goes back to the damaged packet's sender,
//! so it sees the return path's queueing and propagation delay and can be lost on it.
//!
//! The notices themselves are built from link events by `crate::notifier` (telemetry thread); here
//! the data planes learn the Ethernet addresses they are sent with ([`MacLearner`], both threads)
//! and the egress queues them like any packet ([`enqueue_notices`]).

use crate::aqm::{Queue, Verdict};
use crate::process;
use crate::state::Shared;
use std::sync::atomic::Ordering;

/// Learns the (local router, remote router) MAC pair ETEN notices are sent with.
///
/// Reads: the Ethernet and IPv4 headers of the frames of one direction. Writes: `Shared::macs`.
/// Learns from every frame until it has a pair, then from every 64th (a pair that changes, e.g. a
/// re-cabled edge, is still picked up): before the first pair, notices would go out broadcast and
/// the next router would not forward them.
#[derive(Debug)]
pub struct MacLearner {
    egress: bool,
    tick: u32,
    learned: bool,
}

impl MacLearner {
    /// A learner for the egress (`true`: source = local router) or ingress direction.
    pub fn new(egress: bool) -> MacLearner {
        MacLearner {
            egress,
            tick: 0,
            learned: false,
        }
    }

    /// Looks at one frame of this learner's direction.
    pub fn observe(&mut self, sh: &Shared, frame: &[u8]) {
        self.tick = self.tick.wrapping_add(1);
        if !self.learned || self.tick % 64 == 1 {
            self.learned |= learn_macs(sh, frame, self.egress);
        }
    }
}

/// Learns the MAC pair from a unicast IPv4 frame; returns whether the frame was one.
fn learn_macs(sh: &Shared, frame: &[u8], egress: bool) -> bool {
    if frame.len() < 14 || frame[0] & 1 != 0 || process::ipv4_at(frame).is_none() {
        return false;
    }
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&frame[0..6]);
    src.copy_from_slice(&frame[6..12]);
    let pair = if egress { (src, dst) } else { (dst, src) };
    let mut m = sh.macs.lock().expect("macs lock");
    if *m != Some(pair) {
        *m = Some(pair);
    }
    true
}

/// Egress stage: moves the notices the notifier handed over into the egress queue, behind the
/// packets already admitted this round (they travel the return path like any packet).
///
/// Reads and empties: `Shared::notices`. Writes: `queue` (admitted as not ECN-capable, never
/// marked); a notice the AQM refuses, whatever the verdict, counts as `aqm_tail_drops`. Notices are
/// not CETEN congestion samples and not ERN traffic.
pub fn enqueue_notices(sh: &Shared, queue: &mut Queue, now: u64) {
    let notices: Vec<Vec<u8>> = std::mem::take(&mut *sh.notices.lock().expect("notices lock"));
    for f in notices {
        match queue.admit(f.len(), false, now) {
            Verdict::Enqueue | Verdict::Mark => queue.push(f, false),
            _ => {
                sh.c.aqm_tail_drops.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}
