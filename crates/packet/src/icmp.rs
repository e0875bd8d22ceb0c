//! ICMPv4 messages (RFC 792): echo request/reply fields and the error messages' quoted header.
//!
//! ```text
//! 0 type   1 code   2..4 checksum   4..8 rest of header (echo: 4..6 identifier, 6..8 sequence)
//! 8..      data (echo payload, or the offending IP header + 8 bytes for errors)
//! ```

use crate::{checksum, Error, Result};

mod field {
    use crate::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const ECHO_IDENT: Field = 4..6;
    pub const ECHO_SEQNO: Field = 6..8;
    pub const UNUSED: Field = 4..8;
}

/// Length of the ICMP header (type, code, checksum and the 4-byte rest of header).
pub const HEADER_LEN: usize = 8;

/// ICMPv4 message types this crate knows by name.
pub mod msg_type {
    /// Echo reply.
    pub const ECHO_REPLY: u8 = 0;
    /// Destination unreachable.
    pub const DST_UNREACHABLE: u8 = 3;
    /// Redirect.
    pub const REDIRECT: u8 = 5;
    /// Echo request.
    pub const ECHO_REQUEST: u8 = 8;
    /// Time exceeded.
    pub const TIME_EXCEEDED: u8 = 11;
    /// Parameter problem.
    pub const PARAM_PROBLEM: u8 = 12;
}

/// A read/write view of an ICMPv4 message (the IPv4 payload).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks that the 8-byte header fits.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        if p.buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Message type (see [`msg_type`]).
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Message code.
    pub fn msg_code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Echo identifier (echo request/reply).
    pub fn echo_ident(&self) -> u16 {
        self.u16_at(field::ECHO_IDENT)
    }

    /// Echo sequence number (echo request/reply).
    pub fn echo_seq_no(&self) -> u16 {
        self.u16_at(field::ECHO_SEQNO)
    }

    /// The 4-byte rest-of-header as a big-endian word (pointer, gateway, MTU, ...).
    pub fn rest_of_header(&self) -> u32 {
        let d = &self.buffer.as_ref()[field::UNUSED];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Data after the header.
    pub fn data(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..]
    }

    /// Whether the message checksum verifies.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::data(self.buffer.as_ref())) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets the message type.
    pub fn set_msg_type(&mut self, v: u8) {
        self.buffer.as_mut()[field::TYPE] = v;
    }

    /// Sets the message code.
    pub fn set_msg_code(&mut self, v: u8) {
        self.buffer.as_mut()[field::CODE] = v;
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    /// Sets the echo identifier.
    pub fn set_echo_ident(&mut self, v: u16) {
        self.set_u16_at(field::ECHO_IDENT, v)
    }

    /// Sets the echo sequence number.
    pub fn set_echo_seq_no(&mut self, v: u16) {
        self.set_u16_at(field::ECHO_SEQNO, v)
    }

    /// Sets the rest-of-header word.
    pub fn set_rest_of_header(&mut self, v: u32) {
        self.buffer.as_mut()[field::UNUSED].copy_from_slice(&v.to_be_bytes());
    }

    /// Mutable data after the header.
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[HEADER_LEN..]
    }

    /// Computes and writes the checksum over the whole message.
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::finish(checksum::data(self.buffer.as_ref()));
        self.set_checksum(c);
    }
}

/// The decoded form of the ICMP messages this crate names; others keep type and code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr {
    /// Echo request.
    EchoRequest {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Echo reply.
    EchoReply {
        /// Identifier.
        ident: u16,
        /// Sequence number.
        seq_no: u16,
    },
    /// Any other message.
    Other {
        /// Type.
        msg_type: u8,
        /// Code.
        code: u8,
        /// Rest of header.
        rest: u32,
    },
}

impl Repr {
    /// Decodes a message; its checksum must verify.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        Ok(match (p.msg_type(), p.msg_code()) {
            (msg_type::ECHO_REQUEST, 0) => Repr::EchoRequest {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
            },
            (msg_type::ECHO_REPLY, 0) => Repr::EchoReply {
                ident: p.echo_ident(),
                seq_no: p.echo_seq_no(),
            },
            (t, c) => Repr::Other {
                msg_type: t,
                code: c,
                rest: p.rest_of_header(),
            },
        })
    }

    /// Writes the header and the checksum (data already in place).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        match *self {
            Repr::EchoRequest { ident, seq_no } | Repr::EchoReply { ident, seq_no } => {
                let t = if matches!(self, Repr::EchoRequest { .. }) {
                    msg_type::ECHO_REQUEST
                } else {
                    msg_type::ECHO_REPLY
                };
                p.set_msg_type(t);
                p.set_msg_code(0);
                p.set_echo_ident(ident);
                p.set_echo_seq_no(seq_no);
            }
            Repr::Other {
                msg_type,
                code,
                rest,
            } => {
                p.set_msg_type(msg_type);
                p.set_msg_code(code);
                p.set_rest_of_header(rest);
            }
        }
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Echo request, ident 0x0042, seq 7, data "ping", checksum 0x18e6.
    static PACKET_BYTES: [u8; 12] = [
        0x08, 0x00, 0x18, 0xe6, 0x00, 0x42, 0x00, 0x07, 0x70, 0x69, 0x6e, 0x67,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), msg_type::ECHO_REQUEST);
        assert_eq!(p.msg_code(), 0);
        assert_eq!(p.checksum(), 0x18e6);
        assert_eq!(p.echo_ident(), 0x42);
        assert_eq!(p.echo_seq_no(), 7);
        assert_eq!(p.data(), b"ping");
        assert!(p.verify_checksum());
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 12];
        buf[8..].copy_from_slice(b"ping");
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_msg_type(msg_type::ECHO_REQUEST);
        p.set_msg_code(0);
        p.set_echo_ident(0x42);
        p.set_echo_seq_no(7);
        p.fill_checksum();
        assert_eq!(buf, PACKET_BYTES);
    }

    #[test]
    fn repr_roundtrip() {
        let repr = Repr::parse(&Packet::new_checked(&PACKET_BYTES[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Repr::EchoRequest {
                ident: 0x42,
                seq_no: 7
            }
        );
        let mut buf = [0u8; 12];
        buf[8..].copy_from_slice(b"ping");
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, PACKET_BYTES);
        buf[9] ^= 0x80;
        assert_eq!(
            Repr::parse(&Packet::new_checked(&buf[..]).unwrap()).unwrap_err(),
            Error::Checksum
        );
        assert_eq!(
            Packet::new_checked(&buf[..7]).unwrap_err(),
            Error::Truncated
        );
    }
}
