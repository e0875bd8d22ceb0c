//! Erasure stage: the channel's verdict on each frame, in packet order after the scheduler
//! (`scheduler.rs`) and before the bit-error stage (`bit_errors.rs`). Reads the ended frame's
//! MODCOD and the Es/N0 (`channel.rs`) at the time the frame reaches the receiver (its end plus
//! the propagation delay); writes one verdict per frame: erased with probability
//! PER(MODCOD, Es/N0) (`per.rs`), one draw of the direction's erasure random stream.
//!
//! Every packet whose last piece is in an erased frame, or one of whose fragments was in an
//! erased frame, is lost (`LossCause::FrameErasure`); the direction applies that to the frame's
//! packets. A fixed-rate link has no MODCOD and no PER: its frames are never erased (and no
//! random draw is made).
//!
//! With `failed_frames`, a failed frame whose Es/N0 is within `corrupt_within_db` below its
//! MODCOD's threshold is [`Verdict::Corrupted`] instead: the direction delivers its packets
//! through a uniform bit-error stage at `failed_frames.ber`. The packet whose first fragments it
//! carries is lost as on erasure (GSE's CRC-32 on the reassembled packet catches the errors);
//! a packet whose last fragment it carries gets the residual errors like a whole one.

use std::collections::BTreeMap;

use crate::channel::Channel;
use crate::config::{ConfigError, DirectionConfig, FrameSize, LinkConfig, LinkKind, PerCurves};
use crate::modcod::{Modcod, ModcodTable};
use crate::per::{self, PerCurve};
use crate::rng::Rng;
use crate::scheduler;
use crate::types::Dir;

/// The channel's verdict on one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Decoded,
    /// Failed close to the threshold: delivered with residual bit errors (`failed_frames`).
    Corrupted,
    Erased,
}

/// The erasure stage of one direction.
#[derive(Debug)]
pub(crate) struct Erasure {
    /// PER curve of each MODCOD row of the direction's table; empty on a fixed-rate link.
    curves: Vec<PerCurve>,
    /// Required Es/N0 of each MODCOD row minus `failed_frames.corrupt_within_db`: a failed frame
    /// at or above it is corrupted rather than erased. Empty without `failed_frames`.
    corrupt_above_db: Vec<f64>,
    rng: Rng,
}

impl Erasure {
    /// `curves` from [`per_curves`] (empty for a fixed-rate link); `corrupt_above_db` per row, or
    /// empty when every failed frame is erased.
    pub(crate) fn new(curves: Vec<PerCurve>, corrupt_above_db: Vec<f64>, rng: Rng) -> Self {
        Erasure {
            curves,
            corrupt_above_db,
            rng,
        }
    }

    /// The verdict on the frame sent with MODCOD row `modcod`, reaching the receiver at
    /// `arrival_ns` (one random draw per frame, whatever the verdict).
    pub(crate) fn judge(&mut self, modcod: usize, channel: &Channel, arrival_ns: u64) -> Verdict {
        let Some(curve) = self.curves.get(modcod) else {
            return Verdict::Decoded;
        };
        let esn0 = channel.esn0_db(arrival_ns);
        if !self.rng.bernoulli(curve.per(esn0)) {
            return Verdict::Decoded;
        }
        match self.corrupt_above_db.get(modcod) {
            Some(&floor) if esn0 >= floor => Verdict::Corrupted,
            _ => Verdict::Erased,
        }
    }
}

/// Per MODCOD row of `table`, the Es/N0 down to which a failed frame is corrupted rather than
/// erased (`failed_frames`); empty when the section is absent.
pub(crate) fn corrupt_floors(table: &ModcodTable, d: &DirectionConfig) -> Vec<f64> {
    match &d.failed_frames {
        Some(f) => table
            .rows
            .iter()
            .map(|m| m.esn0_db - f.corrupt_within_db)
            .collect(),
        None => Vec::new(),
    }
}

/// The PER curve of each row of `table`: from `per_table` when the file has the MODCOD, else the
/// row's default curve ([`default_curve`]).
pub(crate) fn per_curves(
    table: &ModcodTable,
    d: &DirectionConfig,
) -> Result<Vec<PerCurve>, ConfigError> {
    let file_curves = file_curves(d)?;
    Ok(table
        .rows
        .iter()
        .map(|m| {
            file_curves
                .as_ref()
                .and_then(|c| c.get(&m.id).cloned())
                .unwrap_or_else(|| default_curve(m, d))
        })
        .collect())
}

/// The curves of the direction's `per_table`, if it has one.
fn file_curves(d: &DirectionConfig) -> Result<Option<BTreeMap<u32, PerCurve>>, ConfigError> {
    d.per_table.as_deref().map(per::load).transpose()
}

/// The curve of row `m` that `per_table` does not give: the calibrated one when `per_curves`
/// asks for it and the calibration of the link's frame size has that MODCOD, else the assumed
/// waterfall around the row's threshold (`waterfall_width_db`).
fn default_curve(m: &Modcod, d: &DirectionConfig) -> PerCurve {
    calibrated_for(m, d)
        .cloned()
        .unwrap_or_else(|| PerCurve::waterfall(m.esn0_db, d.waterfall_width_db))
}

/// The calibrated curve of row `m` on this direction: `per_curves: calibrated`, a DVB-S2 link
/// (the calibration is of DVB-S2's codes), a MODCOD the tables have.
fn calibrated_for(m: &Modcod, d: &DirectionConfig) -> Option<&'static PerCurve> {
    if d.per_curves != PerCurves::Calibrated || d.link_kind() != LinkKind::Dvbs2 {
        return None;
    }
    per::calibrated_curve(m, d.frame)
}

/// What the emulator says once at start when `per_curves: calibrated` leaves MODCODs of direction
/// `dir` on the assumed waterfall (not calibrated yet, not DVB-S2 MODCODs, or an `rcs2` link);
/// `None` when every row without a `per_table` entry is calibrated, or the link has no MODCODs.
pub fn waterfall_fallback_note(cfg: &LinkConfig, dir: Dir) -> Result<Option<String>, ConfigError> {
    let d = cfg.direction(dir);
    if d.per_curves != PerCurves::Calibrated || d.link_kind() == LinkKind::Fixed {
        return Ok(None);
    }
    let table = scheduler::modcod_table(d)?;
    let file_curves = file_curves(d)?;
    let in_file = |id: u32| file_curves.as_ref().is_some_and(|c| c.contains_key(&id));
    // Rows the link cannot send (9/10 on short frames: no such frame) need no curve.
    let usable = |m: &Modcod| {
        d.link_kind() != LinkKind::Dvbs2
            || crate::modcod::dvbs2_shape(m, d.frame, d.pilots).is_some()
    };
    let ids: Vec<u32> = table
        .rows
        .iter()
        .filter(|m| usable(m) && !in_file(m.id) && calibrated_for(m, d).is_none())
        .map(|m| m.id)
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    let rest = if ids.len() < table.rows.iter().filter(|m| usable(m)).count() {
        "; the others are calibrated"
    } else {
        ""
    };
    let why = match d.link_kind() {
        LinkKind::Rcs2 => "the calibration is of DVB-S2's codes, not RCS2's".to_string(),
        _ => format!(
            "not in the {} calibration of EN 302 307-1's MODCODs",
            frame_name(d.frame)
        ),
    };
    Ok(Some(format!(
        "{}: PER curves of MODCODs {} ({why}) are the assumed waterfall ({} dB wide){rest}",
        dir.as_str(),
        id_ranges(&ids),
        d.waterfall_width_db
    )))
}

fn frame_name(f: FrameSize) -> &'static str {
    match f {
        FrameSize::Normal => "normal-frame",
        FrameSize::Short => "short-frame",
    }
}

/// Ids as runs: `1, 3-5, 9`.
fn id_ranges(ids: &[u32]) -> String {
    let mut runs: Vec<(u32, u32)> = Vec::new();
    for &id in ids {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == id => r.1 = id,
            _ => runs.push((id, id)),
        }
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::modcod::ModcodTable;

    fn forward(yaml: &str) -> DirectionConfig {
        let cfg = LinkConfig::from_yaml_str(&format!("forward:\n{yaml}")).unwrap();
        cfg.forward
    }

    #[test]
    fn the_default_is_the_calibration_of_the_frame_size() {
        for (frame, size) in [("normal", FrameSize::Normal), ("short", FrameSize::Short)] {
            let d = forward(&format!("  frame: {frame}\n"));
            let table = ModcodTable::dvbs2_default();
            let curves = per_curves(&table, &d).unwrap();
            let calibrated = per::calibrated(size);
            for (m, c) in table.rows.iter().zip(&curves) {
                let want = match calibrated.get(&m.id) {
                    Some(cal) => cal.clone(),
                    None => PerCurve::waterfall(m.esn0_db, 0.2),
                };
                assert_eq!(c, &want, "{frame} {}", m.name());
            }
            assert!(calibrated.keys().all(|id| table.index_of(*id).is_some()));
        }
    }

    #[test]
    fn per_curves_waterfall_is_the_assumed_curve_everywhere() {
        let d = forward("  per_curves: waterfall\n  waterfall_width_db: 0.3\n");
        let table = ModcodTable::dvbs2_default();
        let curves = per_curves(&table, &d).unwrap();
        for (m, c) in table.rows.iter().zip(&curves) {
            assert_eq!(c, &PerCurve::waterfall(m.esn0_db, 0.3), "{}", m.name());
        }
        let cfg = LinkConfig::from_yaml_str("forward:\n  per_curves: waterfall\n").unwrap();
        assert_eq!(waterfall_fallback_note(&cfg, Dir::Forward).unwrap(), None);
    }

    #[test]
    fn uncalibrated_modcods_are_the_waterfall_and_said() {
        // DVB-S2X's own MODCODs (ids from 132) are not in the calibration.
        let d = forward("  modcod_set: dvbs2x\n");
        let table = ModcodTable::dvbs2x();
        let curves = per_curves(&table, &d).unwrap();
        let s2x = table.index_of(132).unwrap();
        assert_eq!(
            curves[s2x],
            PerCurve::waterfall(table.rows[s2x].esn0_db, 0.2)
        );
        let cfg = LinkConfig::from_yaml_str("forward:\n  modcod_set: dvbs2x\n").unwrap();
        let note = waterfall_fallback_note(&cfg, Dir::Forward)
            .unwrap()
            .unwrap();
        assert!(
            note.starts_with("forward: PER curves of MODCODs "),
            "{note}"
        );
        assert!(note.contains("132, 134, "), "{note}");
        assert!(
            !note.contains("MODCODs 1,") && !note.contains("MODCODs 1-"),
            "{note}"
        );
        // The return link's RCS2 MODCODs are never calibrated.
        assert!(note.ends_with("; the others are calibrated"), "{note}");
        let note = waterfall_fallback_note(&cfg, Dir::Return).unwrap().unwrap();
        assert!(note.contains("not RCS2's"), "{note}");
        assert!(note.ends_with("(0.2 dB wide)"), "every RCS2 MODCOD: {note}");
        // Every short-frame MODCOD is calibrated (9/10 has no short frame and needs no curve).
        let cfg = LinkConfig::from_yaml_str("forward:\n  frame: short\n").unwrap();
        assert_eq!(waterfall_fallback_note(&cfg, Dir::Forward).unwrap(), None);
    }

    #[test]
    fn a_per_table_overrides_the_calibration() {
        let dir = std::env::temp_dir().join(format!("per-override-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("per.csv"), "1,-2.5,0.5\n1,-2.0,0\n").unwrap();
        let yaml = "forward:\n  per_table: per.csv\n";
        std::fs::write(dir.join("link.yaml"), yaml).unwrap();
        let curves = LinkConfig::from_yaml_file(&dir.join("link.yaml"))
            .and_then(|cfg| per_curves(&ModcodTable::dvbs2_default(), &cfg.forward));
        std::fs::remove_dir_all(&dir).unwrap();
        let curves = curves.unwrap();
        assert!(
            (curves[0].per(-2.6) - 0.5).abs() < 1e-12,
            "the file's clamp"
        );
        assert_eq!(&curves[1], &per::calibrated(FrameSize::Normal)[&2]);
    }

    #[test]
    fn id_runs() {
        assert_eq!(id_ranges(&[1, 3, 4, 5, 9]), "1, 3-5, 9");
    }
}
