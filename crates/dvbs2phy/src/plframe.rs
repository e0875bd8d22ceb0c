//! PL framing (EN 302 307-1 5.5): PLHEADER (SOF + PLS code, pi/2-BPSK), pilot blocks, PL
//! scrambling; and the receiver-side pieces of 5.2-5.3: bit deinterleaving and BB descrambling.

use crate::constellation::C64;
use crate::modcod::{FrameSize, ModCod, Modulation};

const SOF: u32 = 0x18D_2E82; // 26 bits
const PLS_SCRAMBLE: u64 = 0x719D_83C9_5342_2DFA;
/// Generator rows of the (32, 6) PLS code (5.5.2.4), first row for the first (most significant) bit.
const PLS_G: [u32; 6] = [
    0x5555_5555,
    0x3333_3333,
    0x0F0F_0F0F,
    0x00FF_00FF,
    0x0000_FFFF,
    0xFFFF_FFFF,
];

/// The 64 PLS bits for the 7-bit field (MODCOD 5 bits, frame type, pilots), scrambled.
pub fn pls_bits(modcod: u32, short: bool, pilots: bool) -> [u8; 64] {
    let v = (modcod << 2) | (u32::from(short) << 1) | u32::from(pilots);
    let mut code = 0u32;
    for (i, g) in PLS_G.iter().enumerate() {
        if (v >> (6 - i)) & 1 == 1 {
            code ^= g;
        }
    }
    let b7 = (v & 1) as u8;
    let mut out = [0u8; 64];
    for i in 0..32 {
        let c = ((code >> (31 - i)) & 1) as u8;
        out[2 * i] = c;
        out[2 * i + 1] = c ^ b7;
    }
    for (i, o) in out.iter_mut().enumerate() {
        *o ^= ((PLS_SCRAMBLE >> (63 - i)) & 1) as u8;
    }
    out
}

/// pi/2-BPSK symbols of a PLHEADER (5.5.2.5).
pub fn header_symbols(modcod: u32, short: bool, pilots: bool) -> Vec<C64> {
    let mut bits: Vec<u8> = (0..26).map(|i| ((SOF >> (25 - i)) & 1) as u8).collect();
    bits.extend_from_slice(&pls_bits(modcod, short, pilots));
    let h = std::f64::consts::FRAC_1_SQRT_2;
    bits.iter()
        .enumerate()
        .map(|(i, &b)| {
            let s = if b == 0 { h } else { -h };
            if i % 2 == 0 {
                C64::new(s, s)
            } else {
                C64::new(-s, s)
            }
        })
        .collect()
}

/// Symbols of a dummy PLFRAME (EN 302 307-1 5.5.1): a PLHEADER and 36 slots of 90.
pub const DUMMY_SYMBOLS: usize = 90 + 36 * 90;

/// A dummy PLFRAME, what a modulator sends when no BBFRAME is ready: the PLHEADER with the dummy
/// PLS code (MODCOD 0; the TYPE bits, which 5.5.2 leaves to the dummy frame, are 0 here), then
/// 36 slots of unmodulated symbols (1 + j)/sqrt 2, PL-scrambled like every PLFRAME's body
/// (5.5.4, the sequence restarting after each PLHEADER).
pub fn dummy_plframe(goldcode: usize) -> Vec<C64> {
    let h = std::f64::consts::FRAC_1_SQRT_2;
    let mut frame = header_symbols(0, false, false);
    frame.extend(
        scrambling(goldcode, DUMMY_SYMBOLS - 90)
            .into_iter()
            .map(|c| C64::new(h, h) * c),
    );
    frame
}

/// PL scrambling sequence exp(j pi R_n(i) / 2) for `len` symbols after the PLHEADER (5.5.4).
pub fn scrambling(goldcode: usize, len: usize) -> Vec<C64> {
    const N: usize = (1 << 18) - 1;
    let mut x = vec![0u8; N + 18];
    let mut y = vec![0u8; N + 18];
    x[0] = 1;
    y[..18].fill(1);
    for i in 0..N {
        x[i + 18] = x[i + 7] ^ x[i];
        y[i + 18] = y[i + 10] ^ y[i + 7] ^ y[i + 5] ^ y[i];
    }
    let z = |i: usize| x[(i + goldcode) % N] ^ y[i];
    (0..len)
        .map(|i| match 2 * z((i + 131_072) % N) + z(i) {
            0 => C64::new(1.0, 0.0),
            1 => C64::new(0.0, 1.0),
            2 => C64::new(-1.0, 0.0),
            _ => C64::new(0.0, -1.0),
        })
        .collect()
}

/// Where the data and pilot symbols of a PLFRAME are, counted from the end of the PLHEADER.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Start of every pilot block (36 symbols).
    pub pilots: Vec<usize>,
    /// Position of every data symbol, in order.
    pub data: Vec<usize>,
}

impl Layout {
    pub fn of(mc: &ModCod) -> Self {
        let mut pilots = Vec::new();
        let mut data = Vec::with_capacity(mc.data_symbols());
        let mut pos = 0;
        for slot in 0..mc.data_symbols() / 90 {
            if mc.pilots && slot > 0 && slot % 16 == 0 {
                pilots.push(pos);
                pos += 36;
            }
            data.extend(pos..pos + 90);
            pos += 90;
        }
        Layout { pilots, data }
    }
}

/// Bit deinterleaving (5.3.3): `sym_llrs` holds `bits` LLRs per symbol, first bit first;
/// returns the LLRs in codeword order. QPSK is not interleaved; 8PSK, 16APSK and 32APSK use a
/// block interleaver written column-wise and read row-wise (columns read 2-1-0 for 8PSK 3/5).
pub fn deinterleave(mc: &ModCod, sym_llrs: &[f64]) -> Vec<f64> {
    let m = mc.modulation.bits();
    let n = mc.frame.nldpc();
    if mc.modulation == Modulation::Qpsk {
        return sym_llrs.to_vec();
    }
    let rows = n / m;
    let reversed = mc.modulation == Modulation::Psk8 && mc.rate == "3/5";
    let mut out = vec![0.0; n];
    for r in 0..rows {
        for k in 0..m {
            let col = if reversed { m - 1 - k } else { k };
            out[col * rows + r] = sym_llrs[r * m + k];
        }
    }
    out
}

/// BB descrambling (5.2.2): XOR with the PRBS 1 + x^14 + x^15, register 100101010000000 at the
/// start of every BBFRAME. The same operation scrambles.
pub fn bb_descramble(bits: &mut [u8]) {
    let mut reg: u16 = 0b100_1010_1000_0000; // r1..r15, r1 the most significant of 15 bits
    for b in bits.iter_mut() {
        let fb = ((reg >> 1) ^ reg) & 1; // r14 ^ r15
        *b ^= fb as u8;
        reg = (reg >> 1) | (fb << 14);
    }
}

pub fn is_short(f: FrameSize) -> bool {
    f == FrameSize::Short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dummy_plframe_is_a_header_and_scrambled_unmodulated_slots() {
        let d = dummy_plframe(0);
        assert_eq!(d.len(), DUMMY_SYMBOLS);
        assert_eq!(DUMMY_SYMBOLS, 3330);
        assert_eq!(&d[..90], &header_symbols(0, false, false)[..]);
        // Descrambled, every slot symbol is (1 + j)/sqrt 2.
        let h = std::f64::consts::FRAC_1_SQRT_2;
        for (y, s) in d[90..].iter().zip(scrambling(0, DUMMY_SYMBOLS - 90)) {
            let u = *y * s.conj();
            assert!(
                (u.re - h).abs() < 1e-12 && (u.im - h).abs() < 1e-12,
                "{u:?}"
            );
        }
        // Another gold code scrambles differently.
        assert_ne!(dummy_plframe(1)[90..], d[90..]);
    }

    #[test]
    fn pls_code_has_distance_32() {
        // The 128 PLS codewords (5.5.2.4: a (64, 7) code of minimum distance 32).
        let words: Vec<[u8; 64]> = (0..128)
            .map(|v| pls_bits(v >> 2, (v >> 1) & 1 == 1, v & 1 == 1))
            .collect();
        let mut dmin = 64;
        for i in 0..128 {
            for j in i + 1..128 {
                let d = words[i]
                    .iter()
                    .zip(&words[j])
                    .filter(|(a, b)| a != b)
                    .count();
                dmin = dmin.min(d);
            }
        }
        assert_eq!(dmin, 32);
    }

    #[test]
    fn deinterleave_inverts_the_block_interleaver() {
        for (id, reversed) in [(12, true), (13, false), (18, false), (24, false)] {
            let mc = ModCod::new(id, FrameSize::Short, false).unwrap();
            let (m, n) = (mc.modulation.bits(), mc.frame.nldpc());
            let rows = n / m;
            // Interleave codeword positions as 5.3.3 describes: column-wise in, row-wise out.
            let mut sym = vec![0.0; n];
            for r in 0..rows {
                for k in 0..m {
                    let col = if reversed { m - 1 - k } else { k };
                    sym[r * m + k] = (col * rows + r) as f64;
                }
            }
            let back = deinterleave(&mc, &sym);
            assert!(
                back.iter().enumerate().all(|(i, &v)| v == i as f64),
                "{}",
                mc.label()
            );
        }
    }

    #[test]
    fn pilot_layout() {
        let mc = ModCod::new(4, FrameSize::Short, true).unwrap();
        let l = Layout::of(&mc);
        assert_eq!(l.pilots, vec![1440, 2916, 4392, 5868, 7344]);
        assert_eq!(l.data.len(), 8100);
        assert_eq!(*l.data.last().unwrap(), 8370 - 90 - 1);
    }
}
