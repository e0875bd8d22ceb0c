//! Packet (frame) error rate as a function of Es/N0, per MODCOD.
//!
//! CSV file format: rows `modcod_id,esn0_db,per` (commas or whitespace), `#` comments, an optional
//! header line `modcod_id,esn0_db,per`. PER is in [0, 1]. Between two points of a MODCOD the PER
//! is interpolated log-linearly (log10 PER linear in Es/N0 dB); outside the points it is clamped to
//! the first / last point. A PER of 0 is taken as 1e-300 for interpolation (so between the last
//! point with errors and a point without, the PER falls to nothing within that step) and is 0 at
//! and beyond such a point. A MODCOD absent from the file uses the default curves below.
//!
//! Calibrated curves (`per_curves: calibrated`, the default): the product's own waveform
//! calibration, committed as `data/per/dvbs2-normal.csv` and `dvbs2-short.csv` (GNU Radio gr-dtv
//! transmitter, AWGN, the `dvbs2phy` receiver; each file's header records the command, the
//! decoder and the frames per point), embedded in the binary and parsed once. They were measured
//! without pilots: on AWGN with a coherent receiver pilots add no energy to the data symbols, so
//! PER(Es/N0) is the same with `pilots: true` (pilots only cost rate, which the frame geometry
//! counts). A MODCOD counts as calibrated when its rows end with a point without frame errors
//! (the top of the waterfall was reached); a calibration stopped mid-waterfall is not used.
//! Below a calibrated curve's first point the PER is 1 (the calibration starts where frames are
//! lost; a first point under 1 is 100-frame sampling noise, and a deeper fade cannot help), above
//! its last point 0. They apply to DVB-S2 MODCODs only: a row of a `dvbs2` link whose id,
//! modulation and code rate are those of EN 302 307-1 Table 13 (ids 1-28).
//!
//! Default waterfall (`per_curves: waterfall`, and a MODCOD the calibration does not have): for
//! a MODCOD with QEF threshold T (the table's required Es/N0,
//! PER 1e-7 by definition) and width W (`waterfall_width_db`, default 0.2 dB, in the 0.1-0.3 dB
//! of published link-level curves), log10 PER is piecewise linear through
//! (T - 7W/6, 0) (T - W, -1) (T, -7) (T + W, -13): the same slope (6 decades per W) continues
//! above the threshold down to 1e-13 (at 3000 frames/s, about one erasure a century), and PER = 1
//! below T - 7W/6.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use crate::config::{ConfigError, FrameSize};
use crate::modcod::{Modcod, ModcodTable};
use crate::textfile;

/// The committed normal-frame calibration (EN 302 307-1 MODCOD ids).
pub const CALIBRATED_NORMAL: &str = include_str!("data/per/dvbs2-normal.csv");
/// The committed short-frame calibration.
pub const CALIBRATED_SHORT: &str = include_str!("data/per/dvbs2-short.csv");

/// One MODCOD's PER curve: points (Es/N0 dB, log10 PER), Es/N0 strictly increasing, and the PER
/// below the first point.
#[derive(Debug, Clone, PartialEq)]
pub struct PerCurve {
    points: Vec<(f64, f64)>,
    below_first: f64,
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
            below_first: 1.0,
        }
    }

    /// A curve through `points` (Es/N0 dB, log10 PER; Es/N0 strictly increasing, at least one),
    /// clamped to its first point below it.
    fn clamped(points: Vec<(f64, f64)>) -> Self {
        let below_first = 10f64.powf(points[0].1).min(1.0);
        PerCurve {
            points,
            below_first,
        }
    }

    /// PER at `esn0_db`.
    pub fn per(&self, esn0_db: f64) -> f64 {
        let p = &self.points;
        let first = p[0];
        let last = p[p.len() - 1];
        if esn0_db.is_nan() {
            return 1.0;
        }
        if esn0_db < first.0 {
            return self.below_first;
        }
        let lg = if esn0_db == first.0 {
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
        per_of_log(lg)
    }

    /// Whether the curve reaches PER 0 at its last point.
    fn ends_without_errors(&self) -> bool {
        self.points[self.points.len() - 1].1 <= LOG_FLOOR
    }
}

/// PER of a log10 PER: 0 at the floor (a point without errors), at most 1.
fn per_of_log(lg: f64) -> f64 {
    if lg <= LOG_FLOOR {
        0.0
    } else {
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
            PerCurve::clamped(pts.into_iter().map(|(x, y, _)| (x, y)).collect()),
        );
    }
    Ok(out)
}

/// The calibrated curves of `frame` (MODCOD id -> curve): the complete ones of the embedded table
/// (ending without frame errors), PER 1 below their first point. Parsed once per process.
pub fn calibrated(frame: FrameSize) -> &'static BTreeMap<u32, PerCurve> {
    static NORMAL: OnceLock<BTreeMap<u32, PerCurve>> = OnceLock::new();
    static SHORT: OnceLock<BTreeMap<u32, PerCurve>> = OnceLock::new();
    match frame {
        FrameSize::Normal => NORMAL.get_or_init(|| complete_curves(CALIBRATED_NORMAL, "normal")),
        FrameSize::Short => SHORT.get_or_init(|| complete_curves(CALIBRATED_SHORT, "short")),
    }
}

/// The complete curves of an embedded calibration table.
fn complete_curves(text: &str, name: &str) -> BTreeMap<u32, PerCurve> {
    let path = format!("<embedded data/per/dvbs2-{name}.csv>");
    parse(text, Path::new(&path))
        .expect("the embedded calibration tables parse")
        .into_iter()
        .filter(|(_, c)| c.ends_without_errors())
        .map(|(id, c)| {
            let curve = PerCurve {
                below_first: 1.0,
                ..c
            };
            (id, curve)
        })
        .collect()
}

/// The calibrated curve of MODCOD row `m` on `frame` frames: only for a row that is the
/// EN 302 307-1 Table 13 MODCOD of its id (same modulation and code rate), since the tables are
/// indexed by those ids; `None` when that MODCOD is not (yet) calibrated.
pub fn calibrated_curve(m: &Modcod, frame: FrameSize) -> Option<&'static PerCurve> {
    static TABLE_13: OnceLock<ModcodTable> = OnceLock::new();
    let standard = TABLE_13.get_or_init(ModcodTable::dvbs2_default);
    let same = standard
        .rows
        .iter()
        .any(|s| s.id == m.id && s.modulation == m.modulation && s.rate == m.rate);
    if !same {
        return None;
    }
    calibrated(frame).get(&m.id)
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

    /// The embedded tables' rows of MODCOD `id`: (Es/N0, PER) as written.
    fn table_rows(text: &str, id: u32) -> Vec<(f64, f64)> {
        textfile::data_lines(text)
            .filter(|(_, f)| f[0] == id.to_string())
            .map(|(_, f)| (f[1].parse().unwrap(), f[2].parse().unwrap()))
            .collect()
    }

    #[test]
    fn calibrated_curves_are_the_tables_at_their_points() {
        for (frame, text) in [
            (FrameSize::Normal, CALIBRATED_NORMAL),
            (FrameSize::Short, CALIBRATED_SHORT),
        ] {
            let curves = calibrated(frame);
            assert!(curves.len() >= 15, "{frame:?}: {} curves", curves.len());
            for (&id, c) in curves {
                let rows = table_rows(text, id);
                assert_eq!(rows.len(), c.points.len(), "{frame:?} MODCOD {id}");
                for (x, want) in rows {
                    let got = c.per(x);
                    assert!(
                        (got - want).abs() <= 1e-12 * want.max(1e-300),
                        "{frame:?} MODCOD {id} at {x} dB: {got} != {want}"
                    );
                }
                // Outside the measured range: 1 below, 0 above.
                let (first, last) = (c.points[0].0, c.points[c.points.len() - 1].0);
                assert_eq!(c.per(first - 0.01), 1.0, "{frame:?} MODCOD {id}");
                assert_eq!(c.per(last + 0.01), 0.0, "{frame:?} MODCOD {id}");
            }
        }
    }

    #[test]
    fn only_complete_calibrations_count() {
        // MODCOD 1 reaches a point without errors, 2 stops mid-waterfall (a resumable run).
        let text = "1,2.0,0.9\n1,2.1,1e-2\n1,2.2,0\n2,5.0,1\n2,5.1,0.5\n";
        let c = complete_curves(text, "test");
        assert_eq!(c.keys().copied().collect::<Vec<_>>(), vec![1]);
        let c = &c[&1];
        assert_eq!(c.per(1.99), 1.0, "below the first point: 1, not 0.9");
        assert!((c.per(2.0) - 0.9).abs() < 1e-12);
        assert!((c.per(2.05) - 0.9f64.sqrt() * 0.1).abs() < 1e-9);
        assert!(c.per(2.19) < 1e-200, "the step to a point without errors");
        assert_eq!(c.per(2.2), 0.0);
        assert_eq!(c.per(30.0), 0.0);
        // A file keeps its documented clamp to the first point.
        let f = parse(text, Path::new("p.csv")).unwrap();
        assert!((f[&1].per(1.0) - 0.9).abs() < 1e-12);
        assert!((f[&2].per(9.0) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn calibrated_curves_only_for_table_13_modcods() {
        let table = ModcodTable::dvbs2_default();
        let m = table.rows[0].clone();
        let c = calibrated_curve(&m, FrameSize::Normal).expect("QPSK 1/4 is calibrated");
        assert_eq!(c, &calibrated(FrameSize::Normal)[&1]);
        // Id 1 with another constellation or rate is not Table 13's MODCOD 1.
        let other = Modcod {
            rate: "1/3".into(),
            ..m
        };
        assert_eq!(calibrated_curve(&other, FrameSize::Normal), None);
        // No 9/10 short frame exists (EN 302 307-1 Table 5b): QPSK 9/10 short is never calibrated.
        assert_eq!(calibrated_curve(&table.rows[10], FrameSize::Short), None);
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
