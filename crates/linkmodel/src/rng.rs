//! Seeded pseudo-random numbers: xoshiro256++ seeded through SplitMix64.
//!
//! One run seed (`cfg.seed`) is expanded into independent streams, one per (direction, purpose),
//! so that e.g. enabling reordering does not shift the erasure decisions: the same seed, trace and
//! offered packet sequence give the same decision for every packet.

use crate::types::Dir;

/// What a random stream is used for (each gets its own generator).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Frame erasure draws (one per frame).
    Erasure = 1,
    /// Bit-error gaps and Gilbert-Elliott sojourns.
    BitErrors = 2,
    /// Two-path choice and jitter (one or two draws per packet when enabled).
    Reorder = 3,
    /// Residual bit errors of failed frames delivered (`failed_frames`).
    FailedFrames = 4,
    /// Contention access of DAMA requests: collisions and backoffs (`dama.contention`).
    Contention = 5,
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// xoshiro256++ (Blackman & Vigna): small, fast, good statistical quality.
#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    /// The stream of `purpose` for direction `dir` of the run seeded with `seed`.
    pub fn derive(seed: u64, dir: Dir, purpose: Stream) -> Self {
        let dir_id: u64 = match dir {
            Dir::Forward => 1,
            Dir::Return => 2,
        };
        let mut tag = (dir_id << 8) | purpose as u64;
        let mixed = seed ^ splitmix64(&mut tag).rotate_left(17);
        Rng::new(mixed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in (0, 1] (safe for ln).
    pub fn open01(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability p.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.f64() < p
        }
    }

    /// Standard normal (Box-Muller, one value per call: simple and stream-stable).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.open01();
        let u2 = self.f64();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Number of failures before the first success of Bernoulli(p) trials (geometric on
    /// {0, 1, ...}), by inversion: one draw whatever p. `u64::MAX` when p is 0.
    pub fn geometric(&mut self, p: f64) -> u64 {
        if p <= 0.0 {
            return u64::MAX;
        }
        if p >= 1.0 {
            return 0;
        }
        let g = self.open01().ln() / (-p).ln_1p();
        if g >= 1.8e19 {
            u64::MAX
        } else {
            g as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_differ_and_repeat() {
        let mut a = Rng::derive(7, Dir::Forward, Stream::Erasure);
        let mut b = Rng::derive(7, Dir::Forward, Stream::Erasure);
        let mut c = Rng::derive(7, Dir::Return, Stream::Erasure);
        let mut d = Rng::derive(7, Dir::Forward, Stream::BitErrors);
        let va: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..8).map(|_| c.next_u64()).collect();
        let vd: Vec<u64> = (0..8).map(|_| d.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
        assert_ne!(va, vd);
    }

    #[test]
    fn geometric_mean() {
        let mut r = Rng::new(3);
        let p = 0.01;
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| r.geometric(p)).sum();
        let mean = sum as f64 / n as f64;
        let expect = (1.0 - p) / p; // 99
        assert!((mean - expect).abs() / expect < 0.02, "mean {mean}");
    }
}
