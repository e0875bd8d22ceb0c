//! UDP datagrams (RFC 768).
//!
//! ```text
//! 0..2 source port   2..4 destination port   4..6 length   6..8 checksum   8.. payload
//! ```

use crate::{checksum, ip_proto, Error, Result};
use std::net::IpAddr;

mod field {
    use crate::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const LENGTH: Field = 4..6;
    pub const CHECKSUM: Field = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// Pseudo-header sum for a transport segment between `src` and `dst` (mixed families sum as 0).
pub(crate) fn pseudo_header(src: IpAddr, dst: IpAddr, proto: u8, len: u32) -> u32 {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => checksum::pseudo_header_v4(s, d, proto, len),
        (IpAddr::V6(s), IpAddr::V6(d)) => checksum::pseudo_header_v6(s, d, proto, len),
        _ => 0,
    }
}

/// A read/write view of a UDP datagram.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks the header and the length field against it.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        let len = p.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let l = usize::from(p.len());
        if l < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < l {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }

    /// Length of header and payload.
    pub fn len(&self) -> u16 {
        self.u16_at(field::LENGTH)
    }

    /// Whether the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }

    /// Checksum field (0 = none, IPv4 only).
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Whether the checksum verifies over the pseudo-header; a zero checksum over IPv4 means
    /// "not computed" and verifies.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        if src.is_ipv4() && self.checksum() == 0 {
            return true;
        }
        let d = &self.buffer.as_ref()[..usize::from(self.len())];
        let sum = checksum::combine(&[
            pseudo_header(src, dst, ip_proto::UDP, u32::from(self.len())),
            checksum::data(d),
        ]);
        checksum::fold(sum) == 0xffff
    }

    /// The payload (`len - 8` bytes).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.set_u16_at(field::SRC_PORT, v)
    }

    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.set_u16_at(field::DST_PORT, v)
    }

    /// Sets the length field.
    pub fn set_len(&mut self, v: u16) {
        self.set_u16_at(field::LENGTH, v)
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    /// Computes and writes the checksum (a computed 0 is sent as 0xffff).
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let l = self.len();
        let sum = checksum::combine(&[
            pseudo_header(src, dst, ip_proto::UDP, u32::from(l)),
            checksum::data(&self.buffer.as_ref()[..usize::from(l)]),
        ]);
        let c = checksum::finish(sum);
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }

    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..l]
    }
}

/// The decoded form of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length.
    pub payload_len: usize,
}

impl Repr {
    /// Decodes a datagram; its checksum must verify.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>, src: IpAddr, dst: IpAddr) -> Result<Repr> {
        if !p.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            payload_len: usize::from(p.len()) - HEADER_LEN,
        })
    }

    /// Header length.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header and the checksum (the payload must already be in place).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>, src: IpAddr, dst: IpAddr) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + self.payload_len) as u16);
        p.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const DST: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    // 5000 -> 5201, length 12, checksum 0xff33, payload "abcd".
    static PACKET_BYTES: [u8; 12] = [
        0x13, 0x88, 0x14, 0x51, 0x00, 0x0c, 0xff, 0x33, 0x61, 0x62, 0x63, 0x64,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 5000);
        assert_eq!(p.dst_port(), 5201);
        assert_eq!(p.len(), 12);
        assert_eq!(p.checksum(), 0xff33);
        assert_eq!(p.payload(), b"abcd");
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 12];
        buf[8..].copy_from_slice(b"abcd");
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(5000);
        p.set_dst_port(5201);
        p.set_len(12);
        p.fill_checksum(SRC, DST);
        assert_eq!(buf, PACKET_BYTES);
    }

    #[test]
    fn repr_roundtrip_and_corruption() {
        let repr = Repr::parse(&Packet::new_checked(&PACKET_BYTES[..]).unwrap(), SRC, DST).unwrap();
        assert_eq!(
            repr,
            Repr {
                src_port: 5000,
                dst_port: 5201,
                payload_len: 4
            }
        );
        let mut buf = [0u8; 12];
        buf[8..].copy_from_slice(b"abcd");
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(buf, PACKET_BYTES);
        buf[10] ^= 0x04;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap(), SRC, DST).unwrap_err(),
            Error::Checksum
        );
    }

    #[test]
    fn zero_checksum_over_ipv4_is_not_checked() {
        let mut buf = PACKET_BYTES;
        buf[6] = 0;
        buf[7] = 0;
        assert!(Packet::new_checked(&buf[..])
            .unwrap()
            .verify_checksum(SRC, DST));
    }

    #[test]
    fn length_checks() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..7]).unwrap_err(),
            Error::Truncated
        );
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..11]).unwrap_err(),
            Error::Truncated
        );
        let mut buf = PACKET_BYTES;
        buf[5] = 4;
        assert_eq!(Packet::new_checked(&buf[..]).unwrap_err(), Error::Malformed);
    }
}
