//! The egress queue and its AQM: drop-tail, RED and RED with ECN marking.
//!
//! RED is the classic algorithm of Floyd & Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance" (IEEE/ACM ToN 1993), Fig. 2, count-based, without the "gentle" variant:
//!
//! ```text
//! on arrival:
//!   if queue nonempty: avg = (1 - w_q) avg + w_q q
//!   else:              m = (now - q_time) / s;  avg = (1 - w_q)^m avg      (s: one packet's time)
//!   if min_th <= avg < max_th:
//!       count += 1;  p_b = max_p (avg - min_th) / (max_th - min_th)
//!       p_a = p_b / (1 - count p_b)          (1 when count p_b >= 1)
//!       with probability p_a: mark (ECN mode, ECT packet) or drop;  count = 0
//!   else if avg >= max_th: drop (also in ECN mode, as RFC 3168 §7 says);  count = 0
//!   else count = -1
//! when the queue empties: q_time = now
//! ```
//! With `avg` steady, the packets between two signals are uniform in {1, ..., 1/p_b - 1}, so the
//! fraction of arrivals signalled is 2 p_b (for p_b <= 0.5); tests/gateway checks this against a
//! controlled queue.
//! Queue length `q` and the thresholds are in packets; the hard limits (packets and bytes) apply to
//! every discipline (a packet that would exceed either is a tail drop).

use crate::config::{Aqm as AqmConfig, AqmKind};
use std::collections::VecDeque;

/// What the AQM did with an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Queued unchanged.
    Enqueue,
    /// Queued with CE set.
    Mark,
    /// RED early drop (min_th <= avg < max_th).
    EarlyDrop,
    /// RED forced drop (avg >= max_th).
    ForcedDrop,
    /// A hard limit would be exceeded.
    TailDrop,
}

/// Small deterministic generator (xorshift64*), seeded from the configuration.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// Seeds the generator (any seed, 0 included).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let v = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D);
        (v >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// RED state.
#[derive(Debug, Clone)]
pub struct Red {
    min_th: f64,
    max_th: f64,
    max_p: f64,
    w_q: f64,
    /// Average queue, packets.
    pub avg: f64,
    count: i64,
    q_time_ns: Option<u64>,
    /// Transmission time of a typical packet, ns (for the idle decay).
    pub pkt_time_ns: f64,
    rng: Rng,
}

/// RED's decision before the ECN/drop choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedDecision {
    /// Let it in.
    Pass,
    /// Early congestion signal.
    Early,
    /// Forced (avg >= max_th).
    Forced,
}

impl Red {
    /// RED with the given parameters.
    pub fn new(min_th: f64, max_th: f64, max_p: f64, w_q: f64, seed: u64) -> Red {
        Red {
            min_th,
            max_th,
            max_p,
            w_q,
            avg: 0.0,
            count: -1,
            q_time_ns: Some(0),
            pkt_time_ns: 1e5,
            rng: Rng::new(seed),
        }
    }

    /// p_b at the current average.
    pub fn pb(&self) -> f64 {
        self.max_p * (self.avg - self.min_th) / (self.max_th - self.min_th)
    }

    /// p_a for a given p_b and count.
    pub fn pa(pb: f64, count: i64) -> f64 {
        let d = 1.0 - count as f64 * pb;
        if d <= 0.0 {
            1.0
        } else {
            (pb / d).min(1.0)
        }
    }

    /// Updates the average for an arrival that finds `q` packets queued.
    pub fn update_avg(&mut self, q: usize, now_ns: u64) {
        if q > 0 {
            self.avg = (1.0 - self.w_q) * self.avg + self.w_q * q as f64;
        } else {
            let idle = self
                .q_time_ns
                .map(|t| now_ns.saturating_sub(t) as f64)
                .unwrap_or(0.0);
            let m = idle / self.pkt_time_ns.max(1.0);
            self.avg *= (1.0 - self.w_q).powf(m);
        }
    }

    /// The queue just became empty.
    pub fn queue_emptied(&mut self, now_ns: u64) {
        self.q_time_ns = Some(now_ns);
    }

    /// Arrival: update the average and decide.
    pub fn arrival(&mut self, q: usize, now_ns: u64) -> RedDecision {
        self.update_avg(q, now_ns);
        if self.avg >= self.max_th {
            self.count = 0;
            RedDecision::Forced
        } else if self.avg >= self.min_th {
            self.count += 1;
            let pa = Self::pa(self.pb(), self.count);
            if self.rng.uniform() < pa {
                self.count = 0;
                RedDecision::Early
            } else {
                RedDecision::Pass
            }
        } else {
            self.count = -1;
            RedDecision::Pass
        }
    }
}

/// A queued frame.
#[derive(Debug)]
pub struct Queued {
    /// The Ethernet frame.
    pub frame: Vec<u8>,
    /// Counted in the ERN queue.
    pub ern: bool,
}

/// The egress queue: FIFO with hard limits, one AQM, ERN bytes counted apart (IP-ERN Fig. 4:
/// separate accounting of the E2E and ERN queues; one FIFO, so no reordering between them).
#[derive(Debug)]
pub struct Queue {
    kind: AqmKind,
    limit_packets: usize,
    limit_bytes: usize,
    q: VecDeque<Queued>,
    bytes: usize,
    ern_bytes: usize,
    /// RED state (RED kinds).
    pub red: Option<Red>,
}

impl Queue {
    /// An empty queue.
    pub fn new(c: &AqmConfig, seed: u64) -> Queue {
        let red = match c.kind {
            AqmKind::DropTail => None,
            AqmKind::Red | AqmKind::RedEcn => Some(Red::new(
                c.min_th_packets,
                c.max_th_packets,
                c.max_p,
                c.w_q,
                seed,
            )),
        };
        Queue {
            kind: c.kind,
            limit_packets: c.limit_packets as usize,
            limit_bytes: c.limit_bytes as usize,
            q: VecDeque::new(),
            bytes: 0,
            ern_bytes: 0,
            red,
        }
    }

    /// Packets queued.
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Bytes queued.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// ERN bytes queued.
    pub fn ern_bytes(&self) -> usize {
        self.ern_bytes
    }
    /// Length of the frame at the head.
    pub fn head_len(&self) -> Option<usize> {
        self.q.front().map(|p| p.frame.len())
    }

    /// Decides an arrival. `ect`: the packet is ECN-capable (and can be marked).
    pub fn admit(&mut self, len: usize, ect: bool, now_ns: u64) -> Verdict {
        let qlen = self.q.len();
        let mut v = Verdict::Enqueue;
        if let Some(red) = self.red.as_mut() {
            match red.arrival(qlen, now_ns) {
                RedDecision::Pass => {}
                RedDecision::Forced => v = Verdict::ForcedDrop,
                RedDecision::Early => {
                    v = if self.kind == AqmKind::RedEcn && ect {
                        Verdict::Mark
                    } else {
                        Verdict::EarlyDrop
                    }
                }
            }
        }
        if matches!(v, Verdict::Enqueue | Verdict::Mark)
            && (qlen + 1 > self.limit_packets || self.bytes + len > self.limit_bytes)
        {
            v = Verdict::TailDrop;
        }
        v
    }

    /// Appends an admitted frame.
    pub fn push(&mut self, frame: Vec<u8>, ern: bool) {
        self.bytes += frame.len();
        if ern {
            self.ern_bytes += frame.len();
        }
        self.q.push_back(Queued { frame, ern });
    }

    /// Takes the head.
    pub fn pop(&mut self, now_ns: u64) -> Option<Queued> {
        let p = self.q.pop_front()?;
        self.bytes -= p.frame.len();
        if p.ern {
            self.ern_bytes -= p.frame.len();
        }
        if self.q.is_empty() {
            if let Some(r) = self.red.as_mut() {
                r.queue_emptied(now_ns);
            }
        }
        Some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red_cfg(kind: AqmKind) -> AqmConfig {
        AqmConfig {
            kind,
            limit_packets: 100,
            limit_bytes: 1_000_000,
            min_th_packets: 5.0,
            max_th_packets: 15.0,
            max_p: 0.1,
            w_q: 0.002,
        }
    }

    #[test]
    fn red_formula_worked_numbers() {
        let mut r = Red::new(5.0, 15.0, 0.1, 0.002, 1);
        r.avg = 10.0;
        // p_b = 0.1 * (10 - 5) / (15 - 5) = 0.05
        assert!((r.pb() - 0.05).abs() < 1e-12);
        // p_a = 0.05 / (1 - 3 * 0.05) = 0.0588235...
        assert!((Red::pa(0.05, 3) - 0.05 / 0.85).abs() < 1e-12);
        assert_eq!(Red::pa(0.05, 20), 1.0);
        assert_eq!(Red::pa(0.05, 0), 0.05);
        // avg update with q = 20: 0.998 * 10 + 0.002 * 20 = 10.02
        r.update_avg(20, 0);
        assert!((r.avg - 10.02).abs() < 1e-12);
        // idle decay: 100 packet times idle -> avg * 0.998^100
        let mut r2 = Red::new(5.0, 15.0, 0.1, 0.002, 1);
        r2.avg = 10.0;
        r2.pkt_time_ns = 1000.0;
        r2.queue_emptied(1_000_000);
        r2.update_avg(0, 1_100_000);
        assert!((r2.avg - 10.0 * 0.998f64.powi(100)).abs() < 1e-9);
    }

    #[test]
    fn red_count_based_rate() {
        // With avg held at 10 (p_b = 0.05), count-based RED as in Fig. 2 (count incremented before
        // p_a is computed) signals after X packets, X uniform in {1, ..., 1/p_b - 1}: E[X] = 1/(2 p_b)
        // and the signalled fraction is 2 p_b = 0.1.
        let mut r = Red::new(5.0, 15.0, 0.1, 0.0, 7);
        r.avg = 10.0;
        let n = 200_000;
        let early = (0..n)
            .filter(|_| r.arrival(10, 0) == RedDecision::Early)
            .count();
        let f = early as f64 / n as f64;
        assert!((f - 2.0 * 0.05).abs() < 0.003, "fraction {f}");
    }

    #[test]
    fn red_thresholds() {
        let mut r = Red::new(5.0, 15.0, 0.1, 0.0, 7);
        r.avg = 4.9;
        assert!((0..1000).all(|_| r.arrival(4, 0) == RedDecision::Pass));
        r.avg = 15.0;
        assert_eq!(r.arrival(15, 0), RedDecision::Forced);
    }

    #[test]
    fn queue_disciplines() {
        let mut q = Queue::new(&red_cfg(AqmKind::DropTail), 1);
        for _ in 0..100 {
            assert_eq!(q.admit(1000, false, 0), Verdict::Enqueue);
            q.push(vec![0; 1000], false);
        }
        assert_eq!(q.admit(1000, false, 0), Verdict::TailDrop);
        assert_eq!(q.len(), 100);
        assert_eq!(q.bytes(), 100_000);

        let mut q = Queue::new(&red_cfg(AqmKind::RedEcn), 1);
        q.red.as_mut().unwrap().avg = 14.0;
        q.red.as_mut().unwrap().w_q = 0.0;
        for _ in 0..14 {
            q.push(vec![0; 100], true);
        }
        let vs: Vec<Verdict> = (0..200).map(|_| q.admit(100, true, 0)).collect();
        assert!(vs.contains(&Verdict::Mark));
        assert!(!vs.contains(&Verdict::EarlyDrop));
        let vs: Vec<Verdict> = (0..200).map(|_| q.admit(100, false, 0)).collect();
        assert!(vs.contains(&Verdict::EarlyDrop));
        assert!(!vs.contains(&Verdict::Mark));
        assert_eq!(q.ern_bytes(), 1400);
        q.pop(5);
        assert_eq!(q.ern_bytes(), 1300);
    }
}
