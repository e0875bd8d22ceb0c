//! TCP segments (RFC 9293).
//!
//! ```text
//! 0..2 source port     2..4 destination port
//! 4..8 sequence number 8..12 acknowledgment number
//! 12   data offset(4) reserved(4)   13 flags CWR ECE URG ACK PSH RST SYN FIN
//! 14..16 window        16..18 checksum         18..20 urgent pointer
//! 20..data offset x 4  options
//! ```

use crate::udp::pseudo_header;
use crate::{checksum, ip_proto, Error, Result};
use std::net::IpAddr;

mod field {
    use crate::Field;
    pub const SRC_PORT: Field = 0..2;
    pub const DST_PORT: Field = 2..4;
    pub const SEQ_NUM: Field = 4..8;
    pub const ACK_NUM: Field = 8..12;
    pub const DATA_OFF: usize = 12;
    pub const FLAGS: usize = 13;
    pub const WIN_SIZE: Field = 14..16;
    pub const CHECKSUM: Field = 16..18;
    pub const URGENT: Field = 18..20;
}

/// Length of a TCP header without options.
pub const HEADER_LEN: usize = 20;

/// TCP flag bits (byte 13).
pub mod flags {
    /// No more data from sender.
    pub const FIN: u8 = 0x01;
    /// Synchronize sequence numbers.
    pub const SYN: u8 = 0x02;
    /// Reset.
    pub const RST: u8 = 0x04;
    /// Push.
    pub const PSH: u8 = 0x08;
    /// Acknowledgment field is significant.
    pub const ACK: u8 = 0x10;
    /// Urgent pointer is significant.
    pub const URG: u8 = 0x20;
    /// ECN echo.
    pub const ECE: u8 = 0x40;
    /// Congestion window reduced.
    pub const CWR: u8 = 0x80;
}

/// A read/write view of a TCP segment. The buffer is the whole segment (header and payload), as
/// given by the IP layer's payload.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Packet<T> {
        Packet { buffer }
    }

    /// Wraps a buffer and checks that the header and its options fit.
    pub fn new_checked(buffer: T) -> Result<Packet<T>> {
        let p = Self::new_unchecked(buffer);
        let len = p.buffer.as_ref().len();
        if len < HEADER_LEN {
            return Err(Error::Truncated);
        }
        let hl = usize::from(p.header_len());
        if hl < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len < hl {
            return Err(Error::Truncated);
        }
        Ok(p)
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    fn u32_at(&self, f: crate::Field) -> u32 {
        let d = &self.buffer.as_ref()[f];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        self.u16_at(field::SRC_PORT)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        self.u16_at(field::DST_PORT)
    }

    /// Sequence number.
    pub fn seq_number(&self) -> u32 {
        self.u32_at(field::SEQ_NUM)
    }

    /// Acknowledgment number.
    pub fn ack_number(&self) -> u32 {
        self.u32_at(field::ACK_NUM)
    }

    /// Header length in bytes (data offset x 4).
    pub fn header_len(&self) -> u8 {
        (self.buffer.as_ref()[field::DATA_OFF] >> 4) * 4
    }

    /// All eight flag bits (see [`flags`]).
    pub fn flags(&self) -> u8 {
        self.buffer.as_ref()[field::FLAGS]
    }

    /// FIN flag.
    pub fn fin(&self) -> bool {
        self.flags() & flags::FIN != 0
    }

    /// SYN flag.
    pub fn syn(&self) -> bool {
        self.flags() & flags::SYN != 0
    }

    /// RST flag.
    pub fn rst(&self) -> bool {
        self.flags() & flags::RST != 0
    }

    /// PSH flag.
    pub fn psh(&self) -> bool {
        self.flags() & flags::PSH != 0
    }

    /// ACK flag.
    pub fn ack(&self) -> bool {
        self.flags() & flags::ACK != 0
    }

    /// URG flag.
    pub fn urg(&self) -> bool {
        self.flags() & flags::URG != 0
    }

    /// ECE flag.
    pub fn ece(&self) -> bool {
        self.flags() & flags::ECE != 0
    }

    /// CWR flag.
    pub fn cwr(&self) -> bool {
        self.flags() & flags::CWR != 0
    }

    /// Window field (unscaled).
    pub fn window_len(&self) -> u16 {
        self.u16_at(field::WIN_SIZE)
    }

    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        self.u16_at(field::CHECKSUM)
    }

    /// Urgent pointer.
    pub fn urgent_at(&self) -> u16 {
        self.u16_at(field::URGENT)
    }

    /// Option bytes.
    pub fn options(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.header_len())]
    }

    /// The payload after header and options.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[usize::from(self.header_len())..]
    }

    /// Sequence space the segment occupies (payload length, plus one each for SYN and FIN).
    pub fn segment_len(&self) -> usize {
        self.payload().len() + usize::from(self.syn()) + usize::from(self.fin())
    }

    /// Whether the checksum verifies over the pseudo-header and the whole buffer.
    pub fn verify_checksum(&self, src: IpAddr, dst: IpAddr) -> bool {
        let d = self.buffer.as_ref();
        let sum = checksum::combine(&[
            pseudo_header(src, dst, ip_proto::TCP, d.len() as u32),
            checksum::data(d),
        ]);
        checksum::fold(sum) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    fn set_u16_at(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }

    fn set_u32_at(&mut self, f: crate::Field, v: u32) {
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

    /// Sets the sequence number.
    pub fn set_seq_number(&mut self, v: u32) {
        self.set_u32_at(field::SEQ_NUM, v)
    }

    /// Sets the acknowledgment number.
    pub fn set_ack_number(&mut self, v: u32) {
        self.set_u32_at(field::ACK_NUM, v)
    }

    /// Sets the header length in bytes (a multiple of 4), clearing the reserved bits.
    pub fn set_header_len(&mut self, v: u8) {
        self.buffer.as_mut()[field::DATA_OFF] = (v / 4) << 4;
    }

    /// Sets all eight flag bits.
    pub fn set_flags(&mut self, v: u8) {
        self.buffer.as_mut()[field::FLAGS] = v;
    }

    /// Sets the window field.
    pub fn set_window_len(&mut self, v: u16) {
        self.set_u16_at(field::WIN_SIZE, v)
    }

    /// Sets the checksum field as is.
    pub fn set_checksum(&mut self, v: u16) {
        self.set_u16_at(field::CHECKSUM, v)
    }

    /// Sets the urgent pointer.
    pub fn set_urgent_at(&mut self, v: u16) {
        self.set_u16_at(field::URGENT, v)
    }

    /// Computes and writes the checksum over the pseudo-header and the whole buffer.
    pub fn fill_checksum(&mut self, src: IpAddr, dst: IpAddr) {
        self.set_checksum(0);
        let d = self.buffer.as_ref();
        let sum = checksum::combine(&[
            pseudo_header(src, dst, ip_proto::TCP, d.len() as u32),
            checksum::data(d),
        ]);
        self.set_checksum(checksum::finish(sum));
    }

    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let hl = usize::from(self.header_len());
        &mut self.buffer.as_mut()[hl..]
    }
}

/// The decoded form of a TCP header (options kept as raw bytes length only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Sequence number.
    pub seq_number: u32,
    /// Acknowledgment number.
    pub ack_number: u32,
    /// Flag bits.
    pub flags: u8,
    /// Window field.
    pub window_len: u16,
    /// Payload length.
    pub payload_len: usize,
}

impl Repr {
    /// Decodes a segment; its checksum must verify.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>, src: IpAddr, dst: IpAddr) -> Result<Repr> {
        if !p.verify_checksum(src, dst) {
            return Err(Error::Checksum);
        }
        Ok(Repr {
            src_port: p.src_port(),
            dst_port: p.dst_port(),
            seq_number: p.seq_number(),
            ack_number: p.ack_number(),
            flags: p.flags(),
            window_len: p.window_len(),
            payload_len: p.payload().len(),
        })
    }

    /// Header length when emitted (no options).
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes a 20-byte header and the checksum (payload already in place, buffer = whole segment).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>, src: IpAddr, dst: IpAddr) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_seq_number(self.seq_number);
        p.set_ack_number(self.ack_number);
        p.set_header_len(HEADER_LEN as u8);
        p.set_flags(self.flags);
        p.set_window_len(self.window_len);
        p.set_urgent_at(0);
        p.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const DST: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));

    // 40000 -> 5201, seq 0x01020304, ack 0x0a0b0c0d, PSH|ACK, window 64240, checksum 0x4cbd, "hi!".
    static SEGMENT_BYTES: [u8; 23] = [
        0x9c, 0x40, 0x14, 0x51, 0x01, 0x02, 0x03, 0x04, 0x0a, 0x0b, 0x0c, 0x0d, 0x50, 0x18, 0xfa,
        0xf0, 0x4c, 0xbd, 0x00, 0x00, 0x68, 0x69, 0x21,
    ];

    #[test]
    fn deconstruct() {
        let p = Packet::new_checked(&SEGMENT_BYTES[..]).unwrap();
        assert_eq!(p.src_port(), 40000);
        assert_eq!(p.dst_port(), 5201);
        assert_eq!(p.seq_number(), 0x0102_0304);
        assert_eq!(p.ack_number(), 0x0a0b_0c0d);
        assert_eq!(p.header_len(), 20);
        assert!(
            p.psh()
                && p.ack()
                && !p.syn()
                && !p.fin()
                && !p.rst()
                && !p.urg()
                && !p.ece()
                && !p.cwr()
        );
        assert_eq!(p.window_len(), 64240);
        assert_eq!(p.checksum(), 0x4cbd);
        assert_eq!(p.urgent_at(), 0);
        assert_eq!(p.options(), &[] as &[u8]);
        assert_eq!(p.payload(), b"hi!");
        assert_eq!(p.segment_len(), 3);
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 23];
        buf[20..].copy_from_slice(b"hi!");
        let mut p = Packet::new_unchecked(&mut buf[..]);
        p.set_src_port(40000);
        p.set_dst_port(5201);
        p.set_seq_number(0x0102_0304);
        p.set_ack_number(0x0a0b_0c0d);
        p.set_header_len(20);
        p.set_flags(flags::PSH | flags::ACK);
        p.set_window_len(64240);
        p.set_urgent_at(0);
        p.fill_checksum(SRC, DST);
        assert_eq!(buf, SEGMENT_BYTES);
    }

    #[test]
    fn repr_roundtrip() {
        let repr =
            Repr::parse(&Packet::new_checked(&SEGMENT_BYTES[..]).unwrap(), SRC, DST).unwrap();
        assert_eq!(repr.payload_len, 3);
        let mut buf = [0u8; 23];
        buf[20..].copy_from_slice(b"hi!");
        repr.emit(&mut Packet::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(buf, SEGMENT_BYTES);
    }

    #[test]
    fn single_bit_error_fails_checksum() {
        for bit in 0..SEGMENT_BYTES.len() * 8 {
            let mut buf = SEGMENT_BYTES;
            buf[bit / 8] ^= 1 << (bit % 8);
            assert!(
                !Packet::new_unchecked(&buf[..]).verify_checksum(SRC, DST),
                "bit {bit}"
            );
        }
    }

    #[test]
    fn bad_data_offset() {
        let mut buf = SEGMENT_BYTES;
        buf[12] = 0x40;
        assert_eq!(Packet::new_checked(&buf[..]).unwrap_err(), Error::Malformed);
        buf[12] = 0x60;
        assert_eq!(Packet::new_checked(&buf[..]).unwrap_err(), Error::Truncated);
    }
}
