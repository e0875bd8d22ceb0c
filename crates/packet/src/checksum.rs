//! The Internet checksum (RFC 1071): one's-complement sum of 16-bit big-endian words.
//!
//! [`data`] sums a buffer without folding to 16 bits, [`combine`] adds partial sums, [`fold`] folds
//! and complements nothing; a header's checksum field is `!fold(sum)` computed with the field zeroed.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Unfolded one's-complement sum of `data` as big-endian 16-bit words (odd tail padded with zero).
///
/// Summed as native-endian 32-bit words, then folded and byte-swapped (RFC 1071 section 2(B): the
/// sum is byte-order independent): no byte swap per word, and the loop vectorises. Twice as fast
/// as summing big-endian words (1480 bytes: 60 vs 116 ns here); the data plane checksums every
/// packet a GSO sender leaves partial. The result is congruent modulo 0xffff with the big-endian
/// sum, which is all [`combine`], [`fold`] and [`finish`] need.
pub fn data(data: &[u8]) -> u32 {
    let mut acc: u64 = 0;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        acc += u64::from(u32::from_ne_bytes([w[0], w[1], w[2], w[3]]));
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    // Native words on a little-endian machine sum to the byte-swapped big-endian sum.
    let folded = acc as u16;
    let mut sum = u64::from(if cfg!(target_endian = "little") {
        folded.swap_bytes()
    } else {
        folded
    });
    // The 0 to 3 bytes left start at an even offset: big-endian words, odd byte padded.
    let mut rest = words.remainder();
    while rest.len() >= 2 {
        sum += u64::from(u16::from_be_bytes([rest[0], rest[1]]));
        rest = &rest[2..];
    }
    if let Some(&b) = rest.first() {
        sum += u64::from(b) << 8;
    }
    sum as u32
}

/// Folds an unfolded sum to 16 bits (no complement).
pub fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// Adds unfolded sums.
pub fn combine(sums: &[u32]) -> u32 {
    let mut acc: u64 = 0;
    for &s in sums {
        acc += u64::from(s);
    }
    while acc > 0xffff_ffff {
        acc = (acc & 0xffff_ffff) + (acc >> 32);
    }
    acc as u32
}

/// Sum of the IPv4 pseudo-header (RFC 793 / RFC 768) for a transport segment of `length` bytes.
pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, length: u32) -> u32 {
    let s = src.octets();
    let d = dst.octets();
    combine(&[
        u32::from(u16::from_be_bytes([s[0], s[1]])),
        u32::from(u16::from_be_bytes([s[2], s[3]])),
        u32::from(u16::from_be_bytes([d[0], d[1]])),
        u32::from(u16::from_be_bytes([d[2], d[3]])),
        u32::from(proto),
        length & 0xffff,
        length >> 16,
    ])
}

/// Sum of the IPv6 pseudo-header (RFC 8200 section 8.1).
pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, proto: u8, length: u32) -> u32 {
    combine(&[
        data(&src.octets()),
        data(&dst.octets()),
        u32::from(proto),
        length & 0xffff,
        length >> 16,
    ])
}

/// The checksum field value for `sum` (complement of the folded sum).
pub fn finish(sum: u32) -> u16 {
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: words 0001 f203 f4f5 f6f7 sum to ddf2 (folded).
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(data(&bytes)), 0xddf2);
        assert_eq!(finish(data(&bytes)), !0xddf2);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(fold(data(&[0x12, 0x34, 0x56])), 0x1234 + 0x5600);
    }

    fn word_by_word(buf: &[u8]) -> u32 {
        let mut slow: u32 = 0;
        for c in buf.chunks(2) {
            let w = if c.len() == 2 {
                u16::from_be_bytes([c[0], c[1]])
            } else {
                u16::from(c[0]) << 8
            };
            slow += u32::from(w);
        }
        slow
    }

    #[test]
    fn long_buffer_matches_word_by_word() {
        let buf: Vec<u8> = (0..1999u32).map(|i| (i * 7 + 3) as u8).collect();
        assert_eq!(fold(data(&buf)), fold(word_by_word(&buf)));
    }

    #[test]
    fn every_length_and_alignment_matches_word_by_word() {
        let buf: Vec<u8> = (0..300u32).map(|i| (i * 151 + 17) as u8).collect();
        for start in 0..4 {
            for end in start..buf.len() {
                let b = &buf[start..end];
                assert_eq!(fold(data(b)), fold(word_by_word(b)), "bytes {start}..{end}");
            }
        }
        // Sums that fold to the one's-complement zero stay 0xffff; all-zero data sums to 0.
        assert_eq!(fold(data(&[0xff; 1480])), 0xffff);
        assert_eq!(fold(data(&[0x12, 0x34, 0xed, 0xcb])), 0xffff);
        assert_eq!(fold(data(&[0; 64])), 0);
    }
}
