//! CETEN survival estimates: the report's per-link EWMA, p_i = alpha x_i + (1 - alpha) p_{i-1},
//! x_i = 1 for a packet that survived, 0 for one that did not (ETEN report section 4.2, alpha = 0.5), updated on
//! every packet of every flow.

use serde::Serialize;

/// One survival estimate, with counts beside it.
#[derive(Debug, Clone, Serialize)]
pub struct Survival {
    /// EWMA weight of the newest sample.
    pub alpha: f64,
    /// The current estimate (starts at 1).
    pub estimate: f64,
    /// Samples seen.
    pub samples: u64,
    /// Samples that survived.
    pub survived: u64,
    /// Sum of the estimate after each sample (mean = sum / samples).
    pub estimate_sum: f64,
}

impl Survival {
    /// A fresh estimate at 1.
    pub fn new(alpha: f64) -> Survival {
        Survival {
            alpha,
            estimate: 1.0,
            samples: 0,
            survived: 0,
            estimate_sum: 0.0,
        }
    }

    /// One packet: survived or not.
    pub fn sample(&mut self, survived: bool) {
        let x = if survived { 1.0 } else { 0.0 };
        self.estimate = self.alpha * x + (1.0 - self.alpha) * self.estimate;
        self.samples += 1;
        if survived {
            self.survived += 1;
        }
        self.estimate_sum += self.estimate;
    }

    /// Mean of the estimate over all samples (what the estimate tracks on average).
    pub fn mean_estimate(&self) -> f64 {
        if self.samples == 0 {
            1.0
        } else {
            self.estimate_sum / self.samples as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_sequence() {
        // alpha 0.5 from 1: lost -> 0.5, ok -> 0.75, lost -> 0.375, ok -> 0.6875
        let mut s = Survival::new(0.5);
        for (x, want) in [(false, 0.5), (true, 0.75), (false, 0.375), (true, 0.6875)] {
            s.sample(x);
            assert!((s.estimate - want).abs() < 1e-12);
        }
        assert_eq!(s.samples, 4);
        assert_eq!(s.survived, 2);
        assert!((s.mean_estimate() - (0.5 + 0.75 + 0.375 + 0.6875) / 4.0).abs() < 1e-12);
    }

    #[test]
    fn mean_tracks_rate() {
        // Every 10th packet lost: the mean estimate approaches 0.9.
        let mut s = Survival::new(0.5);
        for i in 0..10_000 {
            s.sample(i % 10 != 9);
        }
        assert!(
            (s.mean_estimate() - 0.9).abs() < 0.002,
            "{}",
            s.mean_estimate()
        );
    }
}
