//! GSE-like encapsulation and frame packing (BBFrames, RCS2 bursts).
//!
//! Overheads (ETSI TS 102 606 GSE; the whole Ethernet frame is the PDU):
//! - complete packet: base header 2 (S, E, label type, 12-bit GSE length) + protocol type 2 +
//!   label (0, 3 or 6 bytes);
//! - first fragment: base header 2 + fragment id 1 + total length 2 + protocol type 2 + label;
//! - intermediate fragment: base header 2 + fragment id 1;
//! - last fragment: base header 2 + fragment id 1 + CRC-32 4 (after the data).
//!
//! Packing a frame of `room` data bytes: first the remainder of a packet fragmented in the
//! previous frame (as a last fragment if it fits, else an intermediate fragment), then whole
//! packets from the queue while they fit, then, if at least the first-fragment header and one
//! byte fit, the next packet starts as a first fragment that fills the frame. Whatever is left
//! (less than a fragment header) is padding. A packet is never dropped for lack of room (the fix of
//! OpenSAND's packing bug): it waits for the next frame, which starts at once. Not modelled: GSE's
//! 4095-byte limit per GSE packet and the 256 fragment ids (one fragmented packet at a time here).

/// GSE header sizes for a label length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gse {
    pub label_bytes: u32,
}

impl Gse {
    pub fn complete_overhead(&self) -> u32 {
        4 + self.label_bytes
    }
    pub fn first_header(&self) -> u32 {
        7 + self.label_bytes
    }
    pub const MIDDLE_HEADER: u32 = 3;
    pub const LAST_OVERHEAD: u32 = 7;
}

/// A packet whose first fragments have been sent.
#[derive(Debug)]
pub struct Partial {
    pub frame: Vec<u8>,
    /// PDU bytes not sent yet (>= 1).
    pub remaining: u32,
    /// A frame that carried one of its fragments was erased.
    pub erased: bool,
}

/// Result of packing one frame.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Packed {
    /// The carried-over partial packet (still partial after this frame) got a fragment here.
    pub partial_touched: bool,
    /// Bytes of GSE packets (headers + data) in the frame; the rest is padding.
    pub gse_bytes: u32,
}

/// Packs one frame of `room` bytes. Packets completed in this frame are appended to `completes`
/// with their "an earlier fragment was erased" flag; `partial` is updated.
pub fn pack<Q>(
    gse: Gse,
    mut room: u32,
    partial: &mut Option<Partial>,
    queue: &mut Q,
    completes: &mut Vec<(Vec<u8>, bool)>,
) -> Packed
where
    Q: PacketSource,
{
    let mut packed = Packed::default();
    let total = room;
    if let Some(p) = partial.as_mut() {
        if room >= Gse::LAST_OVERHEAD + p.remaining {
            room -= Gse::LAST_OVERHEAD + p.remaining;
            let p = partial.take().expect("partial present");
            completes.push((p.frame, p.erased));
        } else {
            if room > Gse::MIDDLE_HEADER && p.remaining > 1 {
                let n = (room - Gse::MIDDLE_HEADER).min(p.remaining - 1);
                p.remaining -= n;
                room -= Gse::MIDDLE_HEADER + n;
                packed.partial_touched = true;
            }
            packed.gse_bytes = total - room;
            return packed;
        }
    }
    while let Some(len) = queue.front_len() {
        let len = len as u32;
        if gse.complete_overhead() + len <= room {
            room -= gse.complete_overhead() + len;
            completes.push((queue.pop_front().expect("front"), false));
        } else {
            if room > gse.first_header() {
                let n = room - gse.first_header();
                let frame = queue.pop_front().expect("front");
                *partial = Some(Partial {
                    frame,
                    remaining: len - n,
                    erased: false,
                });
                room = 0;
                packed.partial_touched = true;
            }
            break;
        }
    }
    packed.gse_bytes = total - room;
    packed
}

/// Where `pack` takes packets from. `front_len` is the length of the packet `pop_front` would
/// give next (it may settle a scheduling choice, hence `&mut`; asking twice gives the same).
pub trait PacketSource {
    fn front_len(&mut self) -> Option<usize>;
    fn pop_front(&mut self) -> Option<Vec<u8>>;
}

impl PacketSource for crate::queue::QueueAt<'_> {
    fn front_len(&mut self) -> Option<usize> {
        self.queue.front_len()
    }
    fn pop_front(&mut self) -> Option<Vec<u8>> {
        self.queue.pop(self.now_ns)
    }
}

impl PacketSource for std::collections::VecDeque<Vec<u8>> {
    fn front_len(&mut self) -> Option<usize> {
        self.front().map(Vec::len)
    }
    fn pop_front(&mut self) -> Option<Vec<u8>> {
        std::collections::VecDeque::pop_front(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn complete_then_fragment_then_last() {
        let gse = Gse { label_bytes: 3 };
        let mut q: VecDeque<Vec<u8>> = VecDeque::from(vec![vec![1u8; 1000], vec![2u8; 1000]]);
        let mut partial = None;
        let mut done = Vec::new();
        // 1500 bytes: packet 1 complete (1007), then 493 left: first fragment 10 + 483 data.
        let p = pack(gse, 1500, &mut partial, &mut q, &mut done);
        assert_eq!(done.len(), 1);
        assert_eq!(
            p,
            Packed {
                partial_touched: true,
                gse_bytes: 1500
            }
        );
        assert_eq!(partial.as_ref().unwrap().remaining, 517);
        // Next frame: 300 bytes: intermediate fragment 3 + 297.
        done.clear();
        let p = pack(gse, 300, &mut partial, &mut q, &mut done);
        assert!(done.is_empty() && p.partial_touched);
        assert_eq!(partial.as_ref().unwrap().remaining, 220);
        // Next: last fragment 7 + 220 = 227, padding after.
        let p = pack(gse, 300, &mut partial, &mut q, &mut done);
        assert_eq!(done.len(), 1);
        assert!(partial.is_none() && !p.partial_touched);
        assert_eq!(p.gse_bytes, 227);
    }

    #[test]
    fn never_drops_when_room_is_small() {
        // OpenSAND's bug: room left smaller than a fragment header dropped the packet.
        let gse = Gse { label_bytes: 6 };
        let mut q: VecDeque<Vec<u8>> = VecDeque::from(vec![vec![0u8; 990], vec![0u8; 1400]]);
        let mut partial = None;
        let mut done = Vec::new();
        let p = pack(gse, 1005, &mut partial, &mut q, &mut done); // 1000 used, 5 left < 13+1
        assert_eq!(done.len(), 1);
        assert!(partial.is_none());
        assert_eq!(p.gse_bytes, 1000);
        assert_eq!(q.len(), 1); // still queued, not dropped
    }
}
