//! Flow identification: which flow (addresses, protocol, ports) and which TCP sequence a frame
//! carries. The emulator attaches a [`FlowKey`] to every per-packet link event so that the
//! gateway (ETEN/CETEN, IP-ERN) can tie an event to a connection.

use crate::{ethernet, icmp, ip_proto, ipv4, ipv6, tcp, udp};
use std::net::IpAddr;

/// The flow a packet belongs to, and its place in the flow.
///
/// | protocol            | `sport` / `dport`           | `seq`                          |
/// |---------------------|-----------------------------|--------------------------------|
/// | TCP                 | ports                       | sequence number                |
/// | UDP                 | ports                       | `None`                         |
/// | ICMPv4 echo         | identifier / 0              | echo sequence number           |
/// | other, or a non-first IPv4 fragment | 0 / 0        | `None`                         |
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol (IPv6: the fixed header's next header; extension headers are not walked).
    pub proto: u8,
    /// Source port (see the table above).
    pub sport: u16,
    /// Destination port.
    pub dport: u16,
    /// TCP sequence number, ICMP echo sequence, or `None`.
    pub seq: Option<u32>,
}

impl FlowKey {
    /// Parses an Ethernet frame (untagged or VLAN-tagged) carrying IPv4 or IPv6.
    ///
    /// Returns `None` for other EtherTypes and truncated or malformed headers. Checksums are not
    /// verified: a caller that knows the header may be damaged (the emulator knows where it
    /// injected bit errors) decides whether to trust the result; see [`FlowKey::parse_verified`].
    pub fn parse(frame: &[u8]) -> Option<FlowKey> {
        let eth = ethernet::Frame::new_checked(frame).ok()?;
        Self::parse_ip_with_type(eth.payload_ethertype(), eth.payload())
    }

    /// Like [`FlowKey::parse`], but `None` also when the IPv4 header checksum fails.
    pub fn parse_verified(frame: &[u8]) -> Option<FlowKey> {
        let eth = ethernet::Frame::new_checked(frame).ok()?;
        if eth.payload_ethertype() == ethernet::ethertype::IPV4
            && !ipv4::Packet::new_checked(eth.payload())
                .ok()?
                .verify_checksum()
        {
            return None;
        }
        Self::parse_ip_with_type(eth.payload_ethertype(), eth.payload())
    }

    /// Parses a bare IP packet (as a TUN device gives it), IPv4 or IPv6 by its version nibble.
    pub fn parse_ip(packet: &[u8]) -> Option<FlowKey> {
        match packet.first()? >> 4 {
            4 => Self::parse_ip_with_type(ethernet::ethertype::IPV4, packet),
            6 => Self::parse_ip_with_type(ethernet::ethertype::IPV6, packet),
            _ => None,
        }
    }

    fn parse_ip_with_type(ethertype: u16, packet: &[u8]) -> Option<FlowKey> {
        let (src, dst, proto, l4, later_fragment) = match ethertype {
            ethernet::ethertype::IPV4 => {
                let ip = ipv4::Packet::new_checked(packet).ok()?;
                let l4 = &packet[usize::from(ip.header_len())..usize::from(ip.total_len())];
                (
                    IpAddr::V4(ip.src_addr()),
                    IpAddr::V4(ip.dst_addr()),
                    ip.protocol(),
                    l4,
                    ip.is_later_fragment(),
                )
            }
            ethernet::ethertype::IPV6 => {
                let ip = ipv6::Packet::new_checked(packet).ok()?;
                let l4 =
                    &packet[ipv6::HEADER_LEN..ipv6::HEADER_LEN + usize::from(ip.payload_len())];
                (
                    IpAddr::V6(ip.src_addr()),
                    IpAddr::V6(ip.dst_addr()),
                    ip.next_header(),
                    l4,
                    false,
                )
            }
            _ => return None,
        };
        let mut key = FlowKey {
            src,
            dst,
            proto,
            sport: 0,
            dport: 0,
            seq: None,
        };
        if later_fragment {
            return Some(key);
        }
        match proto {
            ip_proto::TCP => {
                let t = tcp::Packet::new_checked(l4).ok()?;
                key.sport = t.src_port();
                key.dport = t.dst_port();
                key.seq = Some(t.seq_number());
            }
            ip_proto::UDP => {
                // Only the ports are needed: do not insist on the length field being consistent.
                if l4.len() < udp::HEADER_LEN {
                    return None;
                }
                let u = udp::Packet::new_unchecked(l4);
                key.sport = u.src_port();
                key.dport = u.dst_port();
            }
            ip_proto::ICMP if src.is_ipv4() => {
                let i = icmp::Packet::new_checked(l4).ok()?;
                if matches!(
                    i.msg_type(),
                    icmp::msg_type::ECHO_REQUEST | icmp::msg_type::ECHO_REPLY
                ) {
                    key.sport = i.echo_ident();
                    key.seq = Some(u32::from(i.echo_seq_no()));
                }
            }
            _ => {}
        }
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn eth(ethertype: [u8; 2], ip: &[u8]) -> Vec<u8> {
        let mut v = vec![
            2,
            0,
            0,
            0,
            0,
            2,
            2,
            0,
            0,
            0,
            0,
            1,
            ethertype[0],
            ethertype[1],
        ];
        v.extend_from_slice(ip);
        v
    }

    // IPv4 10.0.0.1 -> 10.0.0.2 TCP 40000 -> 5201 seq 0x01020304 "hi!" (see tcp.rs, ipv4.rs).
    static TCP_IP_BYTES: [u8; 43] = [
        0x45, 0x00, 0x00, 0x2b, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x97, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x14, 0x51, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b,
        0x0c, 0x0d, 0x50, 0x18, 0xfa, 0xf0, 0x4c, 0xbd, 0x00, 0x00, 0x68, 0x69, 0x21,
    ];
    static UDP_IP_BYTES: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x97, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x13, 0x88, 0x14, 0x51, 0x00, 0x0c, 0xff, 0x33, 0x61, 0x62,
        0x63, 0x64,
    ];
    static ICMP_IP_BYTES: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x40, 0x00, 0x40, 0x01, 0x14, 0xa7, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x08, 0x00, 0x18, 0xe6, 0x00, 0x42, 0x00, 0x07, 0x70, 0x69,
        0x6e, 0x67,
    ];

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    #[test]
    fn tcp_flow() {
        let k = FlowKey::parse(&eth([0x08, 0x00], &TCP_IP_BYTES)).unwrap();
        assert_eq!(
            k,
            FlowKey {
                src: A,
                dst: B,
                proto: 6,
                sport: 40000,
                dport: 5201,
                seq: Some(0x0102_0304)
            }
        );
        assert_eq!(FlowKey::parse_ip(&TCP_IP_BYTES), Some(k));
    }

    #[test]
    fn udp_and_icmp_flows() {
        let k = FlowKey::parse(&eth([0x08, 0x00], &UDP_IP_BYTES)).unwrap();
        assert_eq!((k.proto, k.sport, k.dport, k.seq), (17, 5000, 5201, None));
        let k = FlowKey::parse(&eth([0x08, 0x00], &ICMP_IP_BYTES)).unwrap();
        assert_eq!((k.proto, k.sport, k.dport, k.seq), (1, 0x42, 0, Some(7)));
    }

    #[test]
    fn vlan_tagged() {
        let mut f = eth([0x08, 0x00], &TCP_IP_BYTES);
        ethernet::insert_vlan_tag(
            &mut f,
            ethernet::VlanTag {
                tpid: 0x8100,
                pcp: 0,
                dei: false,
                vid: 7,
            },
        );
        assert_eq!(FlowKey::parse(&f).unwrap().sport, 40000);
    }

    #[test]
    fn later_fragment_has_no_ports() {
        let mut ip = TCP_IP_BYTES;
        ip[6] = 0x00;
        ip[7] = 0x10; // offset 128 bytes
        let k = FlowKey::parse(&eth([0x08, 0x00], &ip)).unwrap();
        assert_eq!((k.sport, k.dport, k.seq), (0, 0, None));
    }

    #[test]
    fn verified_rejects_damaged_ip_header_and_others_are_none() {
        let mut ip = TCP_IP_BYTES;
        ip[15] ^= 0x01; // source address bit
        assert!(FlowKey::parse(&eth([0x08, 0x00], &ip)).is_some());
        assert!(FlowKey::parse_verified(&eth([0x08, 0x00], &ip)).is_none());
        assert!(FlowKey::parse_verified(&eth([0x08, 0x00], &TCP_IP_BYTES)).is_some());
        assert!(FlowKey::parse(&eth([0x08, 0x06], &[0; 28])).is_none());
        assert!(FlowKey::parse(&eth([0x08, 0x00], &TCP_IP_BYTES[..30])).is_none());
    }

    #[test]
    fn ipv6_udp() {
        let mut ip = vec![0x60, 0, 0, 0, 0, 12, 17, 64];
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        ip.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        ip.extend_from_slice(&UDP_IP_BYTES[20..]);
        let k = FlowKey::parse(&eth([0x86, 0xdd], &ip)).unwrap();
        assert_eq!(k.src, "fd00::1".parse::<IpAddr>().unwrap());
        assert_eq!((k.proto, k.sport, k.dport), (17, 5000, 5201));
    }
}
