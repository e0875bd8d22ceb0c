//! Attenuation sources of one hop, as pure functions of time (OpenSAND attenuation plugins).
//!
//! Time is counted in ticks of `tick_ms` (OpenSAND: one tick = one `acm_refresh` period, which is
//! the default here too). All sources are evaluated at any instant, not only at ticks: between
//! ticks a File trace is linearly interpolated; at tick instants the values equal OpenSAND's.
//!
//! - `constant`: `value_db` (OpenSAND Ideal).
//! - `file`: OpenSAND File format, lines `<uint tick> <dB>`, `#` comments; ticks strictly
//!   increasing; linear interpolation between lines; before the first line the first value holds.
//!   After the last line: with `loop` the trace restarts at tick 0 (period = last tick + 1: the
//!   step from the last line back to the first value takes one tick, as OpenSAND's
//!   `current_time` reset); without `loop` the last value holds. (OpenSAND reads
//!   `attenuation.rend()` there, which is undefined behaviour; holding the last value is what it
//!   meant.)
//! - `on_off`: a cycle of `off_ticks` at 0 dB then `on_ticks` at `amplitude_db`, from time 0.
//! - `triangular`: A = slope x k for the first half of the period and slope x (period - k) for
//!   the second half, k = ticks since the start of the period (continuous).

use std::path::Path;

use crate::config::{AttenuationConfig, AttenuationKind, ConfigError};
use crate::textfile;

/// The deepest attenuation a trace holds, dB: an outage. With clear sky at most 60 dB a hop's C/N
/// is then at most -40 dB, where every MODCOD of the embedded tables fails (PER 1 under the default
/// waterfall), so any deeper fade behaves the same. Trace writers clamp deeper fades to it and say
/// so in the header (satlab.weather, e.g. ITU-R P.1853 at 30 GHz in the tropics); values above it
/// stay an error here, so a trace in other units (linear, percent) is not taken silently.
pub const MAX_TRACE_DB: f64 = 100.0;
/// The largest gain (negative attenuation: scintillation enhancement) a trace holds, dB.
pub const MIN_TRACE_DB: f64 = -50.0;

/// A parsed attenuation trace: (tick, dB), ticks strictly increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    pub points: Vec<(u64, f64)>,
}

impl Trace {
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        Ok(Trace {
            points: parse_tick_values(text, path, "attenuation dB", MIN_TRACE_DB, MAX_TRACE_DB)?,
        })
    }

    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        Self::parse(&textfile::read(path)?, path)
    }

    /// Value at fractional tick `x` (see module docs for the ends).
    pub fn at(&self, x: f64, looped: bool) -> f64 {
        interpolate(&self.points, x, looped)
    }
}

/// Parses `<uint tick> <value>` lines (shared by attenuation traces and delay files).
pub(crate) fn parse_tick_values(
    text: &str,
    path: &Path,
    what: &str,
    lo: f64,
    hi: f64,
) -> Result<Vec<(u64, f64)>, ConfigError> {
    let mut points: Vec<(u64, f64)> = Vec::new();
    for (line, f) in textfile::data_lines(text) {
        textfile::at_most(path, line, &f, 2)?;
        let tick: u64 = textfile::unsigned(path, line, f[0], "tick", "")?;
        let v = textfile::finite_within(path, line, &f, 1, what, lo..=hi, "")?;
        if let Some(&(prev, _)) = points.last() {
            if tick <= prev {
                return Err(ConfigError::file(
                    path,
                    line,
                    format!(
                        "tick {tick} is not after the previous tick {prev} (ticks must increase)"
                    ),
                ));
            }
        }
        points.push((tick, v));
    }
    if points.is_empty() {
        return Err(ConfigError::io(
            path,
            "no data lines (format: `<uint tick> <value>`)",
        ));
    }
    Ok(points)
}

/// Linear interpolation over (tick, value) points at fractional tick `x`.
pub(crate) fn interpolate(points: &[(u64, f64)], x: f64, looped: bool) -> f64 {
    let (first_t, first_v) = points[0];
    let (last_t, last_v) = points[points.len() - 1];
    let mut x = x.max(0.0);
    if looped {
        // In f64: a last tick of u64::MAX (a valid u64 in a file) must not overflow.
        let period = last_t as f64 + 1.0;
        x %= period;
        if x > last_t as f64 {
            // Wrap step: from the last value to the value at tick 0 within one tick.
            let v0 = interpolate(points, 0.0, false);
            let f = x - last_t as f64;
            return last_v + (v0 - last_v) * f;
        }
    }
    if x <= first_t as f64 {
        return first_v;
    }
    if x >= last_t as f64 {
        return last_v;
    }
    let i = points.partition_point(|&(t, _)| (t as f64) <= x);
    let (t0, v0) = points[i - 1];
    let (t1, v1) = points[i];
    v0 + (v1 - v0) * (x - t0 as f64) / (t1 - t0) as f64
}

/// One hop's attenuation source.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    Constant(f64),
    File {
        trace: Trace,
        looped: bool,
        tick_ns: f64,
    },
    OnOff {
        on: u64,
        off: u64,
        amplitude_db: f64,
        tick_ns: f64,
    },
    Triangular {
        slope_db_per_tick: f64,
        period: u64,
        tick_ns: f64,
    },
}

impl Source {
    /// Builds the source of a (validated, resolved) configuration, loading its trace file.
    pub fn from_config(c: &AttenuationConfig, field: &str) -> Result<Self, ConfigError> {
        let tick_ns = c.tick_ms.unwrap_or(1000) as f64 * 1e6;
        Ok(match c.kind {
            AttenuationKind::Constant => Source::Constant(c.value_db),
            AttenuationKind::File => {
                let path = c.file.as_ref().ok_or_else(|| {
                    ConfigError::field(format!("{field}.file"), "required when type is file")
                })?;
                Source::File {
                    trace: Trace::load(path)?,
                    looped: c.loop_,
                    tick_ns,
                }
            }
            AttenuationKind::OnOff => Source::OnOff {
                on: c.on_ticks,
                off: c.off_ticks,
                amplitude_db: c.amplitude_db,
                tick_ns,
            },
            AttenuationKind::Triangular => Source::Triangular {
                slope_db_per_tick: c.slope_db_per_tick,
                period: c.period_ticks,
                tick_ns,
            },
        })
    }

    /// Attenuation in dB at time `t_ns`.
    pub fn at(&self, t_ns: u64) -> f64 {
        match self {
            Source::Constant(v) => *v,
            Source::File {
                trace,
                looped,
                tick_ns,
            } => trace.at(t_ns as f64 / tick_ns, *looped),
            Source::OnOff {
                on,
                off,
                amplitude_db,
                tick_ns,
            } => {
                let k = (t_ns as f64 / tick_ns) as u64 % (on + off);
                if k < *off {
                    0.0
                } else {
                    *amplitude_db
                }
            }
            Source::Triangular {
                slope_db_per_tick,
                period,
                tick_ns,
            } => {
                let p = *period as f64;
                let k = (t_ns as f64 / tick_ns) % p;
                if k <= p / 2.0 {
                    slope_db_per_tick * k
                } else {
                    slope_db_per_tick * (p - k)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn opensand_example_trace() {
        // quic-opensand-emulation attenuation_1.csv: 0 0 / 10 0 / 24 14 / 38 0
        let t = Trace::parse("0 0\n10 0\n24 14\n38 0\n", Path::new("a.csv")).unwrap();
        let s = Source::File {
            trace: t,
            looped: false,
            tick_ns: 1000.0 * MS as f64,
        };
        assert_eq!(s.at(0), 0.0);
        assert_eq!(s.at(10_000 * MS), 0.0);
        assert!((s.at(17_000 * MS) - 7.0).abs() < 1e-9);
        assert!((s.at(24_000 * MS) - 14.0).abs() < 1e-9);
        assert!((s.at(31_000 * MS) - 7.0).abs() < 1e-9);
        // End of file without loop: hold the last value.
        assert_eq!(s.at(100_000 * MS), 0.0);
    }

    #[test]
    fn end_of_file_hold_and_loop() {
        let t = Trace::parse("# rain\n0 1\n2 5 # peak\n", Path::new("a.csv")).unwrap();
        let hold = Source::File {
            trace: t.clone(),
            looped: false,
            tick_ns: 1e9,
        };
        assert_eq!(hold.at(10_000 * MS), 5.0);
        let lp = Source::File {
            trace: t,
            looped: true,
            tick_ns: 1e9,
        };
        assert_eq!(lp.at(3_000 * MS), 1.0); // period 3 ticks
        assert!((lp.at(1_000 * MS) - 3.0).abs() < 1e-9);
        assert!((lp.at(2_500 * MS) - 3.0).abs() < 1e-9); // wrap step 5 -> 1
        assert!((lp.at(4_000 * MS) - 3.0).abs() < 1e-9);
    }

    #[test]
    fn loop_with_the_largest_tick() {
        // Found by tests/fuzz (target traces): `last tick + 1` overflowed (a panic with overflow
        // checks; without them a period of 0, a NaN tick and an index out of bounds).
        let t = Trace::parse("0 1\n18446744073709551615 2\n", Path::new("a.csv")).unwrap();
        for x in [0.0, 0.5, 1e6, 1e19, f64::MAX] {
            let v = t.at(x, true);
            assert!((1.0..=2.0).contains(&v), "{v} at {x}");
        }
        let d = crate::delay::parse_delay_file("0 250\n18446744073709551615 260\n", Path::new("d"));
        let d = crate::delay::DelaySource::File {
            points: d.unwrap(),
            refresh_ns: 1e8,
            looped: true,
        };
        assert_eq!(d.at(0), 250 * MS);
    }

    #[test]
    fn on_off_and_triangular() {
        let s = Source::OnOff {
            on: 2,
            off: 3,
            amplitude_db: 4.0,
            tick_ns: 1e8,
        };
        let v: Vec<f64> = (0..10).map(|k| s.at(k * 100 * MS)).collect();
        assert_eq!(v, vec![0.0, 0.0, 0.0, 4.0, 4.0, 0.0, 0.0, 0.0, 4.0, 4.0]);
        let t = Source::Triangular {
            slope_db_per_tick: 0.5,
            period: 10,
            tick_ns: 1e9,
        };
        assert_eq!(t.at(0), 0.0);
        assert!((t.at(5_000 * MS) - 2.5).abs() < 1e-9);
        assert!((t.at(8_000 * MS) - 1.0).abs() < 1e-9);
        assert!((t.at(12_000 * MS) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn the_ceiling_is_an_outage() {
        // Accepted up to MAX_TRACE_DB, refused above it.
        let p = Path::new("rain.csv");
        let t = Trace::parse("0 0\n1 100\n", p).unwrap();
        assert_eq!(t.at(1.0, false), MAX_TRACE_DB);
        let e = Trace::parse("0 0\n1 100.5\n", p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "rain.csv:2: attenuation dB 100.5 is outside [-50, 100]"
        );
        // At the ceiling, the best channel (clear sky 60 dB both hops) is below every MODCOD of
        // the embedded tables even with the widest default waterfall: every frame is erased.
        let ch = crate::channel::Channel::constant(60.0, 60.0, 0.0, MAX_TRACE_DB);
        let esn0 = ch.esn0_db(0);
        assert!(esn0 <= -40.0, "{esn0}");
        for table in [
            crate::modcod::ModcodTable::dvbs2_default(),
            crate::modcod::ModcodTable::rcs2_default(),
        ] {
            for m in &table.rows {
                let per = crate::per::PerCurve::waterfall(m.esn0_db, 10.0).per(esn0);
                assert_eq!(per, 1.0, "{} at {esn0} dB", m.name());
            }
        }
    }

    #[test]
    fn malformed_traces() {
        // Each error names the file and the line; a row gives the whole message or its start.
        for (text, want) in [
            (
                "0 0\n5 1.5\n3 2\n",
                "rain.csv:3: tick 3 is not after the previous tick 5 (ticks must increase)",
            ),
            (
                "0 0\n-1 2\n",
                "rain.csv:2: tick \"-1\" is not an unsigned integer",
            ),
            (
                "0 zero\n",
                "rain.csv:1: attenuation dB \"zero\" is not a valid number",
            ),
            ("0 1 2\n", "rain.csv:1: expected 2 fields"),
            ("0\n", "rain.csv:1: missing field 2"),
            ("\n# empty\n", "rain.csv: no data lines"),
        ] {
            let e = Trace::parse(text, Path::new("rain.csv")).unwrap_err();
            assert!(e.to_string().starts_with(want), "{text:?}: {e}");
        }
    }
}
