//! BCH outer code of DVB-S2 (EN 302 307-1 5.3.1): t-error-correcting binary BCH, shortened,
//! over GF(2^16) (normal frames, primitive polynomial 1 + x^2 + x^3 + x^5 + x^16) or GF(2^14)
//! (short frames, 1 + x + x^3 + x^5 + x^14). The generator polynomial is the product of the
//! minimal polynomials of alpha^1, alpha^3, ..., alpha^(2t-1) (g_1 ... g_t of Tables 6a/6b).
//!
//! Decoding: the remainder of the received word modulo g(x) tells a codeword (the usual case,
//! cheap); otherwise syndromes, Berlekamp-Massey and a Chien search over the shortened positions.
//! Bit order: the first bit of the stream is the highest-degree coefficient.

use crate::modcod::{FrameSize, ModCod};

struct Gf {
    n: usize, // 2^m - 1
    exp: Vec<u32>,
    log: Vec<u32>,
}

impl Gf {
    fn new(m: usize, poly: u32) -> Self {
        let n = (1usize << m) - 1;
        let mut exp = vec![0u32; 2 * n];
        let mut log = vec![0u32; n + 1];
        let mut v = 1u32;
        for (i, e) in exp.iter_mut().enumerate().take(n) {
            *e = v;
            log[v as usize] = i as u32;
            v <<= 1;
            if v & (1 << m) != 0 {
                v ^= poly;
            }
        }
        for i in n..2 * n {
            exp[i] = exp[i - n];
        }
        Gf { n, exp, log }
    }
    fn mul(&self, a: u32, b: u32) -> u32 {
        if a == 0 || b == 0 {
            0
        } else {
            self.exp[self.log[a as usize] as usize + self.log[b as usize] as usize]
        }
    }
    fn inv(&self, a: u32) -> u32 {
        self.exp[(self.n - self.log[a as usize] as usize) % self.n]
    }
    fn pow_alpha(&self, e: usize) -> u32 {
        self.exp[e % self.n]
    }
}

/// A DVB-S2 BCH code.
pub struct Bch {
    gf: Gf,
    t: usize,
    /// Codeword length (N_bch) and generator polynomial, coefficient i of x^i, degree n-k.
    nbch: usize,
    g: Vec<u8>,
}

/// Outcome of decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BchResult {
    /// A codeword after correcting this many bits.
    Corrected(usize),
    /// More errors than the code corrects (detected).
    Failed,
}

impl Bch {
    pub fn new(mc: &ModCod) -> Self {
        let gf = match mc.frame {
            FrameSize::Normal => Gf::new(16, (1 << 16) | 0b10_1101),
            FrameSize::Short => Gf::new(14, (1 << 14) | 0b10_1011),
        };
        // g(x) = lcm of minimal polynomials of alpha^(2i-1), i = 1..t: product over the distinct
        // cyclotomic cosets, built with coefficients in GF(2^m) (they end up in GF(2)).
        let mut seen = vec![false; gf.n];
        let mut g: Vec<u32> = vec![1];
        for i in 0..mc.t {
            let e = 2 * i + 1;
            if seen[e] {
                continue;
            }
            let mut c = e;
            loop {
                seen[c] = true;
                // g *= (x + alpha^c)
                let a = gf.pow_alpha(c);
                let mut ng = vec![0u32; g.len() + 1];
                for (j, &gj) in g.iter().enumerate() {
                    ng[j + 1] ^= gj;
                    ng[j] ^= gf.mul(gj, a);
                }
                g = ng;
                c = (c * 2) % gf.n;
                if c == e {
                    break;
                }
            }
        }
        let g: Vec<u8> = g
            .iter()
            .map(|&c| {
                assert!(c <= 1, "generator coefficient outside GF(2)");
                c as u8
            })
            .collect();
        assert_eq!(g.len() - 1, mc.nbch - mc.kbch, "BCH parity length");
        Bch {
            gf,
            t: mc.t,
            nbch: mc.nbch,
            g,
        }
    }

    /// Whether `word` (N_bch bits, one per byte) is a codeword: remainder modulo g(x) is zero.
    pub fn is_codeword(&self, word: &[u8]) -> bool {
        let deg = self.g.len() - 1;
        // Bitwise long division with the remainder in u64 words (deg <= 192).
        let words = deg.div_ceil(64);
        let mut rem = vec![0u64; words];
        let gbits: Vec<u64> = {
            let mut v = vec![0u64; words];
            for (i, &c) in self.g[..deg].iter().enumerate() {
                if c == 1 {
                    v[i / 64] |= 1 << (i % 64);
                }
            }
            v
        };
        let top = deg - 1;
        for &b in word {
            let out = ((rem[top / 64] >> (top % 64)) & 1) as u8 ^ b;
            // rem <<= 1
            for w in (0..words).rev() {
                let carry = if w > 0 { rem[w - 1] >> 63 } else { 0 };
                rem[w] = (rem[w] << 1) | carry;
            }
            if !deg.is_multiple_of(64) {
                rem[words - 1] &= (1u64 << (deg % 64)) - 1;
            }
            if out == 1 {
                for w in 0..words {
                    rem[w] ^= gbits[w];
                }
            }
        }
        rem.iter().all(|&w| w == 0)
    }

    /// Corrects up to t bit errors in `word` (N_bch bits, one per byte) in place.
    pub fn decode(&self, word: &mut [u8]) -> BchResult {
        assert_eq!(word.len(), self.nbch);
        if self.is_codeword(word) {
            return BchResult::Corrected(0);
        }
        let s = self.syndromes(word);
        let (c, l) = self.berlekamp_massey(&s);
        if l > self.t {
            return BchResult::Failed;
        }
        let found = self.chien_search(&c[..=l], word.len());
        if found.len() != l {
            return BchResult::Failed;
        }
        for &p in &found {
            word[p] ^= 1;
        }
        if !self.is_codeword(word) {
            for &p in &found {
                word[p] ^= 1;
            }
            return BchResult::Failed;
        }
        BchResult::Corrected(l)
    }

    /// Syndromes S_j = r(alpha^j), j = 1..2t (index 0 unused); bit p has degree n-1-p.
    fn syndromes(&self, word: &[u8]) -> Vec<u32> {
        let gf = &self.gf;
        let n = word.len();
        let ones: Vec<usize> = (0..n)
            .filter(|&p| word[p] == 1)
            .map(|p| n - 1 - p)
            .collect();
        let mut s = vec![0u32; 2 * self.t + 1];
        for (j, sj) in s.iter_mut().enumerate().skip(1) {
            let mut acc = 0u32;
            for &d in &ones {
                acc ^= gf.pow_alpha(d * j % gf.n);
            }
            *sj = acc;
        }
        s
    }

    /// Berlekamp-Massey: the error-locator polynomial C (coefficient i of x^i, 2t + 1 of them)
    /// and its degree L, the number of errors it locates.
    fn berlekamp_massey(&self, s: &[u32]) -> (Vec<u32>, usize) {
        let gf = &self.gf;
        let two_t = 2 * self.t;
        let mut c = vec![0u32; two_t + 1];
        let mut b = vec![0u32; two_t + 1];
        c[0] = 1;
        b[0] = 1;
        let (mut l, mut m, mut bb) = (0usize, 1usize, 1u32);
        for k in 0..two_t {
            let mut d = s[k + 1];
            for i in 1..=l {
                d ^= gf.mul(c[i], s[k + 1 - i]);
            }
            if d == 0 {
                m += 1;
                continue;
            }
            let coef = gf.mul(d, gf.inv(bb));
            let old = c.clone();
            for i in 0..=two_t - m {
                c[i + m] ^= gf.mul(coef, b[i]);
            }
            if 2 * l <= k {
                l = k + 1 - l;
                b = old;
                bb = d;
                m = 1;
            } else {
                m += 1;
            }
        }
        (c, l)
    }

    /// Chien search over the `n` positions of the shortened word: an error at degree d makes
    /// C(alpha^-d) = 0. Returns the bit positions (index into the word) of the roots.
    fn chien_search(&self, c: &[u32], n: usize) -> Vec<usize> {
        let gf = &self.gf;
        let mut found = Vec::new();
        for d in 0..n {
            let xinv = gf.pow_alpha((gf.n - d % gf.n) % gf.n);
            let mut v = 0u32;
            let mut xp = 1u32;
            for &ci in c {
                v ^= gf.mul(ci, xp);
                xp = gf.mul(xp, xinv);
            }
            if v == 0 {
                found.push(n - 1 - d);
            }
        }
        found
    }

    /// Parity bits (N_bch - K_bch) of `info` (K_bch bits): the systematic encoder (tests).
    pub fn parity(&self, info: &[u8]) -> Vec<u8> {
        let deg = self.g.len() - 1;
        let mut rem = vec![0u8; deg]; // rem[i] coefficient of x^i
        for &b in info {
            let fb = rem[deg - 1] ^ b;
            for i in (1..deg).rev() {
                rem[i] = rem[i - 1] ^ (fb & self.g[i]);
            }
            rem[0] = fb & self.g[0];
        }
        rem.iter().rev().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *seed >> 33
    }

    #[test]
    fn corrects_t_errors_and_detects_more() {
        for (id, frame) in [(4, FrameSize::Short), (13, FrameSize::Normal)] {
            let mc = ModCod::new(id, frame, false).unwrap();
            let bch = Bch::new(&mc);
            let mut seed = 7;
            let info: Vec<u8> = (0..mc.kbch).map(|_| (lcg(&mut seed) & 1) as u8).collect();
            let mut word = info.clone();
            word.extend(bch.parity(&info));
            assert!(bch.is_codeword(&word));
            let clean = word.clone();
            let mut bad = word.clone();
            for _ in 0..mc.t {
                let p = lcg(&mut seed) as usize % mc.nbch;
                bad[p] ^= 1;
            }
            let flips = bad.iter().zip(&clean).filter(|(a, b)| a != b).count();
            assert_eq!(bch.decode(&mut bad), BchResult::Corrected(flips));
            assert_eq!(bad, clean);
            let mut worse = clean.clone();
            for i in 0..(mc.t + 3) {
                worse[i * 97 % mc.nbch] ^= 1;
            }
            assert_eq!(bch.decode(&mut worse), BchResult::Failed);
        }
    }
}
