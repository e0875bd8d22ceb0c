//! Which terminal of a beam a packet goes to: longest-prefix match of its IPv4 destination over
//! the terminals' prefixes (`beam.rs`), built once when the beam is built.
//!
//! One hash map per prefix length present, looked at from the longest length down: a packet
//! costs one lookup per distinct length (one in the usual beam where every terminal has a /24 or
//! a /32), whatever the number of terminals. The same prefix behind two terminals goes to the
//! first of them.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::terminals::Prefix;

/// The terminals' prefixes, by length.
#[derive(Debug, Default)]
pub(crate) struct PrefixTable {
    /// (prefix length, mask, network -> terminal), longest length first.
    by_len: Vec<(u8, u32, HashMap<u32, usize, NetHash>)>,
}

impl PrefixTable {
    /// The table of terminal `k`'s prefixes `prefixes[k]`.
    pub(crate) fn new(prefixes: &[Vec<Prefix>]) -> Self {
        let mut t = PrefixTable::default();
        for (k, ps) in prefixes.iter().enumerate() {
            for p in ps {
                let i = match t.by_len.iter().position(|e| e.0 <= p.len) {
                    Some(i) if t.by_len[i].0 == p.len => i,
                    at => {
                        let i = at.unwrap_or(t.by_len.len());
                        t.by_len.insert(i, (p.len, p.mask, HashMap::default()));
                        i
                    }
                };
                t.by_len[i].2.entry(p.net).or_insert(k);
            }
        }
        t
    }

    /// The terminal of the longest prefix holding `dst`, if any.
    pub(crate) fn lookup(&self, dst: u32) -> Option<usize> {
        self.by_len
            .iter()
            .find_map(|(_, mask, nets)| nets.get(&(dst & mask)).copied())
    }
}

/// An IPv4 address in an Ethernet frame (behind one optional 802.1Q tag): the 4 bytes at
/// `ipv4_at` into an IPv4 header, or at `arp_at` into an Ethernet/IPv4 ARP packet (RFC 826);
/// none for any other frame.
pub(crate) fn ipv4_address(frame: &[u8], ipv4_at: usize, arp_at: usize) -> Option<u32> {
    let mut off = 12;
    let mut ether = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if ether == 0x8100 {
        off += 4;
        ether = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    let l3 = off + 2;
    let at = match ether {
        0x0800 => l3 + ipv4_at,
        // Hardware address 6 bytes, protocol address 4.
        0x0806 if frame.get(l3 + 4..l3 + 6)? == [6, 4] => l3 + arp_at,
        _ => return None,
    };
    let a = frame.get(at..at + 4)?;
    Some(u32::from_be_bytes([a[0], a[1], a[2], a[3]]))
}

/// A multiplicative hash of a network address (Fibonacci hashing): the keys are few and not
/// chosen by an adversary, and SipHash would cost more than the rest of the lookup.
#[derive(Debug, Default)]
pub(crate) struct NetHasher(u64);

impl Hasher for NetHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type NetHash = BuildHasherDefault<NetHasher>;

#[cfg(test)]
mod tests {
    use super::*;

    fn table(prefixes: &[&[&str]]) -> PrefixTable {
        let ps: Vec<Vec<Prefix>> = prefixes
            .iter()
            .map(|t| t.iter().map(|s| Prefix::parse(s, "f").unwrap()).collect())
            .collect();
        PrefixTable::new(&ps)
    }

    fn ip(s: &str) -> u32 {
        u32::from(s.parse::<std::net::Ipv4Addr>().unwrap())
    }

    #[test]
    fn the_longest_prefix_wins_and_a_repeated_prefix_goes_to_the_first_terminal() {
        let t = table(&[
            &["10.0.0.0/8", "0.0.0.0/0"],
            &["10.0.2.0/24"],
            &["10.0.2.2", "10.0.2.0/24"],
        ]);
        assert_eq!(t.lookup(ip("10.0.2.2")), Some(2));
        assert_eq!(t.lookup(ip("10.0.2.3")), Some(1));
        assert_eq!(t.lookup(ip("10.9.9.9")), Some(0));
        assert_eq!(t.lookup(ip("192.168.1.1")), Some(0));
        assert_eq!(table(&[&["10.0.2.0/24"]]).lookup(ip("10.0.3.1")), None);
    }

    #[test]
    fn a_thousand_terminals_each_find_their_own() {
        let names: Vec<String> = (0..1000)
            .map(|k| format!("10.{}.{}.0/24", k / 256, k % 256))
            .collect();
        let refs: Vec<[&str; 1]> = names.iter().map(|s| [s.as_str()]).collect();
        let slices: Vec<&[&str]> = refs.iter().map(|r| &r[..]).collect();
        let t = table(&slices);
        for k in 0..1000 {
            assert_eq!(
                t.lookup(ip(&format!("10.{}.{}.7", k / 256, k % 256))),
                Some(k)
            );
        }
    }
}
