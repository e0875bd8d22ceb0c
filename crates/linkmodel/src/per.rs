//! Packet (frame) error rate as a function of Es/N0, per MODCOD.
//!
//! CSV file format: rows `modcod_id,esn0_db,per` (commas or whitespace), `#` comments, an optional
//! header line `modcod_id,esn0_db,per`. PER is in [0, 1]. Between two points of a MODCOD the PER
//! is interpolated log-linearly (log10 PER linear in Es/N0 dB); outside the points it is clamped to
//! the first / last point. A PER of 0 is taken as 1e-300 for interpolation. A MODCOD absent from
//! the file uses the default waterfall below.
//!
//! Default waterfall (no file): for a MODCOD with QEF threshold T (the table's required Es/N0,
//! PER 1e-7 by definition) and width W (`waterfall_width_db`, default 0.2 dB, in the 0.1-0.3 dB
//! of published link-level curves), log10 PER is piecewise linear through
//! (T - 7W/6, 0) (T - W, -1) (T, -7) (T + W, -13): the same slope (6 decades per W) continues
//! above the threshold down to 1e-13 (at 3000 frames/s, about one erasure a century), and PER = 1
//! below T - 7W/6.

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::ConfigError;
use crate::textfile;

/// One MODCOD's PER curve: points (Es/N0 dB, log10 PER), Es/N0 strictly increasing.
#[derive(Debug, Clone, PartialEq)]
pub struct PerCurve {
    points: Vec<(f64, f64)>,
}

/// log10 of the smallest PER considered (PER 0 in a file).
const LOG_FLOOR: f64 = -300.0;

impl PerCurve {
    /// The default waterfall around threshold `t_db` with width `w_db`.
    pub fn waterfall(t_db: f64, w_db: f64) -> Self {
        PerCurve {
            points: vec![
                (t_db - w_db * 7.0 / 6.0, 0.0),
                (t_db - w_db, -1.0),
                (t_db, -7.0),
                (t_db + w_db, -13.0),
            ],
        }
    }

    /// PER at `esn0_db`.
    pub fn per(&self, esn0_db: f64) -> f64 {
        let p = &self.points;
        let first = p[0];
        let last = p[p.len() - 1];
        let lg = if esn0_db.is_nan() || esn0_db <= first.0 {
            first.1
        } else if esn0_db >= last.0 {
            last.1
        } else {
            // Few points per curve: a partition point search is cheap (log n).
            let i = p.partition_point(|&(x, _)| x <= esn0_db);
            let (x0, y0) = p[i - 1];
            let (x1, y1) = p[i];
            y0 + (y1 - y0) * (esn0_db - x0) / (x1 - x0)
        };
        if esn0_db.is_nan() {
            return 1.0;
        }
        10f64.powf(lg).min(1.0)
    }
}

/// Parses a PER CSV file into one curve per MODCOD id.
pub fn parse(text: &str, path: &Path) -> Result<BTreeMap<u32, PerCurve>, ConfigError> {
    let mut raw: BTreeMap<u32, Vec<(f64, f64, usize)>> = BTreeMap::new();
    for (line, f) in textfile::data_lines(text) {
        if f[0].eq_ignore_ascii_case("modcod_id") {
            continue;
        }
        textfile::at_most(path, line, &f, 3)?;
        let id: u32 = textfile::field(path, line, &f, 0, "modcod_id")?;
        let esn0 = textfile::finite(path, line, &f, 1, "esn0_db")?;
        let per = textfile::finite_within(path, line, &f, 2, "per", 0.0..=1.0, "")?;
        if !(-50.0..=80.0).contains(&esn0) {
            return Err(ConfigError::file(
                path,
                line,
                format!("esn0_db {esn0} is outside [-50, 80] dB"),
            ));
        }
        let lg = if per == 0.0 {
            LOG_FLOOR
        } else {
            per.log10().max(LOG_FLOOR)
        };
        raw.entry(id).or_default().push((esn0, lg, line));
    }
    if raw.is_empty() {
        return Err(ConfigError::io(
            path,
            "no PER rows (format: `modcod_id,esn0_db,per`)",
        ));
    }
    let mut out = BTreeMap::new();
    for (id, mut pts) in raw {
        pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.2.cmp(&b.2)));
        for w in pts.windows(2) {
            if w[0].0 == w[1].0 {
                return Err(ConfigError::file(
                    path,
                    w[1].2.max(w[0].2),
                    format!("MODCOD {id} has two rows at esn0_db {}", w[0].0),
                ));
            }
        }
        out.insert(
            id,
            PerCurve {
                points: pts.into_iter().map(|(x, y, _)| (x, y)).collect(),
            },
        );
    }
    Ok(out)
}

/// Loads a PER CSV file.
pub fn load(path: &Path) -> Result<BTreeMap<u32, PerCurve>, ConfigError> {
    parse(&textfile::read(path)?, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_waterfall() {
        let c = PerCurve::waterfall(16.05, 0.2);
        assert!((c.per(16.05) - 1e-7).abs() < 1e-12);
        assert!((c.per(15.85) - 1e-1).abs() < 1e-9);
        assert_eq!(c.per(15.0), 1.0);
        assert!((c.per(15.95) - 1e-4).abs() < 1e-9);
        assert!(c.per(17.0) <= 1e-13 + 1e-20);
        // Monotone non-increasing.
        let mut prev = 1.0;
        for i in 0..200 {
            let v = c.per(15.5 + i as f64 * 0.005);
            assert!(v <= prev + 1e-15);
            prev = v;
        }
    }

    #[test]
    fn csv_interpolation_and_clamp() {
        let text = "modcod_id,esn0_db,per\n7,3.9,1e-1\n7,4.0,1e-5 # comment\n";
        let t = parse(text, Path::new("p.csv")).unwrap();
        let c = &t[&7];
        assert!((c.per(3.95) - 1e-3).abs() < 1e-9);
        assert!((c.per(3.0) - 1e-1).abs() < 1e-12);
        assert!((c.per(5.0) - 1e-5).abs() < 1e-12);
    }

    #[test]
    fn malformed() {
        let p = Path::new("p.csv");
        let e = parse("1,2.0,1.5\n", p).unwrap_err();
        assert_eq!(e.to_string(), "p.csv:1: per 1.5 is outside [0, 1]");
        let e = parse("1,2.0,0.1\n1,x,0.1\n", p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "p.csv:2: esn0_db \"x\" is not a valid number"
        );
        let e = parse("1,2.0,0.1\n1,2.0,0.01\n", p).unwrap_err();
        assert_eq!(e.to_string(), "p.csv:2: MODCOD 1 has two rows at esn0_db 2");
        let e = parse("1,2.0,0.1,4\n", p).unwrap_err();
        assert!(
            e.to_string().starts_with("p.csv:1: expected 3 fields"),
            "{e}"
        );
        let e = parse("# nothing\n", p).unwrap_err();
        assert!(e.to_string().starts_with("p.csv: no PER rows"), "{e}");
    }
}
