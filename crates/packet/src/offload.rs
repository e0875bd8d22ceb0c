//! Segmentation and checksum offload as Linux hands it to user space.
//!
//! A packet socket with `PACKET_VNET_HDR` (or a TAP device with `IFF_VNET_HDR`) prefixes every
//! frame with a `struct virtio_net_hdr` (10 bytes) that says two things the frame itself hides:
//! - `flags & NEEDS_CSUM`: the transport checksum is *partial* (the field holds only the folded
//!   pseudo-header sum; veth leaves TCP/UDP checksums like that). [`complete_checksum`] finishes it
//!   from `csum_start`/`csum_offset`, protocol-agnostic, as the kernel's `skb_checksum_help` does.
//! - `gso_type != NONE`: the frame is a GSO super-packet (up to 64 KiB) to be cut into
//!   `gso_size`-byte payloads. [`Gso`] cuts it into wire-sized frames exactly as the kernel's
//!   software GSO would (TCP: sequence numbers advance, FIN/PSH only on the last segment, CWR only
//!   on the first; IPv4 identification increments; every checksum complete).
//!
//! Supported GSO types: TCPv4, TCPv6, UDP_L4 (USO) over IPv4 and IPv6, with or without VLAN tags.
//! Legacy UFO (`GSO_UDP`, IP fragmentation) is reported as [`Error::Unsupported`].
//!
//! `hdr_len` from the kernel is the length of the linear part of the buffer, not the header
//! length, so it is ignored: headers are measured from the frame.

use crate::{checksum, ethernet, ipv4, ipv6, tcp, udp, Error, Result};
use std::net::IpAddr;

/// Size of `struct virtio_net_hdr` (without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;

/// `virtio_net_hdr.flags`: the checksum from `csum_start` to the end must be completed.
pub const VNET_HDR_F_NEEDS_CSUM: u8 = 1;
/// `virtio_net_hdr.flags`: the checksum was already verified by the sender's side.
pub const VNET_HDR_F_DATA_VALID: u8 = 2;

/// `virtio_net_hdr.gso_type` values.
pub mod gso_type {
    /// Not a GSO frame.
    pub const NONE: u8 = 0;
    /// TCP over IPv4.
    pub const TCPV4: u8 = 1;
    /// UDP fragmentation offload (legacy UFO).
    pub const UDP: u8 = 3;
    /// TCP over IPv6.
    pub const TCPV6: u8 = 4;
    /// UDP segmentation (USO), IPv4 or IPv6.
    pub const UDP_L4: u8 = 5;
    /// Flag: the TCP stream uses ECN (CWR only on the first segment).
    pub const ECN: u8 = 0x80;
}

/// `struct virtio_net_hdr`, in host byte order (what packet sockets and TAP use on a
/// little-endian host without `TUNSETVNETBE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VirtioNetHdr {
    /// `VNET_HDR_F_*` bits.
    pub flags: u8,
    /// One of [`gso_type`], possibly with [`gso_type::ECN`].
    pub gso_type: u8,
    /// Length of the linear head (kernel to user) or of the headers (user to kernel).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Offset of the start of the checksummed region (the transport header).
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

impl VirtioNetHdr {
    /// Reads the header from the first 10 bytes of `buf`.
    pub fn parse(buf: &[u8]) -> Result<VirtioNetHdr> {
        if buf.len() < VNET_HDR_LEN {
            return Err(Error::Truncated);
        }
        let u = |i: usize| u16::from_ne_bytes([buf[i], buf[i + 1]]);
        Ok(VirtioNetHdr {
            flags: buf[0],
            gso_type: buf[1],
            hdr_len: u(2),
            gso_size: u(4),
            csum_start: u(6),
            csum_offset: u(8),
        })
    }

    /// Writes the header into the first 10 bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8]) {
        buf[0] = self.flags;
        buf[1] = self.gso_type;
        buf[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        buf[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        buf[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        buf[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
    }

    /// Whether the frame is a GSO super-packet.
    pub fn is_gso(&self) -> bool {
        self.gso_type & !gso_type::ECN != gso_type::NONE
    }

    /// Whether the transport checksum is partial.
    pub fn needs_csum(&self) -> bool {
        self.flags & VNET_HDR_F_NEEDS_CSUM != 0
    }
}

/// Completes a partial checksum: the 16-bit field at `csum_start + csum_offset` holds the folded
/// pseudo-header sum; the one's-complement sum from `csum_start` to the end of `frame` is folded,
/// complemented and stored there (0 becomes 0xffff, as the kernel does).
pub fn complete_checksum(frame: &mut [u8], csum_start: usize, csum_offset: usize) -> Result<()> {
    let at = csum_start + csum_offset;
    if at + 2 > frame.len() {
        return Err(Error::Truncated);
    }
    let c = checksum::finish(checksum::data(&frame[csum_start..]));
    let c = if c == 0 { 0xffff } else { c };
    frame[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// Completes the checksum of `frame` if `hdr` says it is partial (no-op otherwise).
pub fn complete_if_partial(frame: &mut [u8], hdr: &VirtioNetHdr) -> Result<()> {
    if hdr.needs_csum() {
        complete_checksum(
            frame,
            usize::from(hdr.csum_start),
            usize::from(hdr.csum_offset),
        )
    } else {
        Ok(())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum L4 {
    Tcp,
    Udp,
}

/// A GSO super-packet, ready to be cut into [`Gso::count`] wire-sized frames.
///
/// ```ignore
/// let gso = Gso::new(&frame, &hdr)?;
/// for i in 0..gso.count() {
///     let mut seg = pool.take();
///     gso.write_segment(i, &mut seg);
///     send(seg);
/// }
/// ```
#[derive(Debug, Clone)]
pub struct Gso<'a> {
    frame: &'a [u8],
    l3: usize,
    l4: usize,
    hdr_end: usize,
    mss: usize,
    l4_kind: L4,
    v4: bool,
    count: usize,
}

impl<'a> Gso<'a> {
    /// Measures the headers of a super-packet described by `hdr`.
    pub fn new(frame: &'a [u8], hdr: &VirtioNetHdr) -> Result<Gso<'a>> {
        let eth = ethernet::Frame::new_checked(frame)?;
        let l3 = eth.header_len();
        let ip = frame.get(l3..).ok_or(Error::Truncated)?;
        let version = ip.first().ok_or(Error::Truncated)? >> 4;
        let (l4_kind, v4) = match (hdr.gso_type & !gso_type::ECN, version) {
            (gso_type::TCPV4, 4) => (L4::Tcp, true),
            (gso_type::TCPV6, 6) => (L4::Tcp, false),
            (gso_type::UDP_L4, 4) => (L4::Udp, true),
            (gso_type::UDP_L4, 6) => (L4::Udp, false),
            (gso_type::TCPV4 | gso_type::TCPV6 | gso_type::UDP_L4, _) => {
                return Err(Error::Malformed)
            }
            _ => return Err(Error::Unsupported),
        };
        let l4 = if hdr.needs_csum() {
            usize::from(hdr.csum_start)
        } else if v4 {
            l3 + usize::from(ipv4::Packet::new_checked(ip)?.header_len())
        } else {
            l3 + ipv6::HEADER_LEN
        };
        // `csum_start` is the sender's word: every segment rewrites the IP header, so the
        // transport header must start after it.
        let ip_header_len = if v4 {
            usize::from(ipv4::Packet::new_unchecked(ip).header_len()).max(ipv4::HEADER_LEN)
        } else {
            ipv6::HEADER_LEN
        };
        if l4 < l3 + ip_header_len {
            return Err(Error::Malformed);
        }
        let seg = frame.get(l4..).ok_or(Error::Truncated)?;
        let hdr_end = match l4_kind {
            L4::Tcp => l4 + usize::from(tcp::Packet::new_checked(seg)?.header_len()),
            L4::Udp => l4 + udp::HEADER_LEN,
        };
        if hdr_end > frame.len() {
            return Err(Error::Truncated);
        }
        let mss = usize::from(hdr.gso_size);
        if mss == 0 {
            return Err(Error::Malformed);
        }
        let payload = frame.len() - hdr_end;
        let count = payload.div_ceil(mss).max(1);
        Ok(Gso {
            frame,
            l3,
            l4,
            hdr_end,
            mss,
            l4_kind,
            v4,
            count,
        })
    }

    /// Number of segments.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Length of the headers copied in front of every segment.
    pub fn header_len(&self) -> usize {
        self.hdr_end
    }

    /// Writes segment `i` (0-based) as a complete frame into `out` (cleared first).
    pub fn write_segment(&self, i: usize, out: &mut Vec<u8>) {
        let start = self.hdr_end + i * self.mss;
        let end = (start + self.mss).min(self.frame.len());
        let last = i + 1 == self.count;
        out.clear();
        out.extend_from_slice(&self.frame[..self.hdr_end]);
        out.extend_from_slice(&self.frame[start.min(end)..end]);
        let total = out.len();
        let (src, dst): (IpAddr, IpAddr) = if self.v4 {
            let mut ip = ipv4::Packet::new_unchecked(&mut out[self.l3..]);
            ip.set_total_len((total - self.l3) as u16);
            ip.set_ident(ip.ident().wrapping_add(i as u16));
            ip.fill_checksum();
            (ip.src_addr().into(), ip.dst_addr().into())
        } else {
            let mut ip = ipv6::Packet::new_unchecked(&mut out[self.l3..]);
            ip.set_payload_len((total - self.l3 - ipv6::HEADER_LEN) as u16);
            (ip.src_addr().into(), ip.dst_addr().into())
        };
        match self.l4_kind {
            L4::Tcp => {
                let mut t = tcp::Packet::new_unchecked(&mut out[self.l4..]);
                t.set_seq_number(t.seq_number().wrapping_add((i * self.mss) as u32));
                let mut f = t.flags();
                if !last {
                    f &= !(tcp::flags::FIN | tcp::flags::PSH);
                }
                if i > 0 {
                    f &= !tcp::flags::CWR;
                }
                t.set_flags(f);
                t.fill_checksum(src, dst);
            }
            L4::Udp => {
                let mut u = udp::Packet::new_unchecked(&mut out[self.l4..]);
                u.set_len((total - self.l4) as u16);
                u.fill_checksum(src, dst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ethernet::{insert_vlan_tag, VlanTag};
    use crate::ip_proto;
    use std::net::Ipv4Addr;

    // Ethernet + IPv4 10.0.0.1 -> 10.0.0.2 + TCP 40000 -> 5201 "hi!" with its complete checksum 0x4cbd.
    static FRAME_BYTES: [u8; 57] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0x2b, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x97, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x14, 0x51, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b,
        0x0c, 0x0d, 0x50, 0x18, 0xfa, 0xf0, 0x4c, 0xbd, 0x00, 0x00, 0x68, 0x69, 0x21,
    ];

    static VNET_BYTES: [u8; 10] = [0x01, 0x01, 0x36, 0x00, 0xa8, 0x05, 0x22, 0x00, 0x10, 0x00];

    #[test]
    fn vnet_header_roundtrip() {
        let h = VirtioNetHdr::parse(&VNET_BYTES).unwrap();
        if cfg!(target_endian = "little") {
            assert_eq!(
                h,
                VirtioNetHdr {
                    flags: 1,
                    gso_type: gso_type::TCPV4,
                    hdr_len: 54,
                    gso_size: 1448,
                    csum_start: 34,
                    csum_offset: 16
                }
            );
        }
        assert!(h.is_gso() && h.needs_csum());
        let mut b = [0u8; 10];
        h.emit(&mut b);
        assert_eq!(b, VNET_BYTES);
        assert_eq!(
            VirtioNetHdr::parse(&VNET_BYTES[..9]).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn completes_partial_checksum() {
        // veth leaves the folded pseudo-header sum in the field (CHECKSUM_PARTIAL).
        let mut f = FRAME_BYTES;
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            6,
            23,
        );
        f[50..52].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
        let hdr = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            csum_start: 34,
            csum_offset: 16,
            ..Default::default()
        };
        complete_if_partial(&mut f, &hdr).unwrap();
        assert_eq!(f, FRAME_BYTES);
        assert_eq!(
            complete_checksum(&mut f[..40], 34, 16).unwrap_err(),
            Error::Truncated
        );
    }

    fn super_packet(payload_len: usize, flags: u8) -> Vec<u8> {
        let mut f = FRAME_BYTES[..54].to_vec();
        f.extend((0..payload_len).map(|i| (i % 251) as u8));
        let total = (f.len() - 14) as u16;
        f[16..18].copy_from_slice(&total.to_be_bytes());
        f[47] = flags;
        f
    }

    #[test]
    fn segments_tcpv4() {
        let f = super_packet(
            1000,
            tcp::flags::ACK | tcp::flags::PSH | tcp::flags::FIN | tcp::flags::CWR,
        );
        let hdr = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            gso_type: gso_type::TCPV4,
            hdr_len: 54,
            gso_size: 400,
            csum_start: 34,
            csum_offset: 16,
        };
        let g = Gso::new(&f, &hdr).unwrap();
        assert_eq!(g.count(), 3);
        assert_eq!(g.header_len(), 54);
        let mut out = Vec::new();
        let mut payload = Vec::new();
        for i in 0..3 {
            g.write_segment(i, &mut out);
            let eth = ethernet::Frame::new_checked(&out[..]).unwrap();
            let ip = ipv4::Packet::new_checked(eth.payload()).unwrap();
            assert!(ip.verify_checksum());
            assert_eq!(ip.ident(), 0x1234 + i as u16);
            assert_eq!(
                usize::from(ip.total_len()),
                40 + if i < 2 { 400 } else { 200 }
            );
            let t = tcp::Packet::new_checked(ip.payload()).unwrap();
            assert!(t.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
            assert_eq!(t.seq_number(), 0x0102_0304 + 400 * i as u32);
            assert_eq!(t.fin(), i == 2);
            assert_eq!(t.psh(), i == 2);
            assert_eq!(t.cwr(), i == 0);
            assert!(t.ack());
            payload.extend_from_slice(t.payload());
        }
        assert_eq!(&payload[..], &f[54..]);
    }

    #[test]
    fn segments_udp_l4_with_vlan() {
        // UDP 5000 -> 5201 with 30 bytes of payload cut into 12-byte datagrams, on VLAN 5.
        let mut f = FRAME_BYTES[..34].to_vec();
        f[23] = ip_proto::UDP;
        f.extend_from_slice(&[0x13, 0x88, 0x14, 0x51, 0, 38, 0, 0]);
        f.extend(0..30u8);
        f[16..18].copy_from_slice(&58u16.to_be_bytes());
        insert_vlan_tag(
            &mut f,
            VlanTag {
                tpid: 0x8100,
                pcp: 0,
                dei: false,
                vid: 5,
            },
        );
        let hdr = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            gso_type: gso_type::UDP_L4,
            gso_size: 12,
            csum_start: 38,
            csum_offset: 6,
            ..Default::default()
        };
        let g = Gso::new(&f, &hdr).unwrap();
        assert_eq!(g.count(), 3);
        let mut out = Vec::new();
        for i in 0..3 {
            g.write_segment(i, &mut out);
            let eth = ethernet::Frame::new_checked(&out[..]).unwrap();
            assert_eq!(eth.vlan().unwrap().vid, 5);
            let ip = ipv4::Packet::new_checked(eth.payload()).unwrap();
            assert!(ip.verify_checksum());
            let u = udp::Packet::new_checked(ip.payload()).unwrap();
            assert!(u.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
            assert_eq!(u.payload()[0], 12 * i as u8);
            assert_eq!(u.len(), if i < 2 { 20 } else { 14 });
        }
    }

    #[test]
    fn segments_tcpv6() {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        f.extend_from_slice(&[0x60, 0, 0, 0, 0, 0, 6, 64]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        f.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        f.extend_from_slice(&FRAME_BYTES[34..54]);
        f.extend(0..100u8);
        let pl = (f.len() - 54) as u16;
        f[18..20].copy_from_slice(&pl.to_be_bytes());
        let hdr = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            gso_type: gso_type::TCPV6,
            gso_size: 60,
            csum_start: 54,
            csum_offset: 16,
            ..Default::default()
        };
        let g = Gso::new(&f, &hdr).unwrap();
        assert_eq!(g.count(), 2);
        let mut out = Vec::new();
        g.write_segment(1, &mut out);
        let ip = ipv6::Packet::new_checked(&out[14..]).unwrap();
        assert_eq!(ip.payload_len(), 20 + 40);
        let t = tcp::Packet::new_checked(ip.payload()).unwrap();
        assert!(t.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
        assert_eq!(t.seq_number(), 0x0102_0304 + 60);
    }

    #[test]
    fn rejects_ufo_and_mismatch() {
        let f = super_packet(100, tcp::flags::ACK);
        let ufo = VirtioNetHdr {
            gso_type: gso_type::UDP,
            gso_size: 10,
            ..Default::default()
        };
        assert_eq!(Gso::new(&f, &ufo).unwrap_err(), Error::Unsupported);
        let v6 = VirtioNetHdr {
            gso_type: gso_type::TCPV6,
            gso_size: 10,
            ..Default::default()
        };
        assert_eq!(Gso::new(&f, &v6).unwrap_err(), Error::Malformed);
        let zero = VirtioNetHdr {
            gso_type: gso_type::TCPV4,
            gso_size: 0,
            ..Default::default()
        };
        assert_eq!(Gso::new(&f, &zero).unwrap_err(), Error::Malformed);
    }

    #[test]
    fn rejects_csum_start_inside_the_ip_header() {
        // Found by tests/fuzz (target packet): vnet header (NEEDS_CSUM, UDP_L4, csum_start 0) and
        // an IPv4 frame with IHL 0. Segmenting it panicked (slice out of range) rewriting an IP
        // header that the 8 copied header bytes do not contain.
        static CRASH: [u8; 77] = [
            0x01, 0x05, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x81, 0x00, 0x00, 0x05,
            0x0b, 0x00, 0x45, 0x00, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x73,
            0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x21, 0x22, 0x23, 0x24, 0x01, 0x14, 0x8f, 0x0a,
            0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01, 0xfd, 0x01, 0x4d, 0x5f, 0x01, 0x01, 0x00,
            0x0a, 0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a, 0x26,
            0x0a, 0x00, 0x00, 0x01, 0x25, 0x26, 0x27,
        ];
        let hdr = VirtioNetHdr::parse(&CRASH).unwrap();
        let frame = &CRASH[VNET_HDR_LEN..];
        assert_eq!(Gso::new(frame, &hdr).unwrap_err(), Error::Malformed);
        // The same with a well-formed frame: csum_start 20 points into the IPv4 header.
        let f = super_packet(100, tcp::flags::ACK);
        let inside = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            gso_type: gso_type::TCPV4,
            gso_size: 40,
            csum_start: 20,
            csum_offset: 16,
            ..Default::default()
        };
        assert_eq!(Gso::new(&f, &inside).unwrap_err(), Error::Malformed);
    }
}
