//! The identity of a TCP data segment: the key of an Oracle ETEN notice (ETEN report (BBN TR 8333) section 2, "Oracle
//! ETEN": the sender is told instantly and perfectly which segment the link lost).
//!
//! The key is 16 bytes laid out as the end hosts' BPF map key (`endhosts/bpf/`, docs/
//! emulator-contract.md "Oracle ETEN"):
//!
//! ```text
//! struct eten_key { __be32 saddr; __be32 daddr; __be16 sport; __be16 dport; __be32 seq; }
//! ```
//!
//! every field copied byte for byte from the packet's IPv4 and TCP headers (network byte order),
//! saddr/sport being the data packet's source (the TCP sender). Only IPv4 TCP segments that carry
//! payload have a key: a segment without payload (a pure ACK) is never retransmitted, so there is
//! nothing for the sender to learn; IPv6 has no key in this format; a non-first IPv4 fragment has
//! no TCP header.
//!
//! The bit-error stage takes the key before it flips anything (the oracle knows the truth even
//! when the header was hit). Headers are read with `crates/packet`.

use packet::{ethernet, ip_proto, ipv4, tcp};

use crate::bit_errors::link_header;

/// Length of a [`SegmentKey`].
pub const KEY_LEN: usize = 16;

/// `struct eten_key` as bytes (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SegmentKey(pub [u8; KEY_LEN]);

impl SegmentKey {
    /// The TCP sequence number of the segment.
    pub fn seq(&self) -> u32 {
        u32::from_be_bytes([self.0[12], self.0[13], self.0[14], self.0[15]])
    }
}

/// The key of an Ethernet frame (optionally one 802.1Q / 802.1ad tag) carrying an IPv4 TCP
/// segment with payload; `None` for anything else. Lengths come from the IPv4 total length, not
/// the frame length, so Ethernet padding of a short frame is not mistaken for payload (a total
/// length beyond the frame is cut to the frame).
pub fn tcp_data_key(frame: &[u8]) -> Option<SegmentKey> {
    let (l2, ethertype) = link_header(frame);
    if frame.len() < l2 + ipv4::HEADER_LEN || ethertype != Some(ethernet::ethertype::IPV4) {
        return None;
    }
    let ip = ipv4::Packet::new_unchecked(&frame[l2..]);
    let ihl = usize::from(ip.header_len());
    if ip.version() != 4
        || ip.protocol() != ip_proto::TCP
        || ihl < ipv4::HEADER_LEN
        || ip.is_later_fragment()
    {
        return None;
    }
    let total = usize::from(ip.total_len()).min(frame.len() - l2);
    if total < ihl + tcp::HEADER_LEN {
        return None;
    }
    // Header and payload, `total - ihl` bytes: malformed (a data offset below 20 or past the
    // segment) or without payload has no key.
    let seg = tcp::Packet::new_checked(ip.payload()).ok()?;
    if seg.payload().is_empty() {
        return None;
    }
    let mut k = [0u8; KEY_LEN];
    k[0..4].copy_from_slice(&ip.src_addr().octets());
    k[4..8].copy_from_slice(&ip.dst_addr().octets());
    k[8..10].copy_from_slice(&seg.src_port().to_be_bytes());
    k[10..12].copy_from_slice(&seg.dst_port().to_be_bytes());
    k[12..16].copy_from_slice(&seg.seq_number().to_be_bytes());
    Some(SegmentKey(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet (optionally tagged) + IPv4 10.1.2.3 -> 10.4.5.6 (IHL `ihl_words`) + TCP
    /// 40000 -> 5201, seq 0xdeadbeef (data offset `doff_words`) + `payload` bytes.
    fn frame(vlan: bool, ihl_words: u8, proto: u8, doff_words: u8, payload: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x2a]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let ihl = ihl_words as usize * 4;
        let doff = doff_words as usize * 4;
        let total = (ihl + doff + payload) as u16;
        let mut ip = vec![
            0x40 | ihl_words,
            0,
            0,
            0,
            0x12,
            0x34,
            0x40,
            0,
            64,
            proto,
            0,
            0,
        ];
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip.extend_from_slice(&[10, 1, 2, 3, 10, 4, 5, 6]);
        ip.resize(ihl, 1); // options: NOP
        f.extend_from_slice(&ip);
        let mut tcp = vec![0x9c, 0x40, 0x14, 0x51, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1];
        tcp.extend_from_slice(&[doff_words << 4, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        tcp.resize(doff, 1);
        f.extend_from_slice(&tcp);
        f.extend((0..payload).map(|i| i as u8));
        f
    }

    const KEY: [u8; 16] = [
        10, 1, 2, 3, 10, 4, 5, 6, 0x9c, 0x40, 0x14, 0x51, 0xde, 0xad, 0xbe, 0xef,
    ];

    #[test]
    fn plain_segment_gives_header_bytes_in_network_order() {
        let k = tcp_data_key(&frame(false, 5, 6, 5, 100)).unwrap();
        assert_eq!(k.0, KEY);
        assert_eq!(k.seq(), 0xdeadbeef);
    }

    #[test]
    fn ip_options_tcp_options_and_vlan_tag_are_skipped_over() {
        assert_eq!(tcp_data_key(&frame(false, 8, 6, 5, 1)).unwrap().0, KEY);
        assert_eq!(tcp_data_key(&frame(false, 5, 6, 8, 1)).unwrap().0, KEY);
        assert_eq!(tcp_data_key(&frame(true, 15, 6, 15, 1)).unwrap().0, KEY);
    }

    #[test]
    fn non_tcp_and_non_ipv4_have_no_key() {
        assert_eq!(tcp_data_key(&frame(false, 5, 17, 5, 100)), None);
        let mut v6 = frame(false, 5, 6, 5, 100);
        v6[12..14].copy_from_slice(&[0x86, 0xdd]);
        assert_eq!(tcp_data_key(&v6), None);
        let mut arp = frame(false, 5, 6, 5, 100);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(tcp_data_key(&arp), None);
    }

    #[test]
    fn segment_without_payload_has_no_key_even_when_padded() {
        assert_eq!(tcp_data_key(&frame(false, 5, 6, 5, 0)), None);
        assert_eq!(tcp_data_key(&frame(false, 5, 6, 8, 0)), None);
        // A pure ACK padded to the 60-byte Ethernet minimum: the padding is not payload.
        let mut padded = frame(false, 5, 6, 5, 0);
        padded.resize(60, 0);
        assert_eq!(tcp_data_key(&padded), None);
    }

    #[test]
    fn truncated_and_non_first_fragments_have_no_key() {
        let f = frame(false, 5, 6, 5, 10);
        for n in [0, 14, 33, 40, 53] {
            assert_eq!(tcp_data_key(&f[..n]), None, "{n} bytes");
        }
        let mut frag = f.clone();
        frag[14 + 7] = 0x10; // fragment offset 16 (x 8 bytes)
        assert_eq!(tcp_data_key(&frag), None);
        let mut bad_ihl = f;
        bad_ihl[14] = 0x44;
        assert_eq!(tcp_data_key(&bad_ihl), None);
    }
}
