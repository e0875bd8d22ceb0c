//! Keeps a saturated `SCHED_FIFO` direction thread clear of the kernel's real-time throttling.
//!
//! Linux lets real-time threads run at most `sched_rt_runtime_us` of every `sched_rt_period_us`
//! on a CPU (950 ms of each second by default), then stops them for the rest of the period. A
//! direction thread whose input keeps it busy all the time (offered at or above what one core
//! forwards) is then frozen for 50 ms every second: its receive ring overflows (16384 frames last
//! 49 ms at 4 Gbit/s) and every delivery due meanwhile leaves up to 50 ms late. Measured with the
//! emulator alone on one core (bench (a)): with the kernel's default, trials between 4.0 and 4.7
//! Gbit/s lost up to 27 000 packets to a full ring at random; with the throttling off, none lost
//! any from 4.4 to 4.8 Gbit/s but one (1023 packets).
//!
//! So the thread watches its own CPU time: once it used more than the kernel's budget less a
//! margin over the last second it steps down to `SCHED_OTHER` at nice -10 (never throttled; alone
//! on a core it still has all of it, shared it has ~90 % against nice-0 tasks), and goes back to
//! `SCHED_FIFO` when its use fell well below (hysteresis). Only when the kernel throttles at all
//! (`sched_rt_runtime_us` not -1) and the thread did get `SCHED_FIFO`.

use netio::sys;
use std::io;

/// How often the thread's CPU time is sampled, ns.
pub const SAMPLE_NS: u64 = 100_000_000;
/// The use is judged over this many samples (one second).
const WINDOW: usize = 10;
/// Step down this far below the kernel's budget (its periods are not aligned with our window).
const DEMOTE_MARGIN: f64 = 0.10;
/// Step back up this far below the step-down point.
const HYSTERESIS: f64 = 0.15;

/// What the guard decided at a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Step down to `SCHED_OTHER` nice -10.
    Demote,
    /// Step back up to `SCHED_FIFO`.
    Promote,
}

/// The state of one thread's guard.
#[derive(Debug, Clone)]
pub struct RtGuard {
    demote_above: f64,
    promote_below: f64,
    /// (wall ns, thread CPU ns) of the last samples, oldest first.
    samples: Vec<(u64, u64)>,
    demoted: bool,
}

impl RtGuard {
    /// A guard for a thread allowed `budget` (runtime / period) of real-time CPU per period.
    pub fn new(budget: f64) -> RtGuard {
        let demote_above = budget - DEMOTE_MARGIN;
        RtGuard {
            demote_above,
            promote_below: demote_above - HYSTERESIS,
            samples: Vec::with_capacity(WINDOW + 1),
            demoted: false,
        }
    }

    /// The kernel's real-time budget on this machine (`None`: real-time threads are never
    /// throttled, or the settings are unreadable).
    pub fn kernel_budget() -> Option<f64> {
        let read = |f: &str| -> Option<f64> {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        let runtime = read("sched_rt_runtime_us")?;
        let period = read("sched_rt_period_us")?;
        (runtime >= 0.0 && period > 0.0).then(|| runtime / period)
    }

    /// Takes a sample (wall clock and the thread's CPU time, ns); says when to change policy.
    pub fn sample(&mut self, wall_ns: u64, cpu_ns: u64) -> Option<Change> {
        if self.samples.len() > WINDOW {
            self.samples.remove(0);
        }
        self.samples.push((wall_ns, cpu_ns));
        if self.samples.len() <= WINDOW {
            return None; // less than a second seen
        }
        let (w0, c0) = self.samples[0];
        let used = cpu_ns.saturating_sub(c0) as f64 / wall_ns.saturating_sub(w0).max(1) as f64;
        if !self.demoted && used > self.demote_above {
            self.demoted = true;
            return Some(Change::Demote);
        }
        if self.demoted && used < self.promote_below {
            self.demoted = false;
            return Some(Change::Promote);
        }
        None
    }
}

/// CPU time the calling thread has used, ns.
pub fn thread_cpu_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Applies a change to the calling thread.
pub fn apply(change: Change, rt_priority: i32) -> io::Result<()> {
    match change {
        Change::Demote => sys::leave_realtime(),
        Change::Promote => sys::raise_thread_priority(Some(rt_priority)).map(|_| ()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `secs` seconds of samples at `use_` CPU use; returns the changes.
    fn run(g: &mut RtGuard, start: &mut (u64, u64), secs: usize, use_: f64) -> Vec<Change> {
        let mut out = Vec::new();
        for _ in 0..secs * 10 {
            start.0 += SAMPLE_NS;
            start.1 += (SAMPLE_NS as f64 * use_) as u64;
            out.extend(g.sample(start.0, start.1));
        }
        out
    }

    #[test]
    fn steps_down_when_saturated_and_back_up_when_load_falls() {
        let mut g = RtGuard::new(0.95);
        let mut t = (0, 0);
        assert!(
            run(&mut g, &mut t, 3, 0.80).is_empty(),
            "80 % stays real-time"
        );
        assert_eq!(run(&mut g, &mut t, 2, 1.0), vec![Change::Demote]);
        // between the two thresholds nothing changes
        assert!(run(&mut g, &mut t, 3, 0.75).is_empty());
        assert_eq!(run(&mut g, &mut t, 2, 0.5), vec![Change::Promote]);
    }

    #[test]
    fn judges_a_whole_second_not_a_burst() {
        let mut g = RtGuard::new(0.95);
        let mut t = (0, 0);
        assert!(run(&mut g, &mut t, 2, 0.5).is_empty());
        // 300 ms fully busy in a second otherwise half idle: 65 %, no change
        let mut changes = Vec::new();
        for k in 0..10 {
            t.0 += SAMPLE_NS;
            t.1 += if k < 3 { SAMPLE_NS } else { SAMPLE_NS / 2 };
            changes.extend(g.sample(t.0, t.1));
        }
        assert!(changes.is_empty());
    }
}
