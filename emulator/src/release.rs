//! How late the data plane hands each delivered packet to the output port, measured against the
//! model's delivery time for that packet: `release error = clock when the send call starts - due
//! time`. (Not when it returns: on a veth port the send call also runs the receiving host's
//! network stack.)
//!
//! This is the emulator's own delay error. It leaves out what the model means to add (queueing,
//! waiting for the next BBFrame, the frame time, the propagation delay) and what lies outside the
//! emulator (the sender's path to the input port; the receiver's stack after the output port).
//!
//! One bucket per microsecond up to `MAX_US`, one for everything beyond: quantiles are exact to
//! the microsecond where they matter (the benchmark's target is 200 µs) and recording is one
//! relaxed atomic add, so the figure costs the data plane nothing measurable.

pub use linkmodel::records::ReleaseSummary;
use std::sync::atomic::{AtomicU64, Ordering};

/// Largest error with a bucket of its own, µs; larger errors share the overflow bucket.
pub const MAX_US: usize = 4999;

/// Bounds of the Prometheus histogram buckets (`le`, µs); the fine buckets are summed into them.
pub const PROM_BOUNDS_US: [usize; 12] = [5, 10, 20, 50, 100, 200, 300, 500, 1000, 2000, 3000, 4999];

/// Release errors of one direction since the emulator started.
#[derive(Debug)]
pub struct ReleaseHistogram {
    buckets: Box<[AtomicU64]>,
    sum_ns: AtomicU64,
    max_ns: AtomicU64,
}

impl Default for ReleaseHistogram {
    fn default() -> Self {
        ReleaseHistogram {
            buckets: (0..=MAX_US + 1).map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            max_ns: AtomicU64::new(0),
        }
    }
}

impl ReleaseHistogram {
    /// Records one packet released `late_ns` after its due time.
    pub fn record(&self, late_ns: u64) {
        let us = (late_ns / 1000) as usize;
        self.buckets[us.min(MAX_US + 1)].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(late_ns, Ordering::Relaxed);
        self.max_ns.fetch_max(late_ns, Ordering::Relaxed);
    }

    fn counts(&self) -> Vec<u64> {
        self.buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect()
    }

    /// Packets whose error was at most `le_us` (cumulative, for Prometheus), and the total.
    pub fn cumulative(&self, bounds_us: &[usize]) -> (Vec<u64>, u64) {
        let counts = self.counts();
        let mut acc = 0u64;
        let mut out = Vec::with_capacity(bounds_us.len());
        let mut next = 0usize;
        for &le in bounds_us {
            // Bucket `us` holds errors in [us, us+1) µs: all of it is <= le when us < le.
            while next < le.min(MAX_US + 1) {
                acc += counts[next];
                next += 1;
            }
            out.push(acc);
        }
        (out, counts.iter().sum())
    }

    /// Sum of all errors, seconds (Prometheus `_sum`).
    pub fn sum_s(&self) -> f64 {
        self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Count and quantiles so far.
    pub fn summary(&self) -> ReleaseSummary {
        let counts = self.counts();
        let total: u64 = counts.iter().sum();
        let max_ns = self.max_ns.load(Ordering::Relaxed);
        let quantile = |q: f64| -> Option<u64> {
            if total == 0 {
                return None;
            }
            let rank = ((q * total as f64).ceil() as u64).max(1);
            let mut acc = 0u64;
            for (us, &c) in counts.iter().enumerate() {
                acc += c;
                if acc >= rank {
                    return Some(if us > MAX_US {
                        max_ns.div_ceil(1000)
                    } else {
                        us as u64 + 1
                    });
                }
            }
            None
        };
        ReleaseSummary {
            count: total,
            p50_us: quantile(0.5),
            p99_us: quantile(0.99),
            p999_us: quantile(0.999),
            max_us: max_ns as f64 / 1e3,
            mean_us: (total > 0)
                .then(|| self.sum_ns.load(Ordering::Relaxed) as f64 / 1e3 / total as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_to_the_microsecond() {
        let h = ReleaseHistogram::default();
        for i in 0..1000u64 {
            h.record(i * 1000 + 500); // 0.5 µs, 1.5 µs, ... 999.5 µs
        }
        let s = h.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.p50_us, Some(500));
        assert_eq!(s.p99_us, Some(990));
        assert_eq!(s.p999_us, Some(999));
        assert!((s.max_us - 999.5).abs() < 1e-9);
        assert!((s.mean_us.unwrap() - 500.0).abs() < 1e-9);
    }

    #[test]
    fn empty_has_no_quantiles() {
        let s = ReleaseHistogram::default().summary();
        assert_eq!((s.count, s.p50_us, s.p99_us), (0, None, None));
    }

    #[test]
    fn overflow_and_cumulative_buckets() {
        let h = ReleaseHistogram::default();
        h.record(3_000); // 3 µs
        h.record(150_000); // 150 µs
        h.record(60_000_000); // 60 ms: overflow
        let (cum, total) = h.cumulative(&[5, 100, 200, 4999]);
        assert_eq!(cum, vec![1, 1, 2, 2]);
        assert_eq!(total, 3);
        assert_eq!(h.summary().p999_us, Some(60_000));
    }
}
