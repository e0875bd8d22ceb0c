//! Propagation delay source of a direction, as a function of time: when a frame's packets reach
//! the receiver (the delay line's times, the Es/N0 the erasure stage reads) and how long ACM
//! reports take over the other direction. Not a stage of its own.
//!
//! Resolution order: `delay_file` (OpenSAND FileDelay), then `delay_ms`, then `geometry`, then
//! 250 ms. FileDelay format: lines `<uint tick> <ms>`, `#` comments, tick = `refresh_period_ms`,
//! linear interpolation between lines, optional `loop` (same rules as attenuation traces: hold the
//! last value at the end without loop). Live control replaces the source by a fixed delay.
//!
//! A delay that changes never reorders packets already in flight: the delay line keeps delivery
//! times monotone (see `delay_line`).

use std::path::Path;

use crate::attenuation::{interpolate, parse_tick_values};
use crate::config::{ConfigError, DirectionConfig, LinkConfig, DEFAULT_DELAY_MS};
use crate::textfile;

#[derive(Debug, Clone, PartialEq)]
pub enum DelaySource {
    Fixed {
        ns: u64,
    },
    File {
        points: Vec<(u64, f64)>,
        refresh_ns: f64,
        looped: bool,
    },
}

/// Parses a FileDelay file: (tick, ms) points.
pub fn parse_delay_file(text: &str, path: &Path) -> Result<Vec<(u64, f64)>, ConfigError> {
    parse_tick_values(text, path, "delay ms", 0.0, 10_000.0)
}

fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

impl DelaySource {
    pub fn fixed_ms(ms: f64) -> Self {
        DelaySource::Fixed { ns: ms_to_ns(ms) }
    }

    /// The source for direction config `d` of `cfg`.
    pub fn from_config(cfg: &LinkConfig, d: &DirectionConfig) -> Result<Self, ConfigError> {
        if let Some(f) = &d.delay_file {
            let points = parse_delay_file(&textfile::read(&f.path)?, &f.path)?;
            return Ok(DelaySource::File {
                points,
                refresh_ns: f.refresh_period_ms as f64 * 1e6,
                looped: f.loop_,
            });
        }
        let ms = match (d.delay_ms, &cfg.geometry) {
            (Some(ms), _) => ms,
            (None, Some(g)) => crate::geometry::one_way_delay_ms(g),
            (None, None) => DEFAULT_DELAY_MS,
        };
        Ok(Self::fixed_ms(ms))
    }

    /// One-way delay at `t_ns`, ns.
    pub fn at(&self, t_ns: u64) -> u64 {
        match self {
            DelaySource::Fixed { ns } => *ns,
            DelaySource::File {
                points,
                refresh_ns,
                looped,
            } => ms_to_ns(interpolate(points, t_ns as f64 / refresh_ns, *looped)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_delay() {
        let pts = parse_delay_file("# t ms\n0 250\n10 270\n", Path::new("d.txt")).unwrap();
        let s = DelaySource::File {
            points: pts,
            refresh_ns: 1e9,
            looped: false,
        };
        assert_eq!(s.at(0), 250_000_000);
        assert_eq!(s.at(5_000_000_000), 260_000_000);
        assert_eq!(s.at(50_000_000_000), 270_000_000);
    }

    #[test]
    fn malformed_delay_file() {
        let e = parse_delay_file("0 250\n1 -3\n", Path::new("d.txt")).unwrap_err();
        assert_eq!(e.to_string(), "d.txt:2: delay ms -3 is outside [0, 10000]");
    }
}
