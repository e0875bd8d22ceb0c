//! TCP options: walking the option list, RFC 6994 experimental options (kind 253/254 with a 16-bit
//! experiment identifier), and the incremental checksum update (RFC 1624) a router uses when it
//! rewrites an option in place.
//!
//! A router that rewrites a field must not *recompute* the TCP checksum: that would hide bit
//! errors from the receiver. [`checksum_adjust`] carries any existing error through.

use crate::checksum;

/// TCP option kinds used here.
pub mod kind {
    /// End of option list.
    pub const EOL: u8 = 0;
    /// No-operation (padding).
    pub const NOP: u8 = 1;
    /// RFC 4727 / RFC 6994 experimental option kind 253.
    pub const EXP1: u8 = 253;
    /// RFC 4727 / RFC 6994 experimental option kind 254 (the one SatLab's options use).
    pub const EXP2: u8 = 254;
}

/// One option found in a TCP option list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// Offset of the option's kind byte in the option list.
    pub offset: usize,
    /// The option's length byte (whole option).
    pub len: usize,
    /// Whether it is the first option of the list (NOPs before it not counted).
    pub first: bool,
}

/// Finds the experimental option (kind 253 or 254) with experiment identifier `exid` and length
/// `len` in `options` (the bytes after the 20-byte TCP header). `None` when absent, or when the
/// list is malformed before it.
pub fn find_experimental(options: &[u8], exid: u16, len: usize) -> Option<Found> {
    let mut i = 0;
    let mut first = true;
    while i < options.len() {
        match options[i] {
            kind::EOL => return None,
            kind::NOP => {
                i += 1;
                continue;
            }
            k => {
                let l = usize::from(*options.get(i + 1)?);
                if l < 2 || i + l > options.len() {
                    return None;
                }
                if (k == kind::EXP1 || k == kind::EXP2)
                    && l == len
                    && l >= 4
                    && u16::from_be_bytes([options[i + 2], options[i + 3]]) == exid
                {
                    return Some(Found {
                        offset: i,
                        len: l,
                        first,
                    });
                }
                first = false;
                i += l;
            }
        }
    }
    None
}

/// The TCP (or UDP, IPv4 header) checksum after the bytes at `offset` (from the start of the
/// checksummed region, e.g. the TCP header) changed from `old` to `new` (same length, at most 64
/// bytes), by RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'). Works at odd offsets.
pub fn checksum_adjust(csum: u16, offset: usize, old: &[u8], new: &[u8]) -> u16 {
    debug_assert_eq!(old.len(), new.len());
    let sum_of = |b: &[u8]| -> u16 {
        let mut buf = [0u8; 66];
        let pad = offset & 1;
        let n = b.len().min(64);
        buf[pad..pad + n].copy_from_slice(&b[..n]);
        checksum::fold(checksum::data(&buf[..pad + n]))
    };
    let m = sum_of(old);
    let m2 = sum_of(new);
    let s = u32::from(!csum) + u32::from(!m) + u32::from(m2);
    !checksum::fold(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk() {
        // NOP NOP timestamps(10) then kind 254 len 6 exid 0x1234 then EOL.
        let opts = [
            1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 254, 6, 0x12, 0x34, 0xaa, 0xbb, 0, 0,
        ];
        let f = find_experimental(&opts, 0x1234, 6).unwrap();
        assert_eq!(f.offset, 12);
        assert!(!f.first);
        assert_eq!(find_experimental(&opts, 0x1235, 6), None);
        assert_eq!(find_experimental(&opts, 0x1234, 8), None);
        let opts2 = [1, 254, 6, 0x12, 0x34, 0, 0, 0];
        assert!(find_experimental(&opts2, 0x1234, 6).unwrap().first);
        // malformed length
        assert_eq!(find_experimental(&[254, 40, 0x12, 0x34], 0x1234, 4), None);
    }

    #[test]
    fn adjust_matches_recompute() {
        let mut data: Vec<u8> = (0..64u8).map(|x| x.wrapping_mul(37)).collect();
        let before = checksum::finish(checksum::data(&data));
        for offset in [4usize, 7, 13] {
            let old = data[offset..offset + 6].to_vec();
            let new = [0xde, 0xad, 0xbe, 0xef, 0x01, 0x02];
            data[offset..offset + 6].copy_from_slice(&new);
            let want = checksum::finish(checksum::data(&data));
            let cur = checksum::finish(checksum::data(&{
                let mut d = data.clone();
                d[offset..offset + 6].copy_from_slice(&old);
                d
            }));
            assert_eq!(
                checksum_adjust(cur, offset, &old, &new),
                want,
                "offset {offset}"
            );
            data[offset..offset + 6].copy_from_slice(&old);
        }
        assert_eq!(checksum::finish(checksum::data(&data)), before);
    }
}
