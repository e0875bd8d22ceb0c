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

use crate::channel::Channel;
use crate::config::{ConfigError, DirectionConfig};
use crate::modcod::ModcodTable;
use crate::per::{self, PerCurve};
use crate::rng::Rng;

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
/// default waterfall around the row's threshold (`waterfall_width_db`).
pub(crate) fn per_curves(
    table: &ModcodTable,
    d: &DirectionConfig,
) -> Result<Vec<PerCurve>, ConfigError> {
    let file_curves = match &d.per_table {
        Some(path) => Some(per::load(path)?),
        None => None,
    };
    Ok(table
        .rows
        .iter()
        .map(|m| {
            file_curves
                .as_ref()
                .and_then(|c| c.get(&m.id).cloned())
                .unwrap_or_else(|| PerCurve::waterfall(m.esn0_db, d.waterfall_width_db))
        })
        .collect())
}
