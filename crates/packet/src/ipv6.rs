//! IPv6 fixed headers (RFC 8200). Extension headers are not walked; [`Packet::next_header`] is the
//! first one's type.
//!
//! ```text
//! 0..4   version(4) traffic class(8) flow label(20)
//! 4..6   payload length     6 next header     7 hop limit
//! 8..24  source address     24..40 destination address
//! ```

use crate::{Error, Result};
use std::net::Ipv6Addr;

mod field {
    use crate::Field;
    pub const VER_TC_FLOW: Field = 0..4;
    pub const LENGTH: Field = 4..6;
    pub const NXT_HDR: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC_ADDR: Field = 8..24;
    pub const DST_ADDR: Field = 24..40;
}

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;

/// A read/write view of an IPv6 packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks the version and that the payload length fits in it.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        let len = p.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        if p.version() != 6 {
            return Err(Error::Malformed);
        }
        if len < HEADER_LEN + usize::from(p.payload_len()) {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    /// Version (6).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[0] >> 4
    }

    /// Traffic class.
    pub fn traffic_class(&self) -> u8 {
        let d = &self.buffer.as_ref()[field::VER_TC_FLOW];
        (d[0] << 4) | (d[1] >> 4)
    }

    /// Flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::VER_TC_FLOW];
        u32::from_be_bytes([0, d[1] & 0x0f, d[2], d[3]])
    }

    /// Payload length (everything after the fixed header).
    pub fn payload_len(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::LENGTH];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Next header (first extension header or upper-layer protocol).
    pub fn next_header(&self) -> u8 {
        self.buffer.as_ref()[field::NXT_HDR]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buffer.as_ref()[field::HOP_LIMIT]
    }

    /// Source address.
    pub fn src_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::SRC_ADDR]);
        Ipv6Addr::from(a)
    }

    /// Destination address.
    pub fn dst_addr(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.buffer.as_ref()[field::DST_ADDR]);
        Ipv6Addr::from(a)
    }

    /// The payload (`payload_len` bytes after the fixed header).
    pub fn payload(&self) -> &[u8] {
        let d = self.buffer.as_ref();
        let end = (HEADER_LEN + usize::from(self.payload_len())).min(d.len());
        &d[HEADER_LEN..end]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the payload length.
    pub fn set_payload_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the next header.
    pub fn set_next_header(&mut self, v: u8) {
        self.buffer.as_mut()[field::NXT_HDR] = v;
    }

    /// Sets the hop limit.
    pub fn set_hop_limit(&mut self, v: u8) {
        self.buffer.as_mut()[field::HOP_LIMIT] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // fd00::1 -> fd00::2, next header UDP (17), hop limit 64, 4 bytes payload, tc 0xb8, flow 0x12345.
    static PACKET_BYTES: [u8; 44] = [
        0x6b, 0x81, 0x23, 0x45, 0x00, 0x04, 0x11, 0x40, //
        0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, //
        0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, //
        1, 2, 3, 4,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0xb8);
        assert_eq!(p.flow_label(), 0x12345);
        assert_eq!(p.payload_len(), 4);
        assert_eq!(p.next_header(), 17);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), "fd00::1".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.dst_addr(), "fd00::2".parse::<Ipv6Addr>().unwrap());
        assert_eq!(p.payload(), &[1, 2, 3, 4]);
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..43]).unwrap_err(),
            Error::Truncated
        );
    }

    #[test]
    fn construct() {
        let mut buf = PACKET_BYTES;
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_payload_len(3);
        p.set_next_header(6);
        p.set_hop_limit(1);
        assert_eq!(&buf[4..8], &[0, 3, 6, 1]);
    }
}
