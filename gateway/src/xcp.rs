//! The IP-ERN router's controller: XCP's control laws (Katabi, Handley, Rohrs, SIGCOMM 2002) applied
//! to ERN traffic only, as IP-ERN prescribes ("An IP-ERN architecture to enable hybrid E2E/ERN protocol and application to satellite networking", Computer Networks 56 (2012) §2.2.2):
//!
//! ```text
//! every control interval d (the mean RTT of the ERN packets, weighted by size):
//!   y   = ERN bytes that arrived during the interval            (input traffic, ERN only)
//!   S   = C - y / d                                             (spare bandwidth, bytes/s; C = capacity)
//!   Q   = minimum ERN queue during the interval                 (persistent queue, bytes)
//!   phi = alpha d S - beta Q                                    (aggregate feedback, bytes)
//!   h   = max(0, gamma y - |phi|)                               (shuffled traffic)
//!   xi_p = (h + max(phi, 0))  / (d * sum_i rtt_i s_i / cwnd_i)
//!   xi_n = (h + max(-phi, 0)) / (d * sum_i s_i)
//! per ERN packet i of the next interval:
//!   feedback_i = xi_p rtt_i^2 s_i / cwnd_i - xi_n rtt_i s_i     (bytes; H_feedback = min(H_feedback, feedback_i))
//! ```
//! alpha = 0.4, beta = 0.226, gamma = 0.1. Sums run over the ERN packets of the interval (s_i its
//! size in bytes, rtt_i its H_rtt in seconds, cwnd_i its H_cwnd in bytes). C is the link's current
//! useful rate (from telemetry, so an ACM change moves the feedback at the next interval end).
//! A packet with H_rtt = 0 (sender has no RTT yet) is counted with rtt = d.

use serde::Serialize;

/// Parameters.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Efficiency gain on spare bandwidth.
    pub alpha: f64,
    /// Efficiency gain on the persistent queue.
    pub beta: f64,
    /// Shuffling fraction.
    pub gamma: f64,
    /// Initial control interval, s.
    pub initial_interval_s: f64,
    /// Interval bounds, s.
    pub min_interval_s: f64,
    /// Interval bounds, s.
    pub max_interval_s: f64,
}

/// What the last interval decided (for status and tests).
#[derive(Debug, Clone, Copy, Serialize, Default)]
pub struct Decision {
    /// When the interval ended, ns (gateway clock).
    pub t_ns: u64,
    /// Interval length used, s.
    pub d_s: f64,
    /// Capacity, bytes/s.
    pub capacity_bytes_per_s: f64,
    /// ERN input rate, bytes/s.
    pub input_bytes_per_s: f64,
    /// Spare bandwidth, bytes/s.
    pub spare_bytes_per_s: f64,
    /// Persistent ERN queue, bytes.
    pub queue_bytes: f64,
    /// Aggregate feedback, bytes.
    pub phi: f64,
    /// Shuffled traffic, bytes.
    pub h: f64,
    /// Positive feedback coefficient.
    pub xi_p: f64,
    /// Negative feedback coefficient.
    pub xi_n: f64,
    /// ERN packets counted.
    pub packets: u64,
    /// Next interval (mean RTT), s.
    pub next_d_s: f64,
}

/// The controller.
#[derive(Debug, Clone)]
pub struct Controller {
    p: Params,
    d_s: f64,
    start_ns: Option<u64>,
    // accumulators of the running interval
    bytes: f64,
    sum_rtt_s_over_cwnd: f64,
    sum_rtt_s: f64,
    packets: u64,
    min_queue: Option<f64>,
    // coefficients in force
    xi_p: f64,
    xi_n: f64,
    /// The last decision.
    pub last: Decision,
    /// Intervals completed.
    pub intervals: u64,
}

impl Controller {
    /// A controller with no history.
    pub fn new(p: Params) -> Controller {
        Controller {
            p,
            d_s: p.initial_interval_s,
            start_ns: None,
            bytes: 0.0,
            sum_rtt_s_over_cwnd: 0.0,
            sum_rtt_s: 0.0,
            packets: 0,
            min_queue: None,
            xi_p: 0.0,
            xi_n: 0.0,
            last: Decision::default(),
            intervals: 0,
        }
    }

    /// The current control interval, s.
    pub fn interval_s(&self) -> f64 {
        self.d_s
    }

    /// Observes the ERN queue (call on every enqueue and dequeue).
    pub fn observe_queue(&mut self, ern_bytes: usize) {
        let q = ern_bytes as f64;
        self.min_queue = Some(self.min_queue.map_or(q, |m| m.min(q)));
    }

    /// An ERN packet of `size` bytes with header (cwnd bytes, rtt s) arrives: account it and return
    /// the computed per-packet feedback, bytes.
    pub fn on_packet(&mut self, now_ns: u64, size: f64, cwnd: f64, rtt_s: f64) -> f64 {
        if self.start_ns.is_none() {
            self.start_ns = Some(now_ns);
        }
        let rtt = if rtt_s > 0.0 { rtt_s } else { self.d_s };
        let cwnd = cwnd.max(size).max(1.0);
        self.bytes += size;
        self.sum_rtt_s_over_cwnd += rtt * size / cwnd;
        self.sum_rtt_s += rtt * size;
        self.packets += 1;
        self.xi_p * rtt * rtt * size / cwnd - self.xi_n * rtt * size
    }

    /// Ends the interval when it is due (`now_ns` past its end); `capacity` bytes/s. Returns whether
    /// an interval ended.
    pub fn tick(&mut self, now_ns: u64, capacity: f64, ern_queue_bytes: usize) -> bool {
        let start = *self.start_ns.get_or_insert(now_ns);
        let elapsed = now_ns.saturating_sub(start) as f64 * 1e-9;
        if elapsed < self.d_s {
            return false;
        }
        self.end_interval(now_ns, elapsed, capacity, ern_queue_bytes);
        true
    }

    /// Computes the coefficients for the next interval from an interval of `d` seconds.
    pub fn end_interval(&mut self, now_ns: u64, d: f64, capacity: f64, ern_queue_bytes: usize) {
        let p = self.p;
        let y = self.bytes;
        let input = y / d;
        let spare = capacity - input;
        let q = self.min_queue.unwrap_or(ern_queue_bytes as f64);
        let phi = p.alpha * d * spare - p.beta * q;
        let h = (p.gamma * y - phi.abs()).max(0.0);
        self.xi_p = if self.sum_rtt_s_over_cwnd > 0.0 {
            (h + phi.max(0.0)) / (d * self.sum_rtt_s_over_cwnd)
        } else {
            0.0
        };
        self.xi_n = if y > 0.0 {
            (h + (-phi).max(0.0)) / (d * y)
        } else {
            0.0
        };
        let next_d = if y > 0.0 {
            (self.sum_rtt_s / y).clamp(p.min_interval_s, p.max_interval_s)
        } else {
            self.d_s
        };
        self.last = Decision {
            t_ns: now_ns,
            d_s: d,
            capacity_bytes_per_s: capacity,
            input_bytes_per_s: input,
            spare_bytes_per_s: spare,
            queue_bytes: q,
            phi,
            h,
            xi_p: self.xi_p,
            xi_n: self.xi_n,
            packets: self.packets,
            next_d_s: next_d,
        };
        self.intervals += 1;
        self.d_s = next_d;
        self.start_ns = Some(now_ns);
        self.bytes = 0.0;
        self.sum_rtt_s_over_cwnd = 0.0;
        self.sum_rtt_s = 0.0;
        self.packets = 0;
        self.min_queue = Some(ern_queue_bytes as f64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            alpha: 0.4,
            beta: 0.226,
            gamma: 0.1,
            initial_interval_s: 0.5,
            min_interval_s: 0.01,
            max_interval_s: 5.0,
        }
    }

    /// One flow, rtt 0.5 s, cwnd 50 000 B, 1000-B packets: 400 packets in a 0.5 s interval
    /// (400 000 B, 800 000 B/s) on a 1 000 000 B/s link, persistent queue 10 000 B.
    #[test]
    fn hand_calculation() {
        let mut c = Controller::new(params());
        for i in 0..400u64 {
            c.observe_queue(10_000);
            let fb = c.on_packet(i * 1_250_000, 1000.0, 50_000.0, 0.5);
            assert_eq!(fb, 0.0); // no coefficients before the first interval ends
        }
        c.end_interval(500_000_000, 0.5, 1_000_000.0, 10_000);
        let d = c.last;
        // S = 1e6 - 8e5 = 2e5;  phi = 0.4 * 0.5 * 2e5 - 0.226 * 1e4 = 40000 - 2260 = 37740
        assert!((d.spare_bytes_per_s - 200_000.0).abs() < 1e-6);
        assert!((d.phi - 37_740.0).abs() < 1e-6);
        // h = max(0, 0.1 * 400000 - 37740) = 2260
        assert!((d.h - 2260.0).abs() < 1e-6);
        // sum rtt s / cwnd = 400 * 0.5 * 1000 / 50000 = 4;  xi_p = (2260 + 37740) / (0.5 * 4) = 20000
        assert!((d.xi_p - 20_000.0).abs() < 1e-6);
        // xi_n = (2260 + 0) / (0.5 * 400000) = 0.0113
        assert!((d.xi_n - 0.0113).abs() < 1e-12);
        // per packet: p = 20000 * 0.25 * 1000 / 50000 = 100;  n = 0.0113 * 0.5 * 1000 = 5.65
        let fb = c.on_packet(600_000_000, 1000.0, 50_000.0, 0.5);
        assert!((fb - 94.35).abs() < 1e-9, "{fb}");
        // Over the next interval the 400 packets give 400 * 94.35 = 37740 = phi: the feedback
        // sums to the aggregate (the shuffled h cancels out).
        assert!((400.0 * fb - 37_740.0).abs() < 1e-6);
        assert!((d.next_d_s - 0.5).abs() < 1e-12);
    }

    #[test]
    fn overload_gives_negative_feedback() {
        let mut c = Controller::new(params());
        for _ in 0..600 {
            c.observe_queue(30_000);
            c.on_packet(0, 1000.0, 50_000.0, 0.5);
        }
        // 600 000 B in 0.5 s = 1.2e6 B/s on a 1e6 link: phi = 0.4 * 0.5 * (-2e5) - 0.226 * 3e4
        c.end_interval(500_000_000, 0.5, 1_000_000.0, 30_000);
        assert!((c.last.phi - (-40_000.0 - 6_780.0)).abs() < 1e-6);
        assert_eq!(c.last.h, 13_220.0);
        let fb = c.on_packet(600_000_000, 1000.0, 50_000.0, 0.5);
        assert!(fb < 0.0);
        // total over 600 packets = phi
        assert!((600.0 * fb - c.last.phi).abs() < 1e-6);
    }

    #[test]
    fn capacity_drop_flips_sign() {
        let mut c = Controller::new(params());
        for _ in 0..400 {
            c.on_packet(0, 1000.0, 50_000.0, 0.5);
        }
        c.end_interval(500_000_000, 0.5, 1_000_000.0, 0);
        assert!(c.last.phi > 0.0);
        for _ in 0..400 {
            c.on_packet(0, 1000.0, 50_000.0, 0.5);
        }
        c.end_interval(1_000_000_000, 0.5, 400_000.0, 0);
        assert!(c.last.phi < 0.0);
    }
}
