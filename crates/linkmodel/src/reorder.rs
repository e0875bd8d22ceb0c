//! Per-packet extra delay that lets packets overtake each other (Yang's two-path model plus
//! jitter).
//!
//! Two-path: with probability `probability` a packet takes the second path and gets
//! `extra_delay_ms` more. Jitter: each packet gets an offset, uniform in [-jitter_ms, +jitter_ms]
//! or normal with mean 0 and standard deviation jitter_ms clipped to +-3 sigma, so the mean delay
//! stays the configured one. A packet never leaves before the end of the frame that carried it.
//! Without a reorder section (or with probability and jitter 0) no draw is made and delivery order
//! is arrival order.

use crate::config::{JitterDistribution, ReorderConfig};
use crate::rng::Rng;

#[derive(Debug, Clone)]
pub struct Reorder {
    probability: f64,
    extra_ns: f64,
    jitter_ns: f64,
    dist: JitterDistribution,
    rng: Rng,
}

impl Reorder {
    /// `None` when the configuration asks for no reordering.
    pub fn new(c: &ReorderConfig, rng: Rng) -> Option<Self> {
        c.enabled().then_some(Reorder {
            probability: c.probability,
            extra_ns: c.extra_delay_ms * 1e6,
            jitter_ns: c.jitter_ms * 1e6,
            dist: c.jitter_distribution,
            rng,
        })
    }

    /// Offset (ns, may be negative) to add to a packet's base delivery time.
    pub fn offset_ns(&mut self) -> i64 {
        let mut off = 0.0;
        if self.probability > 0.0 && self.rng.bernoulli(self.probability) {
            off += self.extra_ns;
        }
        if self.jitter_ns > 0.0 {
            off += match self.dist {
                JitterDistribution::Uniform => (2.0 * self.rng.f64() - 1.0) * self.jitter_ns,
                JitterDistribution::Normal => self.rng.normal().clamp(-3.0, 3.0) * self.jitter_ns,
            };
        }
        off.round() as i64
    }
}
