//! The few IPv4/TCP header fields the receiver reads, and rewriting an ACK number.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub src: [u8; 4],
    pub dst: [u8; 4],
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    /// None without the ACK flag.
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload_len: u32,
}

const ACK: u8 = 0x10;
const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const RST: u8 = 0x04;

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Parses an IPv4 packet carrying TCP (the payload may be cut after the TCP header: lengths come
/// from the IP header). None for anything else.
pub fn parse(p: &[u8]) -> Option<Segment> {
    if p.len() < 20 || p[0] >> 4 != 4 || p[9] != 6 {
        return None;
    }
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let total = usize::from(be16(p, 2));
    if p.len() < ihl + 20 || total < ihl + 20 {
        return None;
    }
    let t = &p[ihl..];
    let doff = usize::from(t[12] >> 4) * 4;
    let flags = t[13];
    Some(Segment {
        src: p[12..16].try_into().ok()?,
        dst: p[16..20].try_into().ok()?,
        sport: be16(t, 0),
        dport: be16(t, 2),
        seq: be32(t, 4),
        ack: (flags & ACK != 0).then(|| be32(t, 8)),
        syn: flags & SYN != 0,
        fin: flags & FIN != 0,
        rst: flags & RST != 0,
        payload_len: total.saturating_sub(ihl + doff) as u32,
    })
}

/// Sets the ACK number of a whole IPv4/TCP packet and recomputes the TCP checksum from scratch
/// (the kernel hands queued packets over with their checksum complete).
pub fn set_ack(p: &mut [u8], ack: u32) {
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let total = usize::from(be16(p, 2)).min(p.len());
    p[ihl + 8..ihl + 12].copy_from_slice(&ack.to_be_bytes());
    p[ihl + 16] = 0;
    p[ihl + 17] = 0;
    let mut sum: u32 = 0;
    for pair in p[12..20].chunks(2) {
        sum += u32::from(be16(pair, 0));
    }
    sum += 6 + (total - ihl) as u32;
    for chunk in p[ihl..total].chunks(2) {
        sum += u32::from(u16::from_be_bytes([chunk[0], *chunk.get(1).unwrap_or(&0)]));
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let c = !(sum as u16);
    p[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pure ACK from 10.0.0.2:5001 to 10.0.0.1:40000 as Linux sends it (checksum valid).
    fn ack_packet() -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 40, 0, 1, 0x40, 0, 64, 6, 0, 0, 10, 0, 0, 2, 10, 0, 0, 1, //
            0x13, 0x89, 0x9c, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, ACK, 0xff, 0xff, 0, 0, 0, 0,
        ];
        set_ack(&mut p, 1000);
        p
    }

    fn checksum_ok(p: &[u8]) -> bool {
        let mut sum: u32 = p[12..20].chunks(2).map(|c| u32::from(be16(c, 0))).sum();
        sum += 6 + (p.len() - 20) as u32;
        sum += p[20..]
            .chunks(2)
            .map(|c| u32::from(be16(c, 0)))
            .sum::<u32>();
        while sum >> 16 != 0 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        sum == 0xffff
    }

    #[test]
    fn parses_a_pure_ack() {
        let s = parse(&ack_packet()).unwrap();
        assert_eq!(
            (s.sport, s.dport, s.seq, s.ack),
            (5001, 40000, 1, Some(1000))
        );
        assert_eq!(s.payload_len, 0);
        assert!(!s.syn && !s.fin && !s.rst);
    }

    #[test]
    fn rewritten_ack_keeps_a_valid_checksum() {
        let mut p = ack_packet();
        assert!(checksum_ok(&p));
        set_ack(&mut p, 0xdead_beef);
        assert_eq!(parse(&p).unwrap().ack, Some(0xdead_beef));
        assert!(checksum_ok(&p));
    }

    #[test]
    fn refuses_non_tcp() {
        let mut p = ack_packet();
        p[9] = 17;
        assert_eq!(parse(&p), None);
    }
}
