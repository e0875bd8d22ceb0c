//! IPv4 headers (RFC 791).
//!
//! ```text
//!  0       4       8              16    19                        31
//! +-------+-------+---------------+-----+--------------------------+
//! |version|  IHL  |  DSCP  | ECN  |         total length           |
//! |        identification         |flags|    fragment offset       |
//! |     TTL       |   protocol    |        header checksum         |
//! |                        source address                          |
//! |                      destination address                       |
//! |                    options (IHL > 5) ...                       |
//! ```

use crate::{checksum, Error, Result};
use std::net::Ipv4Addr;

mod field {
    use crate::Field;
    pub const VER_IHL: usize = 0;
    pub const DSCP_ECN: usize = 1;
    pub const LENGTH: Field = 2..4;
    pub const IDENT: Field = 4..6;
    pub const FLG_OFF: Field = 6..8;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: Field = 10..12;
    pub const SRC_ADDR: Field = 12..16;
    pub const DST_ADDR: Field = 16..20;
}

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;

/// A read/write view of an IPv4 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks version, header length and total length against the buffer.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        p.check_len()?;
        Ok(p)
    }

    /// Checks that the header and `total_len` bytes are inside the buffer (trailing padding,
    /// as Ethernet adds to short frames, is allowed) and that the version is 4.
    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if self.version() != 4 {
            return Err(Error::Malformed);
        }
        let hl = usize::from(self.header_len());
        if hl < HEADER_LEN || usize::from(self.total_len()) < hl {
            return Err(Error::Malformed);
        }
        if len < hl || len < usize::from(self.total_len()) {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    /// Consumes the view, returning the buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Version (4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }

    /// Header length in bytes (IHL x 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }

    /// Differentiated services code point.
    pub fn dscp(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] >> 2
    }

    /// Explicit congestion notification bits (0 = not ECT, 1 = ECT(1), 2 = ECT(0), 3 = CE).
    pub fn ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN] & 0x03
    }

    /// Total length of header and payload.
    pub fn total_len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }

    /// Identification.
    pub fn ident(&self) -> u16 {
        self.u16_at(field::IDENT)
    }

    /// Don't-fragment flag.
    pub fn dont_frag(&self) -> bool {
        self.u16_at(field::FLG_OFF) & 0x4000 != 0
    }

    /// More-fragments flag.
    pub fn more_frags(&self) -> bool {
        self.u16_at(field::FLG_OFF) & 0x2000 != 0
    }

    /// Fragment offset in bytes.
    pub fn frag_offset(&self) -> u16 {
        (self.u16_at(field::FLG_OFF) & 0x1fff) * 8
    }

    /// Whether this is a fragment that does not hold the transport header (offset > 0).
    pub fn is_later_fragment(&self) -> bool {
        self.frag_offset() != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }

    /// Protocol of the payload (see [`crate::ip_proto`]).
    pub fn protocol(&self) -> u8 {
        self.buffer.as_ref()[field::PROTOCOL]
    }

    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let d = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(d[0], d[1], d[2], d[3])
    }

    /// Whether the header checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        let hl = usize::from(self.header_len());
        checksum::fold(checksum::data(&self.buffer.as_ref()[..hl])) == 0xffff
    }

    /// Options bytes (between the fixed header and the payload).
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// The payload, `total_len - header_len` bytes (Ethernet padding excluded).
    pub fn payload(&self) -> &[u8] {
        let d = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(d.len());
        &d[usize::from(self.header_len())..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets version 4 and the header length in bytes (a multiple of 4).
    pub fn set_version_and_header_len(&mut self, header_len: u8) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | ((header_len / 4) & 0x0f);
    }

    /// Sets DSCP.
    pub fn set_dscp(&mut self, dscp: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & 0x03) | (dscp << 2);
    }

    /// Sets the ECN bits.
    pub fn set_ecn(&mut self, ecn: u8) {
        let b = &mut self.buffer.as_mut()[field::DSCP_ECN];
        *b = (*b & !0x03) | (ecn & 0x03);
    }

    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        self.set_u16_at(field::LENGTH, v)
    }

    /// Sets the identification.
    pub fn set_ident(&mut self, v: u16) {
        self.set_u16_at(field::IDENT, v)
    }

    /// Sets flags and fragment offset (`frag_offset` in bytes, a multiple of 8).
    pub fn set_flags_and_frag_offset(
        &mut self,
        dont_frag: bool,
        more_frags: bool,
        frag_offset: u16,
    ) {
        let v = (u16::from(dont_frag) << 14)
            | (u16::from(more_frags) << 13)
            | ((frag_offset / 8) & 0x1fff);
        self.set_u16_at(field::FLG_OFF, v)
    }

    /// Sets the time to live.
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }

    /// Sets the protocol.
    pub fn set_protocol(&mut self, v: u8) {
        self.buffer.as_mut()[field::PROTOCOL] = v;
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }

    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }

    /// Computes and writes the header checksum.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let hl = usize::from(self.header_len());
        let c = checksum::finish(checksum::data(&self.buffer.as_ref()[..hl]));
        self.set_checksum(c);
    }

    /// Mutable payload (`total_len - header_len` bytes).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = usize::from(self.header_len());
        let end = usize::from(self.total_len()).min(self.buffer.as_ref().len());
        &mut self.buffer.as_mut()[hl..end]
    }
}

/// The decoded form of an IPv4 header without options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source address.
    pub src_addr: Ipv4Addr,
    /// Destination address.
    pub dst_addr: Ipv4Addr,
    /// Payload protocol.
    pub protocol: u8,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// Time to live.
    pub ttl: u8,
}

impl Repr {
    /// Decodes a header; the checksum must verify.
    pub fn parse<T: AsRef<[u8]>>(packet: &Packet<T>) -> Result<Repr> {
        packet.check_len()?;
        if !packet.verify_checksum() {
            return Err(Error::Checksum);
        }
        Ok(Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: usize::from(packet.total_len()) - usize::from(packet.header_len()),
            ttl: packet.ttl(),
        })
    }

    /// Header length when emitted.
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header (DF set, identification 0) with its checksum.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, packet: &mut Packet<T>) {
        packet.set_version_and_header_len(HEADER_LEN as u8);
        packet.buffer.as_mut()[field::DSCP_ECN] = 0;
        packet.set_total_len((HEADER_LEN + self.payload_len) as u16);
        packet.set_ident(0);
        packet.set_flags_and_frag_offset(true, false, 0);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ip_proto;

    // 10.0.0.1 -> 10.0.0.2, UDP, 12 bytes payload, DF, TTL 64, ident 0x1234, checksum 0x1497.
    static PACKET_BYTES: [u8; 32] = [
        0x45, 0x00, 0x00, 0x20, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x14, 0x97, 0x0a, 0x00, 0x00,
        0x01, 0x0a, 0x00, 0x00, 0x02, 0x13, 0x88, 0x14, 0x51, 0x00, 0x0c, 0xff, 0x33, 0x61, 0x62,
        0x63, 0x64,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 4);
        assert_eq!(p.header_len(), 20);
        assert_eq!(p.dscp(), 0);
        assert_eq!(p.ecn(), 0);
        assert_eq!(p.total_len(), 32);
        assert_eq!(p.ident(), 0x1234);
        assert!(p.dont_frag());
        assert!(!p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!(p.ttl(), 64);
        assert_eq!(p.protocol(), ip_proto::UDP);
        assert_eq!(p.checksum(), 0x1497);
        assert_eq!(p.src_addr(), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(10, 0, 0, 2));
        assert!(p.verify_checksum());
        assert_eq!(p.payload(), &PACKET_BYTES[20..]);
    }

    #[test]
    fn construct_and_fill_checksum() {
        let mut buf = [0u8; 32];
        buf[20..].copy_from_slice(&PACKET_BYTES[20..]);
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_version_and_header_len(20);
        p.set_total_len(32);
        p.set_ident(0x1234);
        p.set_flags_and_frag_offset(true, false, 0);
        p.set_ttl(64);
        p.set_protocol(ip_proto::UDP);
        p.set_src_addr(Ipv4Addr::new(10, 0, 0, 1));
        p.set_dst_addr(Ipv4Addr::new(10, 0, 0, 2));
        p.fill_checksum();
        assert_eq!(buf, PACKET_BYTES);
    }

    #[test]
    fn bad_checksum_detected() {
        let mut buf = PACKET_BYTES;
        buf[8] ^= 0x01; // one bit of TTL
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(!p.verify_checksum());
        assert_eq!(Repr::parse(&p).unwrap_err(), Error::Checksum);
    }

    #[test]
    fn repr_parse_emit() {
        let repr = Repr::parse(&Packet::new_checked(&PACKET_BYTES[..]).unwrap()).unwrap();
        assert_eq!(repr.payload_len, 12);
        let mut buf = [0u8; 32];
        buf[20..].copy_from_slice(&PACKET_BYTES[20..]);
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        let p = Packet::new_checked(&buf[..]).unwrap();
        assert!(p.verify_checksum());
        assert_eq!(p.src_addr(), repr.src_addr);
        assert_eq!(p.total_len(), 32);
    }

    #[test]
    fn ethernet_padding_allowed_and_truncation_detected() {
        let mut padded = PACKET_BYTES.to_vec();
        padded.extend_from_slice(&[0; 14]);
        let p = Packet::new_checked(&padded[..]).unwrap();
        assert_eq!(p.payload().len(), 12);
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..31]).unwrap_err(),
            Error::Truncated
        );
        let mut v6 = PACKET_BYTES;
        v6[0] = 0x65;
        assert_eq!(Packet::new_checked(&v6[..]).unwrap_err(), Error::Malformed);
    }
}
