//! Oracle ETEN (ETEN report (BBN TR 8333) sections 2 and 3): the report's upper bound, "the sender is told instantly and
//! perfectly". For every IPv4 TCP segment with payload that a direction corrupts or erases, the
//! direction thread writes a notice straight into the sender host's pinned BPF map; the end
//! host's congestion control (endhosts/bpf/) looks the segment up when its kernel detects the
//! loss and keeps its window if it finds it.
//!
//! Map contract (docs/emulator-contract.md "Oracle ETEN"): a BPF_MAP_TYPE_LRU_HASH, key
//! `struct eten_key { __be32 saddr, daddr; __be16 sport, dport; __be32 seq; }` (16 bytes, the
//! packet's header bytes: `linkmodel::segment`), value `struct eten_val { __u64 t_ns; __u32 code;
//! __u32 source; }` (16 bytes, host byte order), updated with BPF_ANY.
//!
//! When: the notice is written when the loss comes out of the link model, i.e. at the time the
//! packet would have reached the far end of the link (the report's error module sits after the
//! delay element, so that is where corruption is detected and reported). The sender's kernel
//! learns of the loss from duplicate ACKs at least half a round trip later, so the notice is
//! always there first. Queue drops are congestion, never notified.

use linkmodel::segment::{self, SegmentKey, KEY_LEN};
use linkmodel::{LossCause, Outcome};
use netio::bpfmap::{BpfMap, BPF_ANY, MAP_TYPE_LRU_HASH};
use netio::sys;
use packet::eten::code;
use std::io;
use std::path::Path;

/// Length of `struct eten_val`.
pub const VALUE_LEN: usize = 16;
/// `eten_val.source` of a notice written by this oracle (the end hosts' BETEN tc program writes
/// 2).
pub const SOURCE_ORACLE: u32 = 1;

/// A direction's handle on the sender host's notice map.
#[derive(Debug)]
pub struct Oracle {
    map: BpfMap,
}

impl Oracle {
    /// Opens the map pinned at `path` and checks it has the contract's type and sizes.
    pub fn open(path: &Path) -> io::Result<Oracle> {
        let map = BpfMap::open_pinned(path)?;
        map.expect_layout(MAP_TYPE_LRU_HASH, KEY_LEN as u32, VALUE_LEN as u32)?;
        Ok(Oracle { map })
    }

    /// Writes one notice, stamped with CLOCK_MONOTONIC now (the clock of bpf_ktime_get_ns).
    pub fn notify(&self, key: &SegmentKey, code: u8) -> io::Result<()> {
        let v = value(sys::monotonic_ns(), code);
        self.map.update(&key.0, &v, BPF_ANY)
    }
}

/// The notice an outcome calls for: the segment and its code (`packet::eten::code`), or `None`
/// (delivered intact, a queue drop, or not an IPv4 TCP segment with payload).
pub fn notice_of(o: &Outcome) -> Option<(SegmentKey, u8)> {
    match o {
        Outcome::Deliver {
            corrupted: Some(h), ..
        }
        | Outcome::Lost {
            cause: LossCause::Corruption(h),
            ..
        } => h.segment.map(|k| (k, code::CORRUPTED)),
        // An erased packet was never touched: its own bytes are the truth.
        Outcome::Lost {
            frame,
            cause: LossCause::FrameErasure,
        } => segment::tcp_data_key(frame).map(|k| (k, code::ERASED)),
        Outcome::Deliver {
            corrupted: None, ..
        }
        | Outcome::Lost {
            cause: LossCause::QueueDrop,
            ..
        } => None,
    }
}

/// `struct eten_val` bytes.
pub fn value(t_ns: u64, code: u8) -> [u8; VALUE_LEN] {
    let mut v = [0u8; VALUE_LEN];
    v[0..8].copy_from_slice(&t_ns.to_ne_bytes());
    v[8..12].copy_from_slice(&u32::from(code).to_ne_bytes());
    v[12..16].copy_from_slice(&SOURCE_ORACLE.to_ne_bytes());
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkmodel::{Hit, HitRegion};

    fn tcp_frame(seq: u32, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14 + 40 + payload];
        f[12] = 0x08;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&((40 + payload) as u16).to_be_bytes());
        f[23] = 6;
        f[26..34].copy_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f[34..38].copy_from_slice(&[0x9c, 0x40, 0x14, 0x51]);
        f[38..42].copy_from_slice(&seq.to_be_bytes());
        f[46] = 0x50;
        f
    }

    fn hit(segment: Option<SegmentKey>) -> Hit {
        Hit {
            where_: HitRegion::IpHeader,
            bits_flipped: 3,
            segment,
        }
    }

    #[test]
    fn corrupted_packets_use_the_key_read_before_the_flips() {
        let before = segment::tcp_data_key(&tcp_frame(77, 10)).unwrap();
        let mut flipped = tcp_frame(77, 10);
        flipped[27] ^= 0x01; // source address hit
        for o in [
            Outcome::Deliver {
                frame: flipped.clone(),
                corrupted: Some(hit(Some(before))),
            },
            Outcome::Lost {
                frame: flipped,
                cause: LossCause::Corruption(hit(Some(before))),
            },
        ] {
            assert_eq!(notice_of(&o), Some((before, code::CORRUPTED)));
        }
        // No key (not a TCP data segment): no notice.
        let o = Outcome::Deliver {
            frame: tcp_frame(1, 0),
            corrupted: Some(hit(None)),
        };
        assert_eq!(notice_of(&o), None);
    }

    #[test]
    fn erasures_are_notified_and_queue_drops_and_intact_packets_are_not() {
        let erased = Outcome::Lost {
            frame: tcp_frame(5, 100),
            cause: LossCause::FrameErasure,
        };
        let (k, c) = notice_of(&erased).unwrap();
        assert_eq!((k.seq(), c), (5, code::ERASED));
        let erased_ack = Outcome::Lost {
            frame: tcp_frame(5, 0),
            cause: LossCause::FrameErasure,
        };
        assert_eq!(notice_of(&erased_ack), None);
        let dropped = Outcome::Lost {
            frame: tcp_frame(5, 100),
            cause: LossCause::QueueDrop,
        };
        assert_eq!(notice_of(&dropped), None);
        let fine = Outcome::Deliver {
            frame: tcp_frame(5, 100),
            corrupted: None,
        };
        assert_eq!(notice_of(&fine), None);
    }

    #[test]
    fn value_layout_is_the_c_struct_in_host_order() {
        let v = value(0x0102_0304_0506_0708, code::ERASED);
        assert_eq!(
            u64::from_ne_bytes(v[0..8].try_into().unwrap()),
            0x0102_0304_0506_0708
        );
        assert_eq!(u32::from_ne_bytes(v[8..12].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_ne_bytes(v[12..16].try_into().unwrap()),
            SOURCE_ORACLE
        );
    }
}
