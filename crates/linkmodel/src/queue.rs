//! The transmit queue of a direction: FIFO, drop-tail, limited in packets and in bytes.
//! A packet is dropped on arrival if it would take the queue above either limit.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct Queue {
    packets: VecDeque<Vec<u8>>,
    bytes: u64,
    limit_packets: u64,
    limit_bytes: u64,
}

impl Queue {
    pub fn new(limit_packets: u64, limit_bytes: u64) -> Self {
        // Reserve a little up front; the deque grows to at most limit_packets entries.
        let cap = limit_packets.min(4096) as usize;
        Queue {
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

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    pub fn len(&self) -> usize {
        self.packets.len()
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
        assert!(q.push(vec![0; 1000]).is_ok());
        assert!(q.push(vec![0; 1000]).is_ok());
        assert!(q.push(vec![0; 1000]).is_err()); // bytes
        assert!(q.push(vec![0; 400]).is_ok());
        assert!(q.push(vec![0; 10]).is_err()); // packets
        assert_eq!((q.len(), q.bytes()), (3, 2400));
        assert_eq!(q.pop().unwrap().len(), 1000);
        assert_eq!(q.bytes(), 1400);
    }
}
