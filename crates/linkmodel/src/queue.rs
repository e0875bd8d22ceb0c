//! The transmit queue of a direction, limited in packets and in bytes (all classes together).
//!
//! - Without classes (`queue.classes` empty, the default): one FIFO, drop-tail. A packet is
//!   dropped on arrival if it would take the queue above either limit.
//! - With classes: one FIFO per class (`classes.rs`: classification by DSCP or flow rules, strict
//!   priority between levels, deficit round robin within a level, per-class limits and counters).
//!   A packet is dropped on arrival if it would take its class or the whole queue above a limit.
//!
//! The scheduler takes packets at the start of a frame through [`Queue::at`] (the time a packet
//! leaves the queue is the start of the frame that carries its first byte).

use std::collections::VecDeque;

use crate::classes::ClassQueues;
use crate::config::QueueConfig;
use crate::types::ClassStatus;

#[derive(Debug)]
pub enum Queue {
    /// One drop-tail FIFO.
    Fifo(Fifo),
    /// Per-class queues (boxed: the classifier's DSCP table makes it large).
    Classes(Box<ClassQueues>),
}

impl Queue {
    /// A single drop-tail FIFO with these limits.
    pub fn new(limit_packets: u64, limit_bytes: u64) -> Self {
        Queue::Fifo(Fifo::new(limit_packets, limit_bytes))
    }

    /// The queue `cfg` describes: a FIFO without classes, per-class queues with them (`cfg` is
    /// validated: names, limits and rules are checked by `load.rs`).
    pub fn from_config(cfg: &QueueConfig) -> Self {
        if cfg.classes.is_empty() {
            Queue::new(cfg.limit_packets, cfg.limit_bytes)
        } else {
            Queue::Classes(Box::new(ClassQueues::new(cfg)))
        }
    }

    /// Appends `p` offered at `now_ns`, or gives it back when a limit would be exceeded.
    pub fn push(&mut self, now_ns: u64, p: Vec<u8>) -> Result<(), Vec<u8>> {
        match self {
            Queue::Fifo(q) => q.push(p),
            Queue::Classes(q) => q.push(now_ns, p),
        }
    }

    /// Length of the packet [`Queue::pop`] would give next.
    pub fn front_len(&mut self) -> Option<usize> {
        match self {
            Queue::Fifo(q) => q.front_len(),
            Queue::Classes(q) => q.front_len(),
        }
    }

    /// Takes the next packet; `now_ns` is when it leaves the queue (queueing-delay counters).
    pub fn pop(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        match self {
            Queue::Fifo(q) => q.pop(),
            Queue::Classes(q) => q.pop(now_ns),
        }
    }

    /// The queue as a packet source for a frame starting at `now_ns`.
    pub fn at(&mut self, now_ns: u64) -> QueueAt<'_> {
        QueueAt {
            queue: self,
            now_ns,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Gives back the room a FIFO reserves up front: a beam's terminal (most of them idle) grows
    /// its queue as packets come.
    pub(crate) fn release_reserve(&mut self) {
        if let Queue::Fifo(q) = self {
            q.packets.shrink_to_fit();
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Queue::Fifo(q) => q.len(),
            Queue::Classes(q) => q.len(),
        }
    }

    pub fn bytes(&self) -> u64 {
        match self {
            Queue::Fifo(q) => q.bytes(),
            Queue::Classes(q) => q.bytes(),
        }
    }

    /// Per-class status (empty without classes).
    pub fn class_status(&self) -> Vec<ClassStatus> {
        match self {
            Queue::Fifo(_) => Vec::new(),
            Queue::Classes(q) => q.status(),
        }
    }
}

/// The queue seen from a frame starting at `now_ns` (see `framing::PacketSource`).
pub struct QueueAt<'a> {
    pub(crate) queue: &'a mut Queue,
    pub(crate) now_ns: u64,
}

/// FIFO, drop-tail, limited in packets and in bytes.
#[derive(Debug)]
pub struct Fifo {
    packets: VecDeque<Vec<u8>>,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

impl Fifo {
    pub fn new(limit_packets: u64, limit_bytes: u64) -> Self {
        // Reserve a little up front; the deque grows to at most limit_packets entries.
        let cap = limit_packets.min(4096) as usize;
        Fifo {
            packets: VecDeque::with_capacity(cap),
            bytes: 0,
            limit_packets,
            limit_bytes,
        }
    }

    /// Appends `p`, or gives it back when a limit would be exceeded (drop-tail).
    pub fn push(&mut self, p: Vec<u8>) -> Result<(), Vec<u8>> {
        let len = p.len() as u64;
        if self.packets.len() as u64 >= self.limit_packets || self.bytes + len > self.limit_bytes {
            return Err(p);
        }
        self.bytes += len;
        self.packets.push_back(p);
        Ok(())
    }

    pub fn front_len(&self) -> Option<usize> {
        self.packets.front().map(Vec::len)
    }

    pub fn pop(&mut self) -> Option<Vec<u8>> {
        let p = self.packets.pop_front()?;
        self.bytes -= p.len() as u64;
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_tail_packets_and_bytes() {
        let mut q = Queue::new(3, 2500);
        assert!(q.push(0, vec![0; 1000]).is_ok());
        assert!(q.push(0, vec![0; 1000]).is_ok());
        assert!(q.push(0, vec![0; 1000]).is_err()); // bytes
        assert!(q.push(0, vec![0; 400]).is_ok());
        assert!(q.push(0, vec![0; 10]).is_err()); // packets
        assert_eq!((q.len(), q.bytes()), (3, 2400));
        assert_eq!(q.pop(0).unwrap().len(), 1000);
        assert_eq!(q.bytes(), 1400);
        assert!(q.class_status().is_empty());
    }

    #[test]
    fn no_classes_is_the_single_fifo() {
        let q = Queue::from_config(&QueueConfig::default());
        assert!(matches!(q, Queue::Fifo(_)));
    }
}
