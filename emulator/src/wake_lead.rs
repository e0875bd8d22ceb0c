//! How early a direction thread arms its timer before a delivery deadline.
//!
//! A timer wake-up comes late by the scheduler's and (in a VM) the hypervisor's latency: measured
//! on the 2-core VM this project is developed on, about 30-40 µs at the median even for a
//! `SCHED_FIFO` thread, more from a halted CPU. Arming the timer that much early and busy-polling
//! the rest meets deadlines within a few µs; a fixed lead large enough for the tail would spin
//! a core for most of every gap. So the lead is learnt: the exponentially weighted mean of observed
//! timer lateness, capped. The cost is the spin between an early wake-up and the deadline.
//!
//! Why the mean and not a high quantile: half the wake-ups still come a little late, but the spin
//! stays short. A lead of mean + 2 mean deviations (emulator bench (b), 50% load, 2-core VM) cut
//! the release error p99 from 40-55 to 30 µs, while the spinning, at real-time priority, took
//! enough CPU from the hosts sharing the machine to raise their end-to-end p99 from 0.21-0.31 to
//! 0.46 ms.
//!
//! `SATLAB_EMU_SPIN_US` replaces the learnt lead by a fixed one (0 = never wake early).

/// Weight of the newest observation (1/16: the lead follows a change of load within ~50 wake-ups).
const GAIN: f64 = 1.0 / 16.0;
/// Largest learnt lead, ns: an outlier (a preempted vCPU) must not make the thread spin for long.
const MAX_LEAD_NS: f64 = 150_000.0;
/// Lateness above this is an outlier and is not learnt from, ns.
const OUTLIER_NS: f64 = 1_000_000.0;

/// The timer lead of one thread.
#[derive(Debug, Clone)]
pub struct WakeLead {
    fixed_ns: Option<u64>,
    mean_ns: f64,
}

impl WakeLead {
    /// A learnt lead starting at `initial_ns`, or the fixed lead `fixed_ns`.
    pub fn new(fixed_ns: Option<u64>, initial_ns: u64) -> Self {
        WakeLead {
            fixed_ns,
            mean_ns: initial_ns as f64,
        }
    }

    /// How long before a deadline to arm the timer (and then busy-poll), ns.
    pub fn lead_ns(&self) -> u64 {
        match self.fixed_ns {
            Some(f) => f,
            None => self.mean_ns.clamp(0.0, MAX_LEAD_NS) as u64,
        }
    }

    /// Learns from a timer wake-up that came `late_ns` after the time it was armed for.
    pub fn observe(&mut self, late_ns: u64) {
        let x = late_ns as f64;
        if self.fixed_ns.is_some() || x > OUTLIER_NS {
            return;
        }
        self.mean_ns += GAIN * (x - self.mean_ns);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn learns_the_mean_latency() {
        let mut l = WakeLead::new(None, 0);
        for i in 0..500 {
            l.observe(30_000 + (i % 5) * 2_000); // 30-38 µs, mean 34
        }
        let lead = l.lead_ns();
        assert!((33_000..=35_000).contains(&lead), "lead {lead}");
    }

    #[test]
    fn outliers_are_ignored_and_lead_is_capped() {
        let mut l = WakeLead::new(None, 10_000);
        l.observe(50_000_000);
        assert_eq!(l.lead_ns(), 10_000);
        for _ in 0..200 {
            l.observe(900_000);
        }
        assert_eq!(l.lead_ns(), MAX_LEAD_NS as u64);
    }

    #[test]
    fn fixed_lead_does_not_learn() {
        let mut l = WakeLead::new(Some(5_000), 0);
        l.observe(80_000);
        assert_eq!(l.lead_ns(), 5_000);
    }
}
