//! Egress pacing: the queue drains slightly below the satellite link's current useful rate
//! (`egress.rate_factor` x the telemetry's useful rate, or a fixed / fallback rate), counting
//! `egress.overhead_bytes` of link encapsulation per frame, so the bottleneck queue forms here,
//! where the AQM acts, as in a real gateway whose scheduler knows the MODCOD. This is the gateway's
//! own design (gateway/README.md, "How it sits in the network"), not a paper mechanism; the IP-ERN
//! router takes its capacity from the same rate (`super::ern`).

use crate::aqm::Queue;
use crate::config::Egress;
use crate::state::Shared;
use netio::sys::Waiter;

/// A departure this close to now goes out in the current batch, ns (fewer wake-ups at high rates;
/// the average rate stays exact, bursts stay within 100 µs of link time).
const SLACK_NS: u64 = 100_000;
/// How far a busy link's schedule may fall behind before the lost time is given up, ns.
const MAX_LAG_NS: u64 = 5_000_000;

/// The pacing schedule: the rate of the current round and the next departure time.
#[derive(Debug)]
pub struct Pacer {
    overhead: f64,
    rate: Option<f64>,
    next_tx_ns: u64,
    busy: bool,
}

impl Pacer {
    /// An idle schedule, from the `egress` section.
    pub fn new(c: &Egress) -> Pacer {
        Pacer {
            overhead: f64::from(c.overhead_bytes),
            rate: None,
            next_tx_ns: 0,
            busy: false,
        }
    }

    /// Once per round, first: takes the pacing rate in force (`Shared::pacing_rate_bps`: fixed
    /// rate, else rate_factor x the telemetry's useful rate, else the fallback; None = line rate)
    /// for the whole round and returns it.
    ///
    /// Reads: `Shared::egress_useful_bps`, `Shared::cfg.egress`. Writes: the round's rate;
    /// `Shared::pace_bps` (NaN at line rate).
    pub fn refresh(&mut self, sh: &Shared) -> Option<f64> {
        self.rate = sh.pacing_rate_bps();
        sh.pace_bps.set(self.rate.unwrap_or(f64::NAN));
        self.rate
    }

    /// Once per round, after the notices joined the queue: moves the frames due by `now` (within
    /// `SLACK_NS`) from the head of the queue to `out`, each advancing the schedule by its time on
    /// the link ((length + overhead) x 8 / rate); at line rate, the whole queue. An idle link gives
    /// no credit; a busy one keeps the time a late wake-up lost (up to `MAX_LAG_NS`), so the average
    /// rate is the configured one.
    ///
    /// Reads: the round's rate; `queue`. Writes: `queue` (pops, which also times RED's idle
    /// period); `out`; the schedule.
    pub fn serve(&mut self, queue: &mut Queue, now: u64, out: &mut Vec<Vec<u8>>) {
        match self.rate {
            None => {
                while let Some(p) = queue.pop(now) {
                    out.push(p.frame);
                }
            }
            Some(r) => {
                self.next_tx_ns = if self.busy {
                    self.next_tx_ns.max(now.saturating_sub(MAX_LAG_NS))
                } else {
                    self.next_tx_ns.max(now)
                };
                while let Some(len) = queue.head_len() {
                    if self.next_tx_ns > now + SLACK_NS {
                        break;
                    }
                    let p = queue.pop(now).expect("head exists");
                    self.next_tx_ns += ((len as f64 + self.overhead) * 8.0 / r * 1e9) as u64;
                    out.push(p.frame);
                }
            }
        }
        self.busy = !queue.is_empty();
    }

    /// Once per round, last: sleeps until input, a notice (the waiter's notifier), or the next
    /// departure (a timer just before it) when frames wait at a pacing rate; otherwise for at most
    /// `idle_ms`.
    ///
    /// Reads: the schedule; `queue`. Writes: the waiter's timer.
    pub fn sleep(&self, waiter: &mut Waiter, sh: &Shared, queue: &Queue, idle_ms: i32) {
        if !queue.is_empty() && self.rate.is_some() {
            waiter.arm(
                sh.clock
                    .mono_ns_of(self.next_tx_ns.saturating_sub(SLACK_NS / 2)),
            );
            waiter.wait(100);
        } else {
            waiter.arm(0);
            waiter.wait(idle_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Aqm;

    fn queue_of(frames: usize, len: usize) -> Queue {
        let mut q = Queue::new(&Aqm::default(), 1);
        for _ in 0..frames {
            q.push(vec![0u8; len], false);
        }
        q
    }

    fn pacer(rate: Option<f64>, overhead: u32) -> Pacer {
        let mut p = Pacer::new(&Egress {
            overhead_bytes: overhead,
            ..Egress::default()
        });
        p.rate = rate;
        p
    }

    #[test]
    fn line_rate_drains_everything() {
        let mut q = queue_of(5, 100);
        let mut out = Vec::new();
        pacer(None, 7).serve(&mut q, 1_000, &mut out);
        assert_eq!(out.len(), 5);
        assert!(q.is_empty());
    }

    #[test]
    fn paced_departures_are_spaced_by_link_time() {
        // 993 + 7 bytes at 8 Mbit/s: 1 ms per frame. Slack 100 µs: one frame now, then one per ms.
        let mut q = queue_of(4, 993);
        let mut p = pacer(Some(8e6), 7);
        let mut out = Vec::new();
        p.serve(&mut q, 10_000_000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(p.next_tx_ns, 11_000_000);
        p.serve(&mut q, 10_899_999, &mut out);
        assert_eq!(out.len(), 1, "not yet due (beyond the slack)");
        p.serve(&mut q, 10_900_000, &mut out);
        assert_eq!(out.len(), 2, "due within the slack");
        // A late wake-up on a busy link keeps the lost time: both overdue frames go at once.
        p.serve(&mut q, 13_000_000, &mut out);
        assert_eq!(out.len(), 4);
        assert_eq!(p.next_tx_ns, 14_000_000);
        assert!(!p.busy);
    }

    #[test]
    fn idle_link_gives_no_credit() {
        let mut q = queue_of(3, 993);
        let mut p = pacer(Some(8e6), 7);
        let mut out = Vec::new();
        p.serve(&mut q, 0, &mut out);
        assert_eq!(out.len(), 1);
        assert!(p.busy);
        // Drain, go idle, then come back much later: the schedule restarts at now.
        p.serve(&mut q, 50_000_000, &mut out);
        assert_eq!(out.len(), 3);
        assert!(!p.busy);
        let mut q = queue_of(3, 993);
        p.serve(&mut q, 100_000_000, &mut out);
        assert_eq!(
            out.len(),
            4,
            "one frame at the restart, no burst from credit"
        );
    }
}
