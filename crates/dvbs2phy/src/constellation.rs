//! DVB-S2 constellations with their bit labels (EN 302 307-1 5.4, Figures 9-12) and the
//! max-log soft demapper.
//!
//! A symbol's label is the integer whose most significant bit is the first bit of the symbol (the
//! bit read first from the interleaver row). Every constellation is scaled to unit mean energy
//! (Es = 1), as gr-dtv's mapper does.

use crate::modcod::{ModCod, Modulation};

/// Complex number (f64).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct C64 {
    pub re: f64,
    pub im: f64,
}

impl C64 {
    pub const fn new(re: f64, im: f64) -> Self {
        C64 { re, im }
    }
    pub fn polar(r: f64, deg: f64) -> Self {
        let a = deg.to_radians();
        C64::new(r * a.cos(), r * a.sin())
    }
    pub fn conj(self) -> Self {
        C64::new(self.re, -self.im)
    }
    pub fn norm2(self) -> f64 {
        self.re * self.re + self.im * self.im
    }
    pub fn arg(self) -> f64 {
        self.im.atan2(self.re)
    }
    pub fn scale(self, k: f64) -> Self {
        C64::new(self.re * k, self.im * k)
    }
}

impl std::ops::Add for C64 {
    type Output = C64;
    fn add(self, o: C64) -> C64 {
        C64::new(self.re + o.re, self.im + o.im)
    }
}
impl std::ops::Sub for C64 {
    type Output = C64;
    fn sub(self, o: C64) -> C64 {
        C64::new(self.re - o.re, self.im - o.im)
    }
}
impl std::ops::Mul for C64 {
    type Output = C64;
    fn mul(self, o: C64) -> C64 {
        C64::new(
            self.re * o.re - self.im * o.im,
            self.re * o.im + self.im * o.re,
        )
    }
}

/// (ring, phase in degrees) of every label; rings numbered from the centre (0 = innermost).
fn layout(m: Modulation) -> Vec<(usize, f64)> {
    match m {
        // Figure 9.
        Modulation::Qpsk => vec![(0, 45.0), (0, -45.0), (0, 135.0), (0, -135.0)],
        // Figure 10.
        Modulation::Psk8 => [45.0, 0.0, 180.0, -135.0, 90.0, -45.0, 135.0, -90.0]
            .iter()
            .map(|&a| (0, a))
            .collect(),
        // Figure 11: labels 0-11 on the outer ring, 12-15 on the inner ring.
        Modulation::Apsk16 => {
            let outer = [
                45.0, -45.0, 135.0, -135.0, 15.0, -15.0, 165.0, -165.0, 75.0, -75.0, 105.0, -105.0,
            ];
            let inner = [45.0, -45.0, 135.0, -135.0];
            outer
                .iter()
                .map(|&a| (1, a))
                .chain(inner.iter().map(|&a| (0, a)))
                .collect()
        }
        // Figure 12.
        Modulation::Apsk32 => vec![
            (1, 45.0),
            (1, 75.0),
            (1, -45.0),
            (1, -75.0),
            (1, 135.0),
            (1, 105.0),
            (1, -135.0),
            (1, -105.0),
            (2, 22.5),
            (2, 67.5),
            (2, -45.0),
            (2, -90.0),
            (2, 135.0),
            (2, 90.0),
            (2, -157.5),
            (2, -112.5),
            (1, 15.0),
            (0, 45.0),
            (1, -15.0),
            (0, -45.0),
            (1, 165.0),
            (0, 135.0),
            (1, -165.0),
            (0, -135.0),
            (2, 0.0),
            (2, 45.0),
            (2, -22.5),
            (2, -67.5),
            (2, 157.5),
            (2, 112.5),
            (2, 180.0),
            (2, -135.0),
        ],
    }
}

/// A constellation: `points[label]`, unit mean energy.
#[derive(Debug, Clone)]
pub struct Constellation {
    pub bits: usize,
    pub points: Vec<C64>,
}

impl Constellation {
    /// The constellation of `mc` (APSK radii from its code rate).
    pub fn of(mc: &ModCod) -> Self {
        let lay = layout(mc.modulation);
        let radii = [1.0, mc.gamma.0, mc.gamma.1];
        let mut points: Vec<C64> = lay.iter().map(|&(r, a)| C64::polar(radii[r], a)).collect();
        let e = points.iter().map(|p| p.norm2()).sum::<f64>() / points.len() as f64;
        let k = 1.0 / e.sqrt();
        for p in &mut points {
            *p = p.scale(k);
        }
        Constellation {
            bits: mc.modulation.bits(),
            points,
        }
    }

    /// Max-log LLRs (positive: bit 0) of symbol `y` with complex noise variance `n0`, written to
    /// `out[..bits]`, first bit first: LLR_k = (min_{s: b_k=1} |y-s|^2 - min_{s: b_k=0} |y-s|^2) / n0.
    pub fn llr(&self, y: C64, n0: f64, out: &mut [f64]) {
        let mut min0 = [f64::INFINITY; 5];
        let mut min1 = [f64::INFINITY; 5];
        for (label, s) in self.points.iter().enumerate() {
            let d = (y - *s).norm2();
            for k in 0..self.bits {
                let bit = (label >> (self.bits - 1 - k)) & 1;
                if bit == 0 {
                    min0[k] = min0[k].min(d);
                } else {
                    min1[k] = min1[k].min(d);
                }
            }
        }
        for k in 0..self.bits {
            out[k] = (min1[k] - min0[k]) / n0;
        }
    }

    /// Nearest point's label (hard decision, minimum distance).
    pub fn slice(&self, y: C64) -> usize {
        let mut best = (f64::INFINITY, 0);
        for (label, s) in self.points.iter().enumerate() {
            let d = (y - *s).norm2();
            if d < best.0 {
                best = (d, label);
            }
        }
        best.1
    }
}
