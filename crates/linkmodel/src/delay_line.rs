//! The delay line: outcomes wait here until their delivery time.
//!
//! Without reordering, delivery times are made monotone (a packet never leaves before one that
//! entered earlier, even when the propagation delay shrinks at run time) and a FIFO is enough.
//! With reordering, a binary heap keyed by (delivery time, sequence number) lets packets overtake
//! and keeps ties in entry order. Only packets in flight are held (no per-packet history).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use crate::types::Outcome;

#[derive(Debug)]
struct Entry {
    t: u64,
    seq: u64,
    outcome: Outcome,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.t, o.seq).cmp(&(self.t, self.seq))
    }
}

#[derive(Debug, Default)]
pub struct DelayLine {
    fifo: VecDeque<Entry>,
    heap: BinaryHeap<Entry>,
    seq: u64,
    /// Latest base time so far (monotone clamp).
    last_base: u64,
    /// Latest delivery time scheduled so far (to count overtaking packets).
    max_scheduled: u64,
}

impl DelayLine {
    pub fn new() -> Self {
        Self::default()
    }

    /// Schedules `outcome` at `base_ns` (made monotone) plus `offset_ns` (reordering; 0 = none),
    /// never before `earliest_ns`. Returns true when the packet overtakes an earlier one.
    pub fn push(
        &mut self,
        base_ns: u64,
        offset_ns: Option<i64>,
        earliest_ns: u64,
        outcome: Outcome,
    ) -> bool {
        let base = base_ns.max(self.last_base);
        self.last_base = base;
        self.seq += 1;
        match offset_ns {
            None if self.heap.is_empty() => {
                self.max_scheduled = self.max_scheduled.max(base);
                self.fifo.push_back(Entry {
                    t: base,
                    seq: self.seq,
                    outcome,
                });
                false
            }
            _ => {
                let off = offset_ns.unwrap_or(0);
                let t = (base as i64)
                    .saturating_add(off)
                    .max(earliest_ns as i64)
                    .max(0) as u64;
                let overtakes = t < self.max_scheduled;
                self.max_scheduled = self.max_scheduled.max(t);
                // Move any FIFO entries into the heap first so ordering stays global.
                while let Some(e) = self.fifo.pop_front() {
                    self.heap.push(e);
                }
                self.heap.push(Entry {
                    t,
                    seq: self.seq,
                    outcome,
                });
                overtakes
            }
        }
    }

    /// Appends every outcome due at `now_ns` to `out`, in delivery order, and the time each was
    /// due to `due` (same order).
    pub fn pop_due(&mut self, now_ns: u64, out: &mut Vec<Outcome>, due: &mut Vec<u64>) {
        while self.fifo.front().is_some_and(|e| e.t <= now_ns) {
            let e = self.fifo.pop_front().expect("front");
            due.push(e.t);
            out.push(e.outcome);
        }
        while self.heap.peek().is_some_and(|e| e.t <= now_ns) {
            let e = self.heap.pop().expect("peek");
            due.push(e.t);
            out.push(e.outcome);
        }
    }

    /// Delivery time of the next outcome.
    pub fn next_time(&self) -> Option<u64> {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(a), Some(b)) => Some(a.t.min(b.t)),
            (Some(a), None) => Some(a.t),
            (None, Some(b)) => Some(b.t),
            (None, None) => None,
        }
    }

    pub fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(i: u8) -> Outcome {
        Outcome::Deliver {
            frame: vec![i],
            corrupted: None,
        }
    }

    #[test]
    fn delay_decrease_keeps_order() {
        let mut l = DelayLine::new();
        l.push(1000, None, 0, d(1));
        l.push(500, None, 0, d(2)); // delay shrank: held to 1000, after packet 1
        let (mut out, mut due) = (Vec::new(), Vec::new());
        l.pop_due(999, &mut out, &mut due);
        assert!(out.is_empty());
        l.pop_due(1000, &mut out, &mut due);
        assert_eq!(out, vec![d(1), d(2)]);
        assert_eq!(due, vec![1000, 1000]);
    }

    #[test]
    fn overtaking_with_offsets() {
        let mut l = DelayLine::new();
        assert!(!l.push(1000, Some(500), 0, d(1)));
        assert!(l.push(1100, Some(0), 0, d(2)));
        let (mut out, mut due) = (Vec::new(), Vec::new());
        l.pop_due(2000, &mut out, &mut due);
        assert_eq!(out, vec![d(2), d(1)]);
        assert_eq!(due, vec![1100, 1500]);
    }
}
