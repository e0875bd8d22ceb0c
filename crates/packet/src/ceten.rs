//! CETEN fields: cumulative (per-path) corruption and congestion survival probabilities
//! (ETEN report §4, "Explicit Transport Error Notification (ETEN) for Error-Prone Wireless and Satellite Networks", BBN TR 8333), carried as a TCP option.
//!
//! This file is the one place the encoding is defined; the gateway rewrites it, the end-host code
//! (sockops `bpf_store_hdr_opt` / `bpf_load_hdr_opt`) writes and reads it.
//!
//! ```text
//! +--------+--------+-----------------+
//! | 254    | len=12 | ExID 0x4345 "CE"|   0..4   RFC 6994 experimental option
//! +--------+--------+-----------------+
//! | fwd corruption  | fwd congestion  |   4..8   path products, forward direction of this packet
//! +-----------------+-----------------+
//! | rev corruption  | rev congestion  |   8..12  reflected by the receiver: what the peer's packets saw
//! +-----------------+-----------------+
//! ```
//! Every probability is an unsigned 16-bit fixed-point number, p = value / 65535 (0xffff = 1.0).
//!
//! Semantics (as the report): the sender writes forward = 1.0 (0xffff) in both forward fields;
//! every CETEN router multiplies them by its estimates for the link the packet crossed
//! ([`mul`], rounding to nearest), so the receiver sees the product along the path; the receiver
//! copies the last forward values it saw into the reverse fields of every packet or ACK it sends
//! back. Routers never touch the reverse fields, except a satellite edge configured to *reflect*
//! on behalf of a receiver that does not speak CETEN (the gateway's `ceten.reflect`).
//!
//! Why a TCP option and not an IP option: the end hosts set and read it from sockops
//! (`bpf_store_hdr_opt`), which writes TCP options only; IPv4 options send packets to the slow
//! path of many routers and are dropped by some middleboxes, while unknown TCP options pass
//! (IP-ERN makes the same argument). The cost: 12 of the 40 option bytes (with timestamps, 32
//! are used), 12 bytes per segment (0.8 % of a 1500-byte packet; the sender's MSS shrinks by 12),
//! and a router must adjust the TCP checksum incrementally when it rewrites the fields
//! ([`crate::tcpopt::checksum_adjust`]). Only TCP flows can carry it.

use crate::tcpopt;
use crate::{Error, Result};

mod field {
    use crate::Field;
    pub const KIND: usize = 0;
    pub const LEN: usize = 1;
    pub const EXID: Field = 2..4;
    pub const FWD_CORR: Field = 4..6;
    pub const FWD_CONG: Field = 6..8;
    pub const REV_CORR: Field = 8..10;
    pub const REV_CONG: Field = 10..12;
}

/// Option length.
pub const LEN: usize = 12;
/// RFC 6994 experiment identifier ("CE").
pub const EXID: u16 = 0x4345;
/// Probability 1.0.
pub const ONE: u16 = 0xffff;

/// Fixed-point encoding of a probability (clamped to [0, 1], rounded to nearest).
pub fn to_q16(p: f64) -> u16 {
    (p.clamp(0.0, 1.0) * 65535.0).round() as u16
}

/// Decodes a fixed-point probability.
pub fn from_q16(v: u16) -> f64 {
    f64::from(v) / 65535.0
}

/// Product of two fixed-point probabilities, rounded to nearest.
pub fn mul(a: u16, b: u16) -> u16 {
    ((u32::from(a) * u32::from(b) + 32767) / 65535) as u16
}

/// Finds the CETEN option in a TCP option list: its offset in `options`.
pub fn find(options: &[u8]) -> Option<usize> {
    tcpopt::find_experimental(options, EXID, LEN).map(|f| f.offset)
}

/// A read/write view of the 12-byte option.
#[derive(Debug, Clone)]
pub struct Opt<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Opt<T> {
    /// Wraps a buffer without checking it.
    pub const fn new_unchecked(buffer: T) -> Opt<T> {
        Opt { buffer }
    }

    /// Wraps a buffer and checks kind, length and experiment identifier.
    pub fn new_checked(buffer: T) -> Result<Opt<T>> {
        let o = Self::new_unchecked(buffer);
        let b = o.buffer.as_ref();
        if b.len() < LEN {
            return Err(Error::Truncated);
        }
        if b[field::KIND] != tcpopt::kind::EXP2 || usize::from(b[field::LEN]) != LEN {
            return Err(Error::Malformed);
        }
        if u16::from_be_bytes([b[2], b[3]]) != EXID {
            return Err(Error::Malformed);
        }
        Ok(o)
    }

    fn u16_at(&self, f: crate::Field) -> u16 {
        let d = &self.buffer.as_ref()[f];
        u16::from_be_bytes([d[0], d[1]])
    }

    /// Experiment identifier.
    pub fn exid(&self) -> u16 {
        self.u16_at(field::EXID)
    }
    /// Forward corruption survival (fixed point).
    pub fn fwd_corruption(&self) -> u16 {
        self.u16_at(field::FWD_CORR)
    }
    /// Forward congestion survival (fixed point).
    pub fn fwd_congestion(&self) -> u16 {
        self.u16_at(field::FWD_CONG)
    }
    /// Reverse (reflected) corruption survival (fixed point).
    pub fn rev_corruption(&self) -> u16 {
        self.u16_at(field::REV_CORR)
    }
    /// Reverse (reflected) congestion survival (fixed point).
    pub fn rev_congestion(&self) -> u16 {
        self.u16_at(field::REV_CONG)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Opt<T> {
    fn set_u16(&mut self, f: crate::Field, v: u16) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes kind, length and experiment identifier.
    pub fn set_header(&mut self) {
        let b = self.buffer.as_mut();
        b[field::KIND] = tcpopt::kind::EXP2;
        b[field::LEN] = LEN as u8;
        self.set_u16(field::EXID, EXID);
    }
    /// Sets the forward corruption survival.
    pub fn set_fwd_corruption(&mut self, v: u16) {
        self.set_u16(field::FWD_CORR, v);
    }
    /// Sets the forward congestion survival.
    pub fn set_fwd_congestion(&mut self, v: u16) {
        self.set_u16(field::FWD_CONG, v);
    }
    /// Sets the reverse corruption survival.
    pub fn set_rev_corruption(&mut self, v: u16) {
        self.set_u16(field::REV_CORR, v);
    }
    /// Sets the reverse congestion survival.
    pub fn set_rev_congestion(&mut self, v: u16) {
        self.set_u16(field::REV_CONG, v);
    }
}

/// The decoded option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// Forward corruption survival (fixed point).
    pub fwd_corruption: u16,
    /// Forward congestion survival.
    pub fwd_congestion: u16,
    /// Reverse corruption survival.
    pub rev_corruption: u16,
    /// Reverse congestion survival.
    pub rev_congestion: u16,
}

impl Repr {
    /// What a sender writes on a fresh packet: forward 1.0, reverse as given.
    pub fn fresh(rev_corruption: u16, rev_congestion: u16) -> Repr {
        Repr {
            fwd_corruption: ONE,
            fwd_congestion: ONE,
            rev_corruption,
            rev_congestion,
        }
    }

    /// Decodes a checked option.
    pub fn parse<T: AsRef<[u8]>>(o: &Opt<T>) -> Repr {
        Repr {
            fwd_corruption: o.fwd_corruption(),
            fwd_congestion: o.fwd_congestion(),
            rev_corruption: o.rev_corruption(),
            rev_congestion: o.rev_congestion(),
        }
    }

    /// Writes the whole option.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, o: &mut Opt<T>) {
        o.set_header();
        o.set_fwd_corruption(self.fwd_corruption);
        o.set_fwd_congestion(self.fwd_congestion);
        o.set_rev_corruption(self.rev_corruption);
        o.set_rev_congestion(self.rev_congestion);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // forward 0.9 / 1.0, reverse 0.5 / 0.25.
    static OPTION_BYTES: [u8; 12] = [
        0xfe, 0x0c, 0x43, 0x45, 0xe6, 0x66, 0xff, 0xff, 0x80, 0x00, 0x40, 0x00,
    ];

    fn repr() -> Repr {
        Repr {
            fwd_corruption: to_q16(0.9),
            fwd_congestion: ONE,
            rev_corruption: to_q16(0.5),
            rev_congestion: to_q16(0.25),
        }
    }

    #[test]
    fn deconstruct() {
        let o = Opt::new_checked(&OPTION_BYTES[..]).unwrap();
        assert_eq!(o.exid(), EXID);
        assert_eq!(o.fwd_corruption(), 0xe666);
        assert_eq!(o.fwd_congestion(), 0xffff);
        assert_eq!(o.rev_corruption(), 0x8000);
        assert_eq!(o.rev_congestion(), 0x4000);
        assert!((from_q16(o.fwd_corruption()) - 0.9).abs() < 1e-4);
        assert_eq!(Repr::parse(&o), repr());
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 12];
        repr().emit(&mut Opt::new_unchecked(&mut buf[..]));
        assert_eq!(buf, OPTION_BYTES);
    }

    #[test]
    fn product() {
        assert_eq!(mul(ONE, ONE), ONE);
        assert_eq!(mul(ONE, 0x8000), 0x8000);
        assert_eq!(mul(0x8000, 0x8000), 0x4000); // 0.5 * 0.5 = 0.25 (16384.25 -> 16384)
        assert_eq!(mul(0, ONE), 0);
        // 0.9 * 0.9 = 0.81
        assert!((from_q16(mul(to_q16(0.9), to_q16(0.9))) - 0.81).abs() < 2e-5);
    }

    #[test]
    fn find_in_list() {
        let mut opts = [
            1u8, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        ];
        opts[12..24].copy_from_slice(&OPTION_BYTES);
        assert_eq!(find(&opts), Some(12));
        assert_eq!(find(&opts[..20]), None);
    }

    #[test]
    fn rejects() {
        let mut b = OPTION_BYTES;
        b[3] = 0x46;
        assert_eq!(Opt::new_checked(&b[..]).unwrap_err(), Error::Malformed);
        assert_eq!(
            Opt::new_checked(&OPTION_BYTES[..10]).unwrap_err(),
            Error::Truncated
        );
    }
}
