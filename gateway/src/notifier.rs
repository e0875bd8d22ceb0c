//! The ETEN notifier (BETEN form): turns a corrupted/erased link event on the incoming link into an
//! ETEN notice (crates/packet/src/eten.rs) addressed to the damaged packet's sender, queued on the
//! egress (the return path), rate limited, optionally authenticated.

use crate::config::{parse_hex, parse_mac, Eten};
use hmac::{Hmac, Mac};
use packet::{eten, ethernet, ip_proto, ipv4};
use sha2::Sha256;
use std::net::Ipv4Addr;

/// A link event as the emulator reports it (docs/emulator-contract.md).
#[derive(Debug, Clone, PartialEq)]
pub struct LinkEvent {
    /// `corrupted` or `erased` (others are not notified).
    pub erased: bool,
    /// Frame length, bytes (Ethernet header included).
    pub len: u32,
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// IP protocol.
    pub proto: u8,
    /// Ports (0 when not TCP/UDP).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// TCP sequence.
    pub seq: u32,
}

/// Token bucket.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    last_ns: u64,
}

impl TokenBucket {
    /// Full bucket.
    pub fn new(rate_per_s: f64, burst: f64) -> TokenBucket {
        TokenBucket {
            rate: rate_per_s,
            burst,
            tokens: burst,
            last_ns: 0,
        }
    }
    /// Takes one token if there is one.
    pub fn take(&mut self, now_ns: u64) -> bool {
        let dt = now_ns.saturating_sub(self.last_ns) as f64 * 1e-9;
        self.last_ns = now_ns;
        self.tokens = (self.tokens + dt * self.rate).min(self.burst);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Builds notices.
pub struct Notifier {
    source_ip: Ipv4Addr,
    key: Option<Vec<u8>>,
    seq: u16,
    bucket: TokenBucket,
    /// Configured MAC overrides (source, destination).
    pub mac_override: (Option<[u8; 6]>, Option<[u8; 6]>),
    /// Notify erasures too.
    pub notify_erased: bool,
}

impl Notifier {
    /// From the configuration (validated).
    pub fn new(c: &Eten) -> Notifier {
        Notifier {
            source_ip: c.source_ip.unwrap_or(Ipv4Addr::UNSPECIFIED),
            key: c.hmac_key_hex.as_deref().and_then(parse_hex),
            seq: 0,
            bucket: TokenBucket::new(c.rate_limit_per_s, c.burst),
            mac_override: (
                c.src_mac.as_deref().and_then(parse_mac),
                c.dst_mac.as_deref().and_then(parse_mac),
            ),
            notify_erased: c.notify_erased,
        }
    }

    /// Rate limit check.
    pub fn allow(&mut self, now_ns: u64) -> bool {
        self.bucket.take(now_ns)
    }

    /// The Ethernet frame of the notice for `ev`, from `src_mac` to `dst_mac`.
    pub fn build(&mut self, ev: &LinkEvent, src_mac: [u8; 6], dst_mac: [u8; 6]) -> Vec<u8> {
        let repr = eten::Repr {
            code: if ev.erased {
                eten::code::ERASED
            } else {
                eten::code::CORRUPTED
            },
            notice_seq: self.seq,
            src: ev.src,
            dst: ev.dst,
            protocol: ev.proto,
            total_len: ev.len.saturating_sub(14).min(65535) as u16,
            src_port: ev.sport,
            dst_port: ev.dport,
            seq: ev.seq,
            with_mac: self.key.is_some(),
        };
        self.seq = self.seq.wrapping_add(1);
        let icmp_len = repr.buffer_len();
        let mut f = vec![0u8; 14 + 20 + icmp_len];
        {
            let mut e = ethernet::Frame::new_unchecked(&mut f[..]);
            e.set_dst_addr(ethernet::Address(dst_mac));
            e.set_src_addr(ethernet::Address(src_mac));
            e.set_ethertype(ethernet::ethertype::IPV4);
        }
        {
            let mut ip = ipv4::Packet::new_unchecked(&mut f[14..34]);
            ip.set_version_and_header_len(20);
            ip.set_total_len((20 + icmp_len) as u16);
            ip.set_ident(repr.notice_seq);
            ip.set_flags_and_frag_offset(true, false, 0);
            ip.set_ttl(64);
            ip.set_protocol(ip_proto::ICMP);
            ip.set_src_addr(self.source_ip);
            ip.set_dst_addr(ev.src);
            ip.fill_checksum();
        }
        let mut p = eten::Packet::new_unchecked(&mut f[34..]);
        repr.emit(&mut p);
        if let Some(k) = &self.key {
            let mut m = Hmac::<Sha256>::new_from_slice(k).expect("HMAC takes any key length");
            m.update(&p.mac_input());
            let full = m.finalize().into_bytes();
            let mut mac = [0u8; eten::MAC_LEN];
            mac.copy_from_slice(&full[..eten::MAC_LEN]);
            p.set_mac(&mac);
            p.fill_checksum();
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> Eten {
        Eten {
            enabled: true,
            source_ip: Some(Ipv4Addr::new(10, 0, 0, 2)),
            hmac_key_hex: Some(hex("satlab-test-key")),
            ..Eten::default()
        }
    }

    fn hex(s: &str) -> String {
        s.bytes().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn notice_frame_matches_the_documented_bytes() {
        let mut n = Notifier::new(&cfg());
        n.seq = 8;
        let ev = LinkEvent {
            erased: true,
            len: 1514,
            src: Ipv4Addr::new(10, 0, 1, 1),
            dst: Ipv4Addr::new(10, 0, 2, 1),
            proto: 6,
            sport: 5201,
            dport: 40000,
            seq: 0x0102_0304,
        };
        let f = n.build(&ev, [2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
        assert_eq!(f.len(), 14 + 20 + 52);
        let ip = ipv4::Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.dst_addr(), Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(ip.src_addr(), Ipv4Addr::new(10, 0, 0, 2));
        let p = eten::Packet::new_checked(&f[34..]).unwrap();
        let r = eten::Repr::parse(&p).unwrap();
        assert_eq!((r.src_port, r.dst_port, r.seq), (5201, 40000, 0x0102_0304));
        // Same bytes as the literal test of crates/packet/src/eten.rs (MAC included).
        assert_eq!(
            &f[34 + 36..],
            &[
                0xa8, 0x0f, 0x1c, 0x70, 0xd4, 0x54, 0x2a, 0x01, 0x5e, 0x27, 0x65, 0x56, 0xad, 0xc6,
                0x92, 0xaa
            ]
        );
        assert_eq!(n.seq, 9);
    }

    #[test]
    fn token_bucket() {
        let mut b = TokenBucket::new(10.0, 2.0);
        assert!(b.take(0));
        assert!(b.take(0));
        assert!(!b.take(0));
        assert!(!b.take(50_000_000)); // 0.5 token
        assert!(b.take(100_000_000)); // 1 token
    }
}
