//! Complex AWGN added on the Rust side of the PHY loop, per frame (`PhyLoop::submit_at`).
//!
//! gr-channels' noise is fixed for the life of a flowgraph, while a fade changes Es/N0 from one
//! BBFRAME to the next. The loop therefore runs its flowgraph at `BASE_ESN0_DB` (the cleanest it
//! accepts) and tops the noise up here, per frame, by exactly the difference: independent
//! Gaussian noises add their variances, so a frame meant for N0 gets N0 - N0_base more and the
//! receiver sees Es/N0 exactly (one flowgraph per Es/N0 step would quantise the fade and start a
//! process per step, 0.25-1.3 s each).

use crate::constellation::C64;

/// The flowgraph's own Es/N0 in per-frame mode (dB): the top of the range it accepts.
pub const BASE_ESN0_DB: f64 = 40.0;

/// Complex noise variance per unit-energy symbol at `esn0_db`.
pub fn n0_of(esn0_db: f64) -> f64 {
    10f64.powf(-esn0_db / 10.0)
}

/// A seeded Gaussian source (splitmix64 uniforms, Box-Muller): reproducible per seed, no
/// dependency for a few lines.
#[derive(Debug, Clone)]
pub struct Awgn {
    state: u64,
}

impl Awgn {
    pub fn new(seed: u64) -> Self {
        Awgn {
            state: seed ^ 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1]: never 0, so the logarithm below is finite.
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 1.0) / (1u64 << 53) as f64
    }

    /// One complex Gaussian sample of total variance `n0` (n0 / 2 per component).
    pub fn sample(&mut self, n0: f64) -> C64 {
        let r = (-n0 * self.uniform().ln()).sqrt();
        let phi = std::f64::consts::TAU * self.uniform();
        C64 {
            re: r * phi.cos(),
            im: r * phi.sin(),
        }
    }

    /// Adds noise of variance `n0` to each sample.
    pub fn add(&mut self, samples: &mut [C64], n0: f64) {
        if n0 <= 0.0 {
            return;
        }
        for s in samples {
            *s = *s + self.sample(n0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noise_has_the_asked_variance_and_no_mean() {
        let mut g = Awgn::new(3);
        let n = 200_000;
        let (mut p, mut mre, mut mim) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let s = g.sample(0.5);
            p += s.norm2();
            mre += s.re;
            mim += s.im;
        }
        let nf = n as f64;
        // Standard error of the power estimate: 0.5 / sqrt(n) = 0.0011.
        assert!((p / nf - 0.5).abs() < 0.006, "power {}", p / nf);
        assert!((mre / nf).abs() < 0.005 && (mim / nf).abs() < 0.005);
    }
}
