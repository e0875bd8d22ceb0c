//! Per-packet work on frames: header location, ECN marking, the CETEN option (stamp, reflect,
//! insert) and the ERN option (read, lower the feedback). Rewrites adjust checksums incrementally
//! (RFC 1624), so a packet the link corrupted stays detectably corrupt.

use packet::tcpopt::checksum_adjust;
use packet::{ceten, ern, ethernet, ip_proto, ipv4, tcp};
use std::net::IpAddr;

/// Where the headers of an IPv4/TCP frame are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLoc {
    /// Offset of the IPv4 header.
    pub l3: usize,
    /// Offset of the TCP header.
    pub l4: usize,
    /// TCP header length.
    pub tcp_hl: usize,
    /// End of the IP packet in the frame.
    pub end: usize,
}

impl TcpLoc {
    /// Offset of the TCP options.
    pub fn opts(&self) -> usize {
        self.l4 + tcp::HEADER_LEN
    }
    /// TCP payload length.
    pub fn payload_len(&self) -> usize {
        self.end - self.l4 - self.tcp_hl
    }
}

/// Offset of the IPv4 header, when the frame carries IPv4.
pub fn ipv4_at(frame: &[u8]) -> Option<usize> {
    let e = ethernet::Frame::new_checked(frame).ok()?;
    if e.payload_ethertype() != ethernet::ethertype::IPV4 {
        return None;
    }
    let l3 = e.header_len();
    ipv4::Packet::new_checked(&frame[l3..]).ok()?;
    Some(l3)
}

/// Locates IPv4 + TCP (first fragments only).
pub fn locate_tcp(frame: &[u8]) -> Option<TcpLoc> {
    let l3 = ipv4_at(frame)?;
    let ip = ipv4::Packet::new_unchecked(&frame[l3..]);
    if ip.protocol() != ip_proto::TCP || ip.is_later_fragment() {
        return None;
    }
    let l4 = l3 + usize::from(ip.header_len());
    let end = l3 + usize::from(ip.total_len());
    let t = tcp::Packet::new_checked(frame.get(l4..end)?).ok()?;
    Some(TcpLoc {
        l3,
        l4,
        tcp_hl: usize::from(t.header_len()),
        end,
    })
}

/// Whether the IPv4 packet is ECN-capable (ECT(0), ECT(1)).
pub fn is_ect(frame: &[u8]) -> bool {
    ipv4_at(frame).is_some_and(|l3| matches!(frame[l3 + 1] & 3, 1 | 2))
}

/// Sets CE on an ECT IPv4 packet, adjusting the header checksum. Returns whether it did.
pub fn set_ce(frame: &mut [u8]) -> bool {
    let Some(l3) = ipv4_at(frame) else {
        return false;
    };
    if !matches!(frame[l3 + 1] & 3, 1 | 2) {
        return false;
    }
    let old = [frame[l3], frame[l3 + 1]];
    let new = [frame[l3], frame[l3 + 1] | 3];
    let c = u16::from_be_bytes([frame[l3 + 10], frame[l3 + 11]]);
    let c2 = checksum_adjust(c, 0, &old, &new);
    frame[l3 + 1] |= 3;
    frame[l3 + 10..l3 + 12].copy_from_slice(&c2.to_be_bytes());
    true
}

/// Writes `new` at frame offset `at` inside the TCP header of `loc`, adjusting the TCP checksum.
fn rewrite_tcp(frame: &mut [u8], loc: &TcpLoc, at: usize, new: &[u8]) {
    let old: [u8; 24] = {
        let mut o = [0u8; 24];
        o[..new.len()].copy_from_slice(&frame[at..at + new.len()]);
        o
    };
    let ck_at = loc.l4 + 16;
    let c = u16::from_be_bytes([frame[ck_at], frame[ck_at + 1]]);
    let c2 = checksum_adjust(c, at - loc.l4, &old[..new.len()], new);
    frame[at..at + new.len()].copy_from_slice(new);
    frame[ck_at..ck_at + 2].copy_from_slice(&c2.to_be_bytes());
}

/// The data-direction flow of a TCP frame: (src, dst, sport, dport).
pub fn flow_of(frame: &[u8], loc: &TcpLoc) -> crate::state::FlowId {
    let ip = ipv4::Packet::new_unchecked(&frame[loc.l3..]);
    let t = tcp::Packet::new_unchecked(&frame[loc.l4..loc.end]);
    (
        IpAddr::V4(ip.src_addr()),
        IpAddr::V4(ip.dst_addr()),
        t.src_port(),
        t.dst_port(),
    )
}

/// Offset (in the frame) of the CETEN option.
pub fn ceten_at(frame: &[u8], loc: &TcpLoc) -> Option<usize> {
    let opts = &frame[loc.opts()..loc.l4 + loc.tcp_hl];
    ceten::find(opts).map(|o| loc.opts() + o)
}

/// Multiplies the forward fields of a CETEN option by `corr` / `cong` (fixed point; None = leave).
/// Returns the new forward (corruption, congestion).
pub fn ceten_stamp(
    frame: &mut [u8],
    loc: &TcpLoc,
    corr: Option<u16>,
    cong: Option<u16>,
) -> Option<(u16, u16)> {
    let at = ceten_at(frame, loc)?;
    let o = ceten::Opt::new_checked(&frame[at..at + ceten::LEN]).ok()?;
    let fc = corr.map_or(o.fwd_corruption(), |p| ceten::mul(o.fwd_corruption(), p));
    let fg = cong.map_or(o.fwd_congestion(), |p| ceten::mul(o.fwd_congestion(), p));
    let mut new = [0u8; 4];
    new[..2].copy_from_slice(&fc.to_be_bytes());
    new[2..].copy_from_slice(&fg.to_be_bytes());
    rewrite_tcp(frame, loc, at + 4, &new);
    Some((fc, fg))
}

/// What reflection did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reflected {
    /// Nothing (no option, no room, not a pure ACK).
    No,
    /// Reverse fields written into an existing option.
    Written,
    /// A CETEN option inserted (forward 1.0, reverse as given).
    Inserted,
}

/// Writes reverse fields `rev` = (corruption, congestion) into the frame's CETEN option; with
/// `insert`, a pure ACK (no payload, not SYN) without the option gets one when its TCP header has
/// room. The frame may grow by 12 bytes.
pub fn ceten_reflect(
    frame: &mut Vec<u8>,
    loc: &TcpLoc,
    rev: (u16, u16),
    insert: bool,
) -> Reflected {
    if let Some(at) = ceten_at(frame, loc) {
        let mut new = [0u8; 4];
        new[..2].copy_from_slice(&rev.0.to_be_bytes());
        new[2..].copy_from_slice(&rev.1.to_be_bytes());
        rewrite_tcp(frame, loc, at + 8, &new);
        return Reflected::Written;
    }
    if !insert || loc.payload_len() != 0 || loc.tcp_hl + ceten::LEN > 60 {
        return Reflected::No;
    }
    let t = tcp::Packet::new_unchecked(&frame[loc.l4..loc.end]);
    if t.syn() || !t.ack() {
        return Reflected::No;
    }
    // Insert after the existing options (end of the TCP header): no payload moves.
    let mut opt = [0u8; ceten::LEN];
    ceten::Repr::fresh(rev.0, rev.1).emit(&mut ceten::Opt::new_unchecked(&mut opt[..]));
    let at = loc.l4 + loc.tcp_hl;
    frame.truncate(loc.end); // drop Ethernet padding of a short frame
    frame.splice(at..at, opt);
    let (src, dst, new_hl, total) = {
        let mut ip = ipv4::Packet::new_unchecked(&mut frame[loc.l3..]);
        let total = ip.total_len() + ceten::LEN as u16;
        ip.set_total_len(total);
        ip.fill_checksum();
        (
            ip.src_addr(),
            ip.dst_addr(),
            (loc.tcp_hl + ceten::LEN) as u8,
            total,
        )
    };
    let end = loc.l3 + usize::from(total);
    let mut t = tcp::Packet::new_unchecked(&mut frame[loc.l4..end]);
    t.set_header_len(new_hl);
    // Locally originated pure ACK (not from the satellite link): a full checksum is safe.
    t.fill_checksum(IpAddr::V4(src), IpAddr::V4(dst));
    Reflected::Inserted
}

/// The ERN header of a recognised ERN data segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErnSeg {
    /// Offset of the option in the frame.
    pub at: usize,
    /// H_cwnd.
    pub cwnd: u32,
    /// H_rtt, µs.
    pub rtt_us: u32,
    /// H_feedback.
    pub feedback: i32,
    /// IP packet size, bytes.
    pub size: usize,
}

/// Recognises an ERN data segment: TCP with payload, the ERN option first, and (when `ports` is
/// not empty) either port in `ports`.
pub fn ern_segment(frame: &[u8], loc: &TcpLoc, ports: &[u16]) -> Option<ErnSeg> {
    if loc.payload_len() == 0 {
        return None;
    }
    if !ports.is_empty() {
        let t = tcp::Packet::new_unchecked(&frame[loc.l4..loc.end]);
        if !ports.contains(&t.src_port()) && !ports.contains(&t.dst_port()) {
            return None;
        }
    }
    let opts = &frame[loc.opts()..loc.l4 + loc.tcp_hl];
    let (off, first) = ern::find(opts)?;
    if !first {
        return None;
    }
    let at = loc.opts() + off;
    let o = ern::Opt::new_checked(&frame[at..at + ern::LEN]).ok()?;
    Some(ErnSeg {
        at,
        cwnd: o.cwnd(),
        rtt_us: o.rtt_us(),
        feedback: o.feedback(),
        size: loc.end - loc.l3,
    })
}

/// Sets H_feedback.
pub fn ern_set_feedback(frame: &mut [u8], loc: &TcpLoc, seg: &ErnSeg, fb: i32) {
    rewrite_tcp(frame, loc, seg.at + 12, &fb.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const SRC: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 1);

    /// Ethernet + IPv4 + TCP with `opts` and `payload`, checksums filled.
    fn frame(opts: &[u8], payload: usize, flags: u8, tos: u8) -> Vec<u8> {
        let hl = 20 + opts.len();
        let total = 20 + hl + payload;
        let mut f = vec![0u8; 14 + total];
        f[12..14].copy_from_slice(&[8, 0]);
        {
            let mut ip = ipv4::Packet::new_unchecked(&mut f[14..]);
            ip.set_version_and_header_len(20);
            ip.set_total_len(total as u16);
            ip.set_ttl(64);
            ip.set_protocol(6);
            ip.set_src_addr(SRC);
            ip.set_dst_addr(DST);
            ip.set_ecn(tos);
            ip.fill_checksum();
        }
        let mut t = tcp::Packet::new_unchecked(&mut f[34..]);
        t.set_src_port(5201);
        t.set_dst_port(40000);
        t.set_seq_number(1000);
        t.set_header_len(hl as u8);
        t.set_flags(flags);
        t.payload_mut(); // keep borrowck simple
        f[54..54 + opts.len()].copy_from_slice(opts);
        let mut t = tcp::Packet::new_unchecked(&mut f[34..]);
        t.fill_checksum(IpAddr::V4(SRC), IpAddr::V4(DST));
        f
    }

    fn tcp_ok(f: &[u8]) -> bool {
        let loc = locate_tcp(f).unwrap();
        tcp::Packet::new_unchecked(&f[loc.l4..loc.end])
            .verify_checksum(IpAddr::V4(SRC), IpAddr::V4(DST))
    }

    fn ceten_opt(fc: u16, fg: u16) -> [u8; 12] {
        let mut o = [0u8; 12];
        ceten::Repr {
            fwd_corruption: fc,
            fwd_congestion: fg,
            rev_corruption: 0,
            rev_congestion: 0,
        }
        .emit(&mut ceten::Opt::new_unchecked(&mut o[..]));
        o
    }

    #[test]
    fn ceten_stamp_keeps_checksum_valid() {
        let mut opts = vec![1u8]; // odd offset on purpose
        opts.extend_from_slice(&ceten_opt(0xffff, 0xffff));
        opts.extend_from_slice(&[1, 1, 1]);
        let mut f = frame(&opts, 100, tcp::flags::ACK, 0);
        let loc = locate_tcp(&f).unwrap();
        let r = ceten_stamp(&mut f, &loc, Some(0x8000), Some(0xe666)).unwrap();
        assert_eq!(r, (0x8000, 0xe666));
        assert!(tcp_ok(&f));
        let r = ceten_stamp(&mut f, &loc, Some(0x8000), None).unwrap();
        assert_eq!(r, (0x4000, 0xe666));
        assert!(tcp_ok(&f));
    }

    #[test]
    fn ceten_stamp_preserves_corruption() {
        let mut f = frame(&ceten_opt(0xffff, 0xffff), 100, tcp::flags::ACK, 0);
        let n = f.len();
        f[n - 1] ^= 0x10; // a bit error in the payload
        assert!(!tcp_ok(&f));
        let loc = locate_tcp(&f).unwrap();
        ceten_stamp(&mut f, &loc, Some(0x8000), None).unwrap();
        assert!(!tcp_ok(&f), "the rewrite must not repair the checksum");
    }

    #[test]
    fn ceten_reflect_and_insert() {
        let mut f = frame(&ceten_opt(0xffff, 0xffff), 0, tcp::flags::ACK, 0);
        let loc = locate_tcp(&f).unwrap();
        assert_eq!(
            ceten_reflect(&mut f, &loc, (0x1234, 0x5678), false),
            Reflected::Written
        );
        assert!(tcp_ok(&f));
        let o = ceten::Opt::new_checked(&f[54..66]).unwrap();
        assert_eq!((o.rev_corruption(), o.rev_congestion()), (0x1234, 0x5678));

        let mut ack = frame(
            &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2],
            0,
            tcp::flags::ACK,
            0,
        );
        let loc = locate_tcp(&ack).unwrap();
        assert_eq!(
            ceten_reflect(&mut ack, &loc, (0x1234, 0x5678), true),
            Reflected::Inserted
        );
        assert_eq!(ack.len(), 14 + 20 + 32 + 12);
        assert!(ipv4::Packet::new_checked(&ack[14..])
            .unwrap()
            .verify_checksum());
        assert!(tcp_ok(&ack));
        let loc = locate_tcp(&ack).unwrap();
        assert_eq!(loc.tcp_hl, 44);
        let at = ceten_at(&ack, &loc).unwrap();
        let o = ceten::Opt::new_checked(&ack[at..at + 12]).unwrap();
        assert_eq!((o.fwd_corruption(), o.rev_congestion()), (0xffff, 0x5678));
        // data segments are never grown
        let mut data = frame(&[], 10, tcp::flags::ACK, 0);
        let loc = locate_tcp(&data).unwrap();
        assert_eq!(ceten_reflect(&mut data, &loc, (1, 2), true), Reflected::No);
    }

    #[test]
    fn ern_recognition_and_feedback() {
        let mut o = [0u8; 20];
        ern::Repr {
            cwnd: 30000,
            rtt_us: 600_000,
            feedback: ern::FEEDBACK_NONE,
            reverse_feedback: 0,
        }
        .emit(&mut ern::Opt::new_unchecked(&mut o[..]));
        let mut f = frame(&o, 1000, tcp::flags::ACK, 0);
        let loc = locate_tcp(&f).unwrap();
        let s = ern_segment(&f, &loc, &[]).unwrap();
        assert_eq!((s.cwnd, s.rtt_us, s.size), (30000, 600_000, 1060));
        assert!(ern_segment(&f, &loc, &[80]).is_none());
        assert!(ern_segment(&f, &loc, &[40000]).is_some());
        ern_set_feedback(&mut f, &loc, &s, -1460);
        assert!(tcp_ok(&f));
        assert_eq!(ern_segment(&f, &loc, &[]).unwrap().feedback, -1460);
        // not first option -> not ERN
        let mut opts = vec![4u8, 2];
        opts.extend_from_slice(&o);
        opts.extend_from_slice(&[1, 1]);
        let f2 = frame(&opts, 1000, tcp::flags::ACK, 0);
        assert!(ern_segment(&f2, &locate_tcp(&f2).unwrap(), &[]).is_none());
        // pure ACK -> not counted
        let f3 = frame(&o, 0, tcp::flags::ACK, 0);
        assert!(ern_segment(&f3, &locate_tcp(&f3).unwrap(), &[]).is_none());
    }

    #[test]
    fn ecn_marking() {
        let mut f = frame(&[], 10, tcp::flags::ACK, 2);
        assert!(is_ect(&f));
        assert!(set_ce(&mut f));
        assert_eq!(f[15] & 3, 3);
        assert!(ipv4::Packet::new_checked(&f[14..])
            .unwrap()
            .verify_checksum());
        let mut g = frame(&[], 10, tcp::flags::ACK, 0);
        assert!(!is_ect(&g));
        assert!(!set_ce(&mut g));
    }
}
