//! Scheduler stage: packets from the queue into frames on the air, in packet order after the queue
//! (`queue.rs`) and before the erasure stage (`erasure.rs`). Reads the queue, the MODCOD the ACM
//! loop chooses (`acm.rs`, from the channel's Es/N0 reports) and the frame shapes (`modcod.rs`);
//! writes the frame on the air (its end time and MODCOD) and the packets whose last piece it
//! carries (GSE packing, `framing.rs`).
//!
//! Frames (BBFrames, RCS2 bursts, or single packets on a fixed-rate link) are sent back to back
//! while there is data, so a saturated link carries exactly the MODCOD's useful rate. When the
//! queue empties the link idles; a packet arriving at an idle link starts a frame at once (the
//! rest of the frame is padding), so an idle link adds one frame time, not a fill timeout. A
//! frame's content is fixed when it starts; its MODCOD is the ACM loop's choice at that instant.
//! Frame durations are symbols / symbol rate, accumulated with a fractional-ns carry while frames
//! are back to back, so the long-run rate is exact.

use crate::acm::{AcmLoop, Mode};
use crate::channel::Channel;
use crate::config::{AcmMode, ConfigError, DirectionConfig, LinkConfig, LinkKind, ModcodSet};
use crate::delay::DelaySource;
use crate::framing::{self, Gse, Partial};
use crate::modcod::{dvbs2_shape, rcs2_shape, FrameShape, ModcodTable};
use crate::queue::Queue;
use crate::types::{Dir, ModcodStatus};

/// Frames with fewer data bytes than this are not used (no room for GSE headers and data).
const MIN_FRAME_DATA_BYTES: u32 = 16;

/// The physical layer of a direction (one per direction: the size difference does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Phy {
    /// DVB-S2 or RCS2: MODCOD table, frame shape per row, ACM loop.
    Modcod {
        table: ModcodTable,
        shapes: Vec<Option<FrameShape>>,
        symbol_rate_baud: f64,
        acm: AcmLoop,
    },
    /// Fixed bit rate, one packet at a time.
    Fixed { rate_bps: f64 },
}

impl Phy {
    /// A fixed-rate link (`rate_bps` is required).
    pub(crate) fn fixed(d: &DirectionConfig, p: &str) -> Result<Self, ConfigError> {
        let rate_bps = d.rate_bps.ok_or_else(|| {
            ConfigError::field(format!("{p}.rate_bps"), "required when kind is fixed")
        })?;
        Ok(Phy::Fixed { rate_bps })
    }

    /// A DVB-S2 or RCS2 link of direction `dir` with MODCOD table `table` ([`modcod_table`]):
    /// frame shapes, the usable MODCODs, the CCM / VCM MODCODs checked against the table, and the
    /// ACM loop (its reports travel over the opposite direction).
    pub(crate) fn modcod(
        cfg: &LinkConfig,
        dir: Dir,
        table: ModcodTable,
        channel: &Channel,
    ) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        let p = dir.as_str();
        let shapes = frame_shapes(&table, d);
        let usable: Vec<(f64, usize)> = table
            .rows
            .iter()
            .enumerate()
            .filter(|(i, _)| shapes[*i].is_some())
            .map(|(i, m)| (m.esn0_db, i))
            .collect();
        if usable.is_empty() {
            return Err(ConfigError::field(
                format!("{p}.modcod_table"),
                "no MODCOD of the table is usable with this frame size / burst length",
            ));
        }
        let mode = acm_mode(&table, &shapes, d, p)?;
        let feedback = DelaySource::from_config(cfg, cfg.direction(dir.opposite()))?;
        let a = &d.acm;
        let acm = AcmLoop::new(
            mode,
            usable,
            a.refresh_ms,
            a.margin_db,
            a.hysteresis_db,
            feedback,
            channel,
        );
        Ok(Phy::Modcod {
            table,
            shapes,
            symbol_rate_baud: d.symbol_rate_baud.unwrap_or(40e6),
            acm,
        })
    }
}

/// The MODCOD table of a DVB-S2 or RCS2 direction: `modcod_table`, or the embedded one
/// (`modcod_set` for DVB-S2).
pub(crate) fn modcod_table(d: &DirectionConfig) -> Result<ModcodTable, ConfigError> {
    Ok(match &d.modcod_table {
        Some(path) => ModcodTable::load(path)?,
        None if d.link_kind() == LinkKind::Dvbs2 => match d.modcod_set {
            Some(ModcodSet::Dvbs2x) => ModcodTable::dvbs2x(),
            Some(ModcodSet::Dvbs2) | None => ModcodTable::dvbs2_default(),
        },
        None => ModcodTable::rcs2_default(),
    })
}

/// The frame shape of each row of `table` (`None`: not usable with this frame size / burst).
fn frame_shapes(table: &ModcodTable, d: &DirectionConfig) -> Vec<Option<FrameShape>> {
    table
        .rows
        .iter()
        .map(|m| {
            let s = if d.link_kind() == LinkKind::Dvbs2 {
                dvbs2_shape(m, d.frame, d.pilots)
            } else {
                rcs2_shape(m, d.burst_symbols)
            };
            s.filter(|s| s.data_bytes >= MIN_FRAME_DATA_BYTES)
        })
        .collect()
}

/// How frames get their MODCOD (`acm.mode`), with CCM / VCM MODCOD ids as row indices.
fn acm_mode(
    table: &ModcodTable,
    shapes: &[Option<FrameShape>],
    d: &DirectionConfig,
    p: &str,
) -> Result<Mode, ConfigError> {
    Ok(match d.acm.mode {
        AcmMode::Acm => Mode::Acm,
        AcmMode::Ccm => Mode::Ccm(row_of(
            table,
            shapes,
            format!("{p}.acm.modcod"),
            d.acm.modcod.ok_or_else(|| {
                ConfigError::field(format!("{p}.acm.modcod"), "required when acm.mode is ccm")
            })?,
        )?),
        AcmMode::Vcm => {
            let mut cycle = Vec::with_capacity(d.acm.vcm_modcods.len());
            for (k, id) in d.acm.vcm_modcods.iter().enumerate() {
                let field = format!("{p}.acm.vcm_modcods[{k}]");
                cycle.push(row_of(table, shapes, field, *id)?);
            }
            Mode::Vcm { cycle, pos: 0 }
        }
    })
}

/// The row of MODCOD `id` (named by configuration field `field`), which must be in the table and
/// usable.
fn row_of(
    table: &ModcodTable,
    shapes: &[Option<FrameShape>],
    field: String,
    id: u32,
) -> Result<usize, ConfigError> {
    let i = table.index_of(id).ok_or_else(|| {
        let ids: Vec<String> = table.rows.iter().map(|r| r.id.to_string()).collect();
        ConfigError::field(
            field.clone(),
            format!(
                "MODCOD id {id} is not in the table (ids: {})",
                ids.join(" ")
            ),
        )
    })?;
    if shapes[i].is_none() {
        return Err(ConfigError::field(
            field,
            format!(
                "MODCOD id {id} ({}) does not exist with this frame size / burst length",
                table.rows[i].name()
            ),
        ));
    }
    Ok(i)
}

/// The frame on the air.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InFlight {
    pub(crate) end_ns: u64,
    /// MODCOD row index (unused for a fixed-rate link).
    pub(crate) modcod: usize,
    /// The frame carries a fragment of the packet that is still partial after it.
    partial_touched: bool,
}

/// The scheduler of one direction: the physical layer, the frame on the air and what it carries.
#[derive(Debug)]
pub(crate) struct Scheduler {
    phy: Phy,
    gse: Gse,
    /// The packet whose first fragments have been sent, if any.
    partial: Option<Partial>,
    frame: Option<InFlight>,
    /// Packets whose last piece is in the frame on the air (reused buffer), each with its "an
    /// earlier fragment was erased" flag.
    completes: Vec<(Vec<u8>, bool)>,
    carry_ns: f64,
    /// End of the last frame sent: an idle link never starts a frame before it (guards against
    /// a caller's `now_ns` going slightly backwards).
    link_free_ns: u64,
    /// GSE bytes (headers + data) sent so far, for rate checks.
    gse_bytes_sent: u64,
    frames_sent: u64,
}

impl Scheduler {
    pub(crate) fn new(phy: Phy, gse_label_bytes: u8) -> Self {
        Scheduler {
            phy,
            gse: Gse {
                label_bytes: gse_label_bytes as u32,
            },
            partial: None,
            frame: None,
            completes: Vec::with_capacity(64),
            carry_ns: 0.0,
            link_free_ns: 0,
            gse_bytes_sent: 0,
            frames_sent: 0,
        }
    }

    /// A packet was queued at `now_ns`: an idle link starts a frame at once.
    pub(crate) fn packet_queued(&mut self, now_ns: u64, queue: &mut Queue, channel: &Channel) {
        if self.frame.is_none() {
            self.carry_ns = 0.0;
            self.start_frame(now_ns.max(self.link_free_ns), queue, channel);
        }
    }

    /// Takes the frame on the air off the air if it has ended by `now_ns`. Its packets are
    /// [`Scheduler::completed`] until [`Scheduler::send_next`].
    pub(crate) fn take_ended(&mut self, now_ns: u64) -> Option<InFlight> {
        let f = self.frame.filter(|f| f.end_ns <= now_ns)?;
        self.frame = None;
        Some(f)
    }

    /// Frame `f` was erased: the partial packet it carried a fragment of is lost too.
    pub(crate) fn fragment_erased(&mut self, f: &InFlight) {
        if f.partial_touched {
            if let Some(p) = self.partial.as_mut() {
                p.erased = true;
            }
        }
    }

    /// The packets whose last piece was in the frame that ended, with their "an earlier fragment
    /// was erased" flag.
    pub(crate) fn completed(&mut self) -> std::vec::Drain<'_, (Vec<u8>, bool)> {
        self.completes.drain(..)
    }

    /// After frame `f` ended: the next frame starts back to back while data waits.
    pub(crate) fn send_next(&mut self, f: &InFlight, queue: &mut Queue, channel: &Channel) {
        if self.partial.is_some() || !queue.is_empty() {
            self.start_frame(f.end_ns, queue, channel);
        }
    }

    /// Applies the ACM reports that have reached the transmitter by `now_ns`.
    pub(crate) fn update_acm(&mut self, now_ns: u64, channel: &Channel) {
        if let Phy::Modcod { acm, .. } = &mut self.phy {
            acm.update(now_ns, channel);
        }
    }

    /// End of the frame on the air.
    pub(crate) fn frame_end_ns(&self) -> Option<u64> {
        self.frame.map(|f| f.end_ns)
    }

    /// When the next ACM report reaches the transmitter (ACM only).
    pub(crate) fn next_report_arrival_ns(&self) -> Option<u64> {
        match &self.phy {
            Phy::Modcod { acm, .. } => acm.next_report_arrival_ns(),
            Phy::Fixed { .. } => None,
        }
    }

    /// The MODCOD in use (`None` on a fixed-rate link) and the useful rate, bit/s.
    pub(crate) fn modcod_status(&self) -> (Option<ModcodStatus>, f64) {
        match &self.phy {
            Phy::Modcod {
                table,
                shapes,
                symbol_rate_baud,
                acm,
            } => {
                let i = acm.current();
                let m = &table.rows[i];
                let rate = shapes[i].map_or(0.0, |s| s.useful_rate_bps(*symbol_rate_baud));
                (
                    Some(ModcodStatus {
                        id: m.id,
                        name: m.name(),
                        efficiency: m.efficiency,
                        required_esn0_db: m.esn0_db,
                    }),
                    rate,
                )
            }
            Phy::Fixed { rate_bps } => (None, *rate_bps),
        }
    }

    /// GSE bytes (headers + data, no padding) and frames sent so far.
    pub(crate) fn totals(&self) -> (u64, u64) {
        (self.gse_bytes_sent, self.frames_sent)
    }

    /// Puts the next frame on the air at `t_ns`: packs it (or takes one packet on a fixed-rate
    /// link) and computes its end.
    fn start_frame(&mut self, t_ns: u64, queue: &mut Queue, channel: &Channel) {
        let (dur_ns, modcod, packed) = match &mut self.phy {
            Phy::Modcod {
                shapes,
                symbol_rate_baud,
                acm,
                ..
            } => {
                acm.update(t_ns, channel);
                let m = acm.next_frame_modcod();
                let shape = shapes[m].expect("usable MODCOD");
                let packed = framing::pack(
                    self.gse,
                    shape.data_bytes,
                    &mut self.partial,
                    &mut queue.at(t_ns),
                    &mut self.completes,
                );
                (shape.symbols as f64 * 1e9 / *symbol_rate_baud, m, packed)
            }
            Phy::Fixed { rate_bps } => {
                let p = queue.pop(t_ns).expect("start_frame with data");
                let bits = p.len() as f64 * 8.0;
                let len = p.len() as u32;
                self.completes.push((p, false));
                (
                    bits * 1e9 / *rate_bps,
                    0,
                    framing::Packed {
                        partial_touched: false,
                        gse_bytes: len,
                    },
                )
            }
        };
        let dur = dur_ns + self.carry_ns;
        let whole = dur.floor();
        self.carry_ns = dur - whole;
        self.gse_bytes_sent += packed.gse_bytes as u64;
        self.frames_sent += 1;
        let end_ns = t_ns + (whole as u64).max(1);
        self.link_free_ns = end_ns;
        self.frame = Some(InFlight {
            end_ns,
            modcod,
            partial_touched: packed.partial_touched,
        });
    }
}
