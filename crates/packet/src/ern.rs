//! The IP-ERN option: the XCP-style congestion header IP-ERN carries "over TCP" (IP-ERN paper §2,
//! "An IP-ERN architecture to enable hybrid E2E/ERN protocol and application to satellite networking", Computer Networks 56 (2012) §2-3), as an RFC 6994 experimental TCP option.
//!
//! This file is the one place the format is defined; the gateway (ERN router) reads and lowers the
//! feedback, the end-host code (sockops) writes it, echoes it and applies it.
//!
//! ```text
//! +--------+--------+-----------------+
//! | 254    | len=20 | ExID 0x4552 "ER"|   0..4
//! +--------+--------+-----------------+
//! | H_cwnd: sender's congestion window, bytes (u32)  |   4..8
//! +--------------------------------------------------+
//! | H_rtt: sender's RTT estimate, microseconds (u32; 0 = none yet) |  8..12
//! +--------------------------------------------------+
//! | H_feedback: window change, bytes (i32)           |  12..16  lowered by routers: min(H, computed)
//! +--------------------------------------------------+
//! | H_reverse_feedback: echoed feedback, bytes (i32) |  16..20  written by the receiver on its ACKs
//! +--------------------------------------------------+
//! ```
//! - Negotiation (paper §1 "Handshake"): the SYN carries the option ("IP-ERN capable sender"), the
//!   SYN-ACK answers with it ("capable receiver"); only then do the data packets carry it.
//! - Recognition by a router: the option is the **first** option of the TCP header (NOPs before it
//!   allowed), and optionally the port is one of a configured set (the paper's reserved
//!   ERN-over-TCP port). Anything else is forwarded untouched.
//! - The sender writes its cwnd and RTT and puts its desired increase in `H_feedback` (or
//!   [`FEEDBACK_NONE`] for "no limit"); each ERN router on the path lowers it to
//!   `min(H_feedback, its computed feedback)` (the most congested hop wins). The receiver copies the
//!   value into `H_reverse_feedback` of the ACK; the sender then sets
//!   `cwnd_ern = max(cwnd_ern + H_reverse_feedback, MSS)`, and `cwnd = min(cwnd_tcp, cwnd_ern)`.
//! - Routers never touch `H_reverse_feedback`, and count only segments with payload (pure ACKs are
//!   forwarded as they are).
//!
//! Cost: 20 of the 40 TCP option bytes (with timestamps, 32 used), 20 bytes per segment.

use crate::tcpopt;
use crate::{Error, Result};

mod field {
    use crate::Field;
    pub const KIND: usize = 0;
    pub const LEN: usize = 1;
    pub const EXID: Field = 2..4;
    pub const CWND: Field = 4..8;
    pub const RTT: Field = 8..12;
    pub const FEEDBACK: Field = 12..16;
    pub const REV_FEEDBACK: Field = 16..20;
}

/// Option length.
pub const LEN: usize = 20;
/// RFC 6994 experiment identifier ("ER").
pub const EXID: u16 = 0x4552;
/// Feedback meaning "no limit" (what a sender writes when it wants no cap).
pub const FEEDBACK_NONE: i32 = i32::MAX;

/// Finds the ERN option in a TCP option list: `(offset, is_first_option)`.
pub fn find(options: &[u8]) -> Option<(usize, bool)> {
    tcpopt::find_experimental(options, EXID, LEN).map(|f| (f.offset, f.first))
}

/// A read/write view of the 20-byte option.
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
        if b[field::KIND] != tcpopt::kind::EXP2
            || usize::from(b[field::LEN]) != LEN
            || u16::from_be_bytes([b[2], b[3]]) != EXID
        {
            return Err(Error::Malformed);
        }
        Ok(o)
    }

    fn u32_at(&self, f: crate::Field) -> u32 {
        let d = &self.buffer.as_ref()[f];
        u32::from_be_bytes([d[0], d[1], d[2], d[3]])
    }

    /// Experiment identifier.
    pub fn exid(&self) -> u16 {
        let d = &self.buffer.as_ref()[field::EXID];
        u16::from_be_bytes([d[0], d[1]])
    }
    /// H_cwnd, bytes.
    pub fn cwnd(&self) -> u32 {
        self.u32_at(field::CWND)
    }
    /// H_rtt, microseconds.
    pub fn rtt_us(&self) -> u32 {
        self.u32_at(field::RTT)
    }
    /// H_feedback, bytes.
    pub fn feedback(&self) -> i32 {
        self.u32_at(field::FEEDBACK) as i32
    }
    /// H_reverse_feedback, bytes.
    pub fn reverse_feedback(&self) -> i32 {
        self.u32_at(field::REV_FEEDBACK) as i32
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Opt<T> {
    fn set_u32(&mut self, f: crate::Field, v: u32) {
        self.buffer.as_mut()[f].copy_from_slice(&v.to_be_bytes());
    }
    /// Writes kind, length and experiment identifier.
    pub fn set_header(&mut self) {
        let b = self.buffer.as_mut();
        b[field::KIND] = tcpopt::kind::EXP2;
        b[field::LEN] = LEN as u8;
        b[field::EXID].copy_from_slice(&EXID.to_be_bytes());
    }
    /// Sets H_cwnd.
    pub fn set_cwnd(&mut self, v: u32) {
        self.set_u32(field::CWND, v);
    }
    /// Sets H_rtt.
    pub fn set_rtt_us(&mut self, v: u32) {
        self.set_u32(field::RTT, v);
    }
    /// Sets H_feedback.
    pub fn set_feedback(&mut self, v: i32) {
        self.set_u32(field::FEEDBACK, v as u32);
    }
    /// Sets H_reverse_feedback.
    pub fn set_reverse_feedback(&mut self, v: i32) {
        self.set_u32(field::REV_FEEDBACK, v as u32);
    }
}

/// The decoded option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    /// H_cwnd, bytes.
    pub cwnd: u32,
    /// H_rtt, microseconds.
    pub rtt_us: u32,
    /// H_feedback, bytes.
    pub feedback: i32,
    /// H_reverse_feedback, bytes.
    pub reverse_feedback: i32,
}

impl Repr {
    /// Decodes a checked option.
    pub fn parse<T: AsRef<[u8]>>(o: &Opt<T>) -> Repr {
        Repr {
            cwnd: o.cwnd(),
            rtt_us: o.rtt_us(),
            feedback: o.feedback(),
            reverse_feedback: o.reverse_feedback(),
        }
    }

    /// Writes the whole option.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, o: &mut Opt<T>) {
        o.set_header();
        o.set_cwnd(self.cwnd);
        o.set_rtt_us(self.rtt_us);
        o.set_feedback(self.feedback);
        o.set_reverse_feedback(self.reverse_feedback);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // cwnd 14600 B, rtt 600 ms, feedback -1460 B, reverse feedback +2920 B.
    static OPTION_BYTES: [u8; 20] = [
        0xfe, 0x14, 0x45, 0x52, 0x00, 0x00, 0x39, 0x08, 0x00, 0x09, 0x27, 0xc0, 0xff, 0xff, 0xfa,
        0x4c, 0x00, 0x00, 0x0b, 0x68,
    ];

    fn repr() -> Repr {
        Repr {
            cwnd: 14600,
            rtt_us: 600_000,
            feedback: -1460,
            reverse_feedback: 2920,
        }
    }

    #[test]
    fn deconstruct() {
        let o = Opt::new_checked(&OPTION_BYTES[..]).unwrap();
        assert_eq!(o.exid(), EXID);
        assert_eq!(o.cwnd(), 14600);
        assert_eq!(o.rtt_us(), 600_000);
        assert_eq!(o.feedback(), -1460);
        assert_eq!(o.reverse_feedback(), 2920);
        assert_eq!(Repr::parse(&o), repr());
    }

    #[test]
    fn construct() {
        let mut buf = [0u8; 20];
        repr().emit(&mut Opt::new_unchecked(&mut buf[..]));
        assert_eq!(buf, OPTION_BYTES);
    }

    #[test]
    fn first_option_rule() {
        let mut opts = [1u8; 24];
        opts[2..22].copy_from_slice(&OPTION_BYTES);
        opts[22] = 0;
        assert_eq!(find(&opts), Some((2, true)));
        let mut late = [0u8; 32];
        late[..2].copy_from_slice(&[4, 2]); // SACK-permitted first
        late[2..22].copy_from_slice(&OPTION_BYTES);
        assert_eq!(find(&late), Some((2, false)));
    }

    #[test]
    fn rejects() {
        let mut b = OPTION_BYTES;
        b[1] = 16;
        assert_eq!(Opt::new_checked(&b[..]).unwrap_err(), Error::Malformed);
        assert_eq!(
            Opt::new_checked(&OPTION_BYTES[..19]).unwrap_err(),
            Error::Truncated
        );
    }
}
