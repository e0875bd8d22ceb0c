//! ETEN notice (BETEN form): the ICMP message a satellite edge sends toward the *sender* of a packet
//! the link corrupted or erased (ETEN report, BBN TR 8333, §1 "BETEN").
//!
//! This file is the one place the format is defined; the gateway writes it and the end-host code
//! (eBPF tc ingress parser) reads it.
//!
//! It is an ICMPv4 message of type 253, the first experimental type of RFC 4727 (RFC 4727 §2:
//! "Experimental ICMPv4 types 253 and 254"), sent in an IPv4 packet from the notifying edge's
//! address to the quoted packet's source address. It travels the return path like any packet, so
//! it is delayed, queued and can be lost, exactly as the report's BETEN message.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------+---------------+-------------------------------+
//! | type = 253    | code          | checksum                      |  0..4
//! +---------------+---------------+-------------------------------+
//! | version = 1   | flags         | notice sequence               |  4..8
//! +---------------+---------------+-------------------------------+
//! | quoted IPv4 header (20 bytes, options not quoted)             |  8..28
//! +---------------------------------------------------------------+
//! | first 8 transport bytes (TCP: sport, dport, sequence number)  | 28..36
//! +---------------------------------------------------------------+
//! | MAC (16 bytes, only when flags bit 0 is set)                  | 36..52
//! +---------------------------------------------------------------+
//! ```
//! - `code`: [`code::CORRUPTED`] (bit errors, the header still identified the flow) or
//!   [`code::ERASED`] (the packet was lost with an erased BBFrame / burst).
//! - `checksum`: the Internet checksum of the whole ICMP message (MAC included), as every ICMP.
//! - `notice sequence`: counts the notices of one notifier (wraps at 2^16); lets a receiver drop
//!   duplicates and estimate notice loss.
//! - quoted header: the packet's IPv4 header as the link reported it. When the notifier builds it
//!   from a link event (the emulator reports fields, not bytes), version/IHL is 0x45, `total length`
//!   is the frame length minus the Ethernet header, `protocol`, `source` and `destination` are the
//!   packet's, and TOS, identification, flags/fragment offset and TTL are zero; its header checksum
//!   is filled, so the quote is a valid header.
//! - transport bytes: TCP source port, destination port, sequence number (the segment to
//!   retransmit); UDP source port, destination port, length, checksum 0; zero otherwise.
//! - MAC ([`flags::MAC`]): the first 16 bytes of HMAC-SHA256(key, message bytes 0..36 with the
//!   checksum field set to zero), key shared per testbed (or per operator domain). A receiver
//!   configured with a key drops notices without a valid MAC (ETEN report section 7.1: ICMP is unauthenticated;
//!   false reports cause needless retransmissions). [`Packet::mac_input`] gives the bytes to sign.
//!
//! A receiver should also apply the report's checks: the flow must exist, the sequence must be in
//! the current window, and a sequence is retransmitted once per loss (ETEN report section 7).

use crate::{checksum, ip_proto, ipv4, Error, Result};
use std::net::Ipv4Addr;

mod field {
    use crate::Field;
    pub const TYPE: usize = 0;
    pub const CODE: usize = 1;
    pub const CHECKSUM: Field = 2..4;
    pub const VERSION: usize = 4;
    pub const FLAGS: usize = 5;
    pub const NOTICE_SEQ: Field = 6..8;
    pub const QUOTE_IP: Field = 8..28;
    pub const QUOTE_L4: Field = 28..36;
    pub const MAC: Field = 36..52;
}

/// The ICMPv4 type of an ETEN notice (RFC 4727 experimental type 1).
pub const ICMP_TYPE: u8 = 253;
/// The format version this file describes.
pub const VERSION: u8 = 1;
/// Length of a notice without MAC.
pub const LEN: usize = field::QUOTE_L4.end;
/// Length of a notice with MAC.
pub const LEN_WITH_MAC: usize = field::MAC.end;
/// Length of the MAC.
pub const MAC_LEN: usize = 16;

/// Notice codes (the ICMP code field).
pub mod code {
    /// Delivered with bit errors; the header still identified the flow.
    pub const CORRUPTED: u8 = 0;
    /// Lost with an erased frame.
    pub const ERASED: u8 = 1;
}

/// Bits of the flags byte.
pub mod flags {
    /// A 16-byte MAC follows the quote.
    pub const MAC: u8 = 0x01;
}

/// A read/write view of an ETEN notice (the ICMP message, i.e. the IPv4 payload).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks type, version and length (36 bytes, 52 with a MAC).
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        let b = p.buffer.as_ref();
        if b.len() < LEN {
            return Err(Error::Truncated);
        }
        if b[field::TYPE] != ICMP_TYPE || b[field::VERSION] != VERSION {
            return Err(Error::Malformed);
        }
        if b[field::FLAGS] & flags::MAC != 0 && b.len() < LEN_WITH_MAC {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// ICMP type (253).
    pub fn msg_type(&self) -> u8 {
        self.buffer.as_ref()[field::TYPE]
    }

    /// Notice code (see [`code`]).
    pub fn code(&self) -> u8 {
        self.buffer.as_ref()[field::CODE]
    }

    /// ICMP checksum.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Format version.
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VERSION]
    }

    /// Flags (see [`flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// The notifier's notice counter.
    pub fn notice_seq(&self) -> u16 {
        self.u16_at(field::NOTICE_SEQ)
    }

    /// The quoted IPv4 header (20 bytes).
    pub fn quoted_ip(&self) -> &[u8] {
        &self.buffer.as_ref()[field::QUOTE_IP]
    }

    /// The quoted first 8 transport bytes.
    pub fn quoted_transport(&self) -> &[u8] {
        &self.buffer.as_ref()[field::QUOTE_L4]
    }

    /// Source address of the quoted packet (the host to notify).
    pub fn quoted_src(&self) -> Ipv4Addr {
        ipv4::Packet::new_unchecked(self.quoted_ip()).src_addr()
    }

    /// Destination address of the quoted packet.
    pub fn quoted_dst(&self) -> Ipv4Addr {
        ipv4::Packet::new_unchecked(self.quoted_ip()).dst_addr()
    }

    /// IP protocol of the quoted packet.
    pub fn quoted_protocol(&self) -> u8 {
        ipv4::Packet::new_unchecked(self.quoted_ip()).protocol()
    }

    /// Total length of the quoted packet.
    pub fn quoted_total_len(&self) -> u16 {
        ipv4::Packet::new_unchecked(self.quoted_ip()).total_len()
    }

    /// Quoted source port (TCP/UDP).
    pub fn quoted_src_port(&self) -> u16 {
        let t = self.quoted_transport();
        u16::from_be_bytes([t[0], t[1]])
    }

    /// Quoted destination port (TCP/UDP).
    pub fn quoted_dst_port(&self) -> u16 {
        let t = self.quoted_transport();
        u16::from_be_bytes([t[2], t[3]])
    }

    /// Quoted TCP sequence number (bytes 4..8 of the transport quote).
    pub fn quoted_seq(&self) -> u32 {
        let t = self.quoted_transport();
        u32::from_be_bytes([t[4], t[5], t[6], t[7]])
    }

    /// The MAC, when the flag says there is one.
    pub fn mac(&self) -> Option<&[u8]> {
        (self.flags() & flags::MAC != 0).then(|| &self.buffer.as_ref()[field::MAC])
    }

    /// Length of the notice (36, or 52 with a MAC).
    pub fn notice_len(&self) -> usize {
        if self.flags() & flags::MAC != 0 {
            LEN_WITH_MAC
        } else {
            LEN
        }
    }

    /// The bytes the MAC is computed over: message bytes 0..36 with the checksum set to zero.
    pub fn mac_input(&self) -> [u8; LEN] {
        let mut out = [0u8; LEN];
        out.copy_from_slice(&self.buffer.as_ref()[..LEN]);
        out[field::CHECKSUM].fill(0);
        out
    }

    /// Verifies the ICMP checksum over the notice.
    pub fn verify_checksum(&self) -> bool {
        checksum::fold(checksum::data(&self.buffer.as_ref()[..self.notice_len()])) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    /// Sets type 253 and the version.
    pub fn set_header(&mut self, code: u8, flags: u8, notice_seq: u16) {
        let b = self.buffer.as_mut();
        b[field::TYPE] = ICMP_TYPE;
        b[field::CODE] = code;
        b[field::VERSION] = VERSION;
        b[field::FLAGS] = flags;
        self.set_u16(field::NOTICE_SEQ, notice_seq);
    }

    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16(field::CHECKSUM, v);
    }

    /// The quoted IPv4 header, writable.
    pub fn quoted_ip_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::QUOTE_IP]
    }

    /// The quoted transport bytes, writable.
    pub fn quoted_transport_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::QUOTE_L4]
    }

    /// Writes the MAC (sets nothing else: the flag is part of [`Packet::set_header`]).
    pub fn set_mac(&mut self, mac: &[u8; MAC_LEN]) {
        self.buffer.as_mut()[field::MAC].copy_from_slice(mac);
    }

    /// Computes and writes the ICMP checksum (after the MAC).
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let len = self.notice_len();
        let c = checksum::finish(checksum::data(&self.buffer.as_ref()[..len]));
        self.set_checksum(c);
    }
}

/// The decoded form of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// [`code::CORRUPTED`] or [`code::ERASED`].
    pub code: u8,
    /// The notifier's notice counter.
    pub notice_seq: u16,
    /// Source of the damaged packet (the notice goes there).
    pub src: Ipv4Addr,
    /// Destination of the damaged packet.
    pub dst: Ipv4Addr,
    /// Its IP protocol.
    pub protocol: u8,
    /// Its IPv4 total length.
    pub total_len: u16,
    /// Source port (TCP/UDP), else 0.
    pub src_port: u16,
    /// Destination port (TCP/UDP), else 0.
    pub dst_port: u16,
    /// TCP sequence number, else 0.
    pub seq: u32,
    /// Whether a MAC follows (the MAC itself is written by the caller, who holds the key).
    pub with_mac: bool,
}

impl Repr {
    /// Decodes a checked notice (checksum verified).
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        let proto = p.quoted_protocol();
        let (sport, dport) = match proto {
            ip_proto::TCP | ip_proto::UDP => (p.quoted_src_port(), p.quoted_dst_port()),
            _ => (0, 0),
        };
        Ok(Repr {
            code: p.code(),
            notice_seq: p.notice_seq(),
            src: p.quoted_src(),
            dst: p.quoted_dst(),
            protocol: proto,
            total_len: p.quoted_total_len(),
            src_port: sport,
            dst_port: dport,
            seq: if proto == ip_proto::TCP {
                p.quoted_seq()
            } else {
                0
            },
            with_mac: p.mac().is_some(),
        })
    }

    /// Length of the emitted notice.
    pub fn buffer_len(&self) -> usize {
        if self.with_mac {
            LEN_WITH_MAC
        } else {
            LEN
        }
    }

    /// Writes the notice (MAC bytes zero) and its checksum. With a MAC, write it with
    /// [`Packet::set_mac`] over [`Packet::mac_input`] and call [`Packet::fill_checksum`] again.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        let fl = if self.with_mac { flags::MAC } else { 0 };
        p.set_header(self.code, fl, self.notice_seq);
        {
            let q = p.quoted_ip_mut();
            q.fill(0);
            let mut ip = ipv4::Packet::new_unchecked(q);
            ip.set_version_and_header_len(20);
            ip.set_total_len(self.total_len);
            ip.set_protocol(self.protocol);
            ip.set_src_addr(self.src);
            ip.set_dst_addr(self.dst);
            ip.fill_checksum();
        }
        {
            let t = p.quoted_transport_mut();
            t.fill(0);
            match self.protocol {
                ip_proto::TCP => {
                    t[0..2].copy_from_slice(&self.src_port.to_be_bytes());
                    t[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
                    t[4..8].copy_from_slice(&self.seq.to_be_bytes());
                }
                ip_proto::UDP => {
                    t[0..2].copy_from_slice(&self.src_port.to_be_bytes());
                    t[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
                    let ulen = self.total_len.saturating_sub(20);
                    t[4..6].copy_from_slice(&ulen.to_be_bytes());
                }
                _ => {}
            }
        }
        if self.with_mac {
            p.set_mac(&[0; MAC_LEN]);
        }
        p.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Corrupted TCP segment 10.0.1.1:5201 -> 10.0.2.1:40000, seq 0x01020304, 1500 bytes;
    // notice 7, no MAC.
    static NOTICE_BYTES: [u8; 36] = [
        0xfd, 0x00, 0x4d, 0x60, 0x01, 0x00, 0x00,
        0x07, // type, code, checksum, version, flags, seq
        0x45, 0x00, 0x05, 0xdc, 0x00, 0x00, 0x00, 0x00, 0x00, 0x06, 0x9e, 0x1b, 0x0a, 0x00, 0x01,
        0x01, 0x0a, 0x00, 0x02, 0x01, // quoted IPv4 header
        0x14, 0x51, 0x9c, 0x40, 0x01, 0x02, 0x03, 0x04, // ports, sequence
    ];

    // The same packet erased; notice 8 with the MAC of key "satlab-test-key" (computed with
    // Python's hmac/hashlib: hmac.new(key, bytes 0..36 with checksum 0, sha256).digest()[:16]).
    static NOTICE_MAC_BYTES: [u8; 52] = [
        0xfd, 0x01, 0x86, 0x98, 0x01, 0x01, 0x00, 0x08, 0x45, 0x00, 0x05, 0xdc, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x06, 0x9e, 0x1b, 0x0a, 0x00, 0x01, 0x01, 0x0a, 0x00, 0x02, 0x01, 0x14, 0x51,
        0x9c, 0x40, 0x01, 0x02, 0x03, 0x04, // as above, code 1, flags 1, seq 8
        0xa8, 0x0f, 0x1c, 0x70, 0xd4, 0x54, 0x2a, 0x01, 0x5e, 0x27, 0x65, 0x56, 0xad, 0xc6, 0x92,
        0xaa, // MAC
    ];

    fn repr() -> Repr {
        Repr {
            code: code::CORRUPTED,
            notice_seq: 7,
            src: Ipv4Addr::new(10, 0, 1, 1),
            dst: Ipv4Addr::new(10, 0, 2, 1),
            protocol: ip_proto::TCP,
            total_len: 1500,
            src_port: 5201,
            dst_port: 40000,
            seq: 0x0102_0304,
            with_mac: false,
        }
    }

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&NOTICE_BYTES[..]).unwrap();
        assert_eq!(p.msg_type(), 253);
        assert_eq!(p.code(), code::CORRUPTED);
        assert_eq!(p.checksum(), 0x4d60);
        assert_eq!(p.version(), 1);
        assert_eq!(p.notice_seq(), 7);
        assert_eq!(p.quoted_src(), Ipv4Addr::new(10, 0, 1, 1));
        assert_eq!(p.quoted_dst(), Ipv4Addr::new(10, 0, 2, 1));
        assert_eq!(p.quoted_protocol(), 6);
        assert_eq!(p.quoted_total_len(), 1500);
        assert_eq!(p.quoted_src_port(), 5201);
        assert_eq!(p.quoted_dst_port(), 40000);
        assert_eq!(p.quoted_seq(), 0x0102_0304);
        assert!(p.mac().is_none());
        assert!(p.verify_checksum());
        // The quote is a header without its payload: view it unchecked.
        assert!(ipv4::Packet::new_unchecked(p.quoted_ip()).verify_checksum());
    }

    #[test]
    fn construct_and_emit() {
        let mut buf = [0u8; 36];
        let r = repr();
        assert_eq!(r.buffer_len(), 36);
        r.emit(&mut Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf, NOTICE_BYTES);
    }

    #[test]
    fn parse() {
        let p = Packet::new_checked(&NOTICE_BYTES[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap(), repr());
    }

    #[test]
    fn with_mac() {
        let p = Packet::new_checked(&NOTICE_MAC_BYTES[..]).unwrap();
        assert_eq!(p.code(), code::ERASED);
        assert_eq!(p.mac().unwrap(), &NOTICE_MAC_BYTES[36..]);
        let input = p.mac_input();
        assert_eq!(&input[..2], &[0xfd, 0x01]);
        assert_eq!(&input[2..4], &[0, 0]);
        assert!(p.verify_checksum());
        // Re-emit: header and quote, then the MAC, then the checksum again.
        let mut buf = [0u8; 52];
        let r = Repr {
            code: code::ERASED,
            notice_seq: 8,
            with_mac: true,
            ..repr()
        };
        assert_eq!(Repr::parse(&p).unwrap(), r);
        let mut q = Packet::new_unchecked(&mut buf[..]);
        r.emit(&mut q);
        let mut mac = [0u8; MAC_LEN];
        mac.copy_from_slice(&NOTICE_MAC_BYTES[36..]);
        q.set_mac(&mac);
        q.fill_checksum();
        assert_eq!(buf, NOTICE_MAC_BYTES);
    }

    #[test]
    fn rejects() {
        assert_eq!(
            Packet::new_checked(&NOTICE_BYTES[..30]).unwrap_err(),
            Error::Truncated
        );
        let mut b = NOTICE_BYTES;
        b[0] = 8;
        assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), Error::Malformed);
        let mut b = NOTICE_BYTES;
        b[5] = flags::MAC; // says MAC but is 36 bytes long
        assert_eq!(Packet::new_checked(&b[..]).unwrap_err(), Error::Truncated);
        let mut b = NOTICE_BYTES;
        b[33] ^= 1;
        let p = Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Repr::parse(&p).unwrap_err(), Error::Checksum);
    }
}
