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

use crate::channel::Channel;
use crate::config::{ConfigError, DirectionConfig};
use crate::modcod::ModcodTable;
use crate::per::{self, PerCurve};
use crate::rng::Rng;

/// The erasure stage of one direction.
#[derive(Debug)]
pub(crate) struct Erasure {
    /// PER curve of each MODCOD row of the direction's table; empty on a fixed-rate link.
    curves: Vec<PerCurve>,
    rng: Rng,
}

impl Erasure {
    /// `curves` from [`per_curves`] (empty for a fixed-rate link).
    pub(crate) fn new(curves: Vec<PerCurve>, rng: Rng) -> Self {
        Erasure { curves, rng }
    }

    /// Whether the frame sent with MODCOD row `modcod`, reaching the receiver at `arrival_ns`, is
    /// erased.
    pub(crate) fn erased(&mut self, modcod: usize, channel: &Channel, arrival_ns: u64) -> bool {
        match self.curves.get(modcod) {
            Some(curve) => self.rng.bernoulli(curve.per(channel.esn0_db(arrival_ns))),
            None => false,
        }
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
