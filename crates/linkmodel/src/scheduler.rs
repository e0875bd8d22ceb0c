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
//!
//! With `return.dama` (RCS2 only) a burst goes out only in a timeslot the DAMA stage (`dama.rs`)
//! granted: a burst that would start between granted slots waits for the next one (a timer),
//! and with no granted slot left in the superframe the link waits for the next superframe's
//! grant (its start is a timer too, where the terminal also sends its requests).

use crate::acm::{AcmLoop, Mode};
use crate::channel::Channel;
use crate::config::{AcmMode, ConfigError, DirectionConfig, LinkConfig, LinkKind, ModcodSet};
use crate::dama::{Dama, Demand, Grant};
use crate::delay::DelaySource;
use crate::framing::{self, Gse, Partial};
use crate::gse::{GseError, GseWriter};
use crate::modcod::{dvbs2_shape, rcs2_shape, FrameShape, ModcodTable};
use crate::queue::Queue;
use crate::rng::{Rng, Stream};
use crate::types::{DamaStatus, Dir, ModcodStatus};

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

    /// The DAMA stage of direction `dir` if it has `dama` (an `rcs2` return direction; checked by
    /// validation): slots sized by this physical layer's bursts at the initial MODCOD, the
    /// default request delay from the two directions' delays at the start.
    pub(crate) fn dama(&self, cfg: &LinkConfig, dir: Dir) -> Result<Option<Dama>, ConfigError> {
        let (
            Some(c),
            Phy::Modcod {
                shapes,
                symbol_rate_baud,
                acm,
                ..
            },
        ) = (&cfg.direction(dir).dama, self)
        else {
            return Ok(None);
        };
        let shape = shapes[acm.current()].expect("usable MODCOD");
        let burst_ns = shape.symbols as f64 * 1e9 / symbol_rate_baud;
        let two_way = DelaySource::from_config(cfg, cfg.direction(dir))?.at(0)
            + DelaySource::from_config(cfg, cfg.direction(dir.opposite()))?.at(0);
        let rng = Rng::derive(cfg.seed, dir, Stream::Contention);
        Dama::build(c, dir.as_str(), burst_ns, shape.data_bytes, two_way, rng).map(Some)
    }

    /// Payload of a frame (burst) at the MODCOD in use, bytes (0 on a fixed-rate link).
    fn current_data_bytes(&self) -> u32 {
        match self {
            Phy::Modcod { shapes, acm, .. } => shapes[acm.current()].map_or(0, |s| s.data_bytes),
            Phy::Fixed { .. } => 0,
        }
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
    /// Timeslot grants (`return.dama`); `None`: frames back to back.
    dama: Option<Dama>,
    /// The granted slot the next burst waits for (DAMA).
    slot_wait_ns: Option<u64>,
    /// A terminal of a beam (`beam.rs`): frames start only when the beam's carrier grants one.
    gated: bool,
    /// A terminal of a return beam (`return_beam.rs`): the beam ticks the superframes and its
    /// controller grants the slots ([`Scheduler::dama_request`], [`Scheduler::dama_grant`]).
    pooled: bool,
    /// `kind: dvbs2_waveform`: each frame is also written as real GSE bytes (`gse.rs`), the data
    /// field of the frame on the air, for the decoder (`frame_channel.rs`).
    writer: Option<GseWriter>,
    data_field: Result<Vec<u8>, GseError>,
}

impl Scheduler {
    pub(crate) fn new(phy: Phy, dama: Option<Dama>, gse_label_bytes: u8) -> Self {
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
            dama,
            slot_wait_ns: None,
            gated: false,
            pooled: false,
            writer: None,
            data_field: Ok(Vec::new()),
        }
    }

    /// Writes every frame's GSE packets as bytes ([`Scheduler::take_data_field`]).
    pub(crate) fn write_gse(&mut self) {
        self.writer = Some(GseWriter::new(self.gse));
    }

    /// The data field of the frame that ended (with [`Scheduler::write_gse`]; empty otherwise),
    /// or why its GSE packets could not be written.
    pub(crate) fn take_data_field(&mut self) -> Result<Vec<u8>, GseError> {
        std::mem::replace(&mut self.data_field, Ok(Vec::new()))
    }

    /// The superframes are ticked by a return beam's shared controller, not by this timer.
    pub(crate) fn pool_dama(&mut self) {
        self.pooled = true;
    }

    /// Frames start only through [`Scheduler::start_frame`], called by the beam's carrier. A
    /// terminal's buffers grow as it gets data (most terminals of a big beam are idle).
    pub(crate) fn gate(&mut self) {
        self.gated = true;
        self.completes.shrink_to_fit();
    }

    /// Whether data waits for a frame (a queued packet or a partly sent one).
    pub(crate) fn has_data(&self, queue: &Queue) -> bool {
        self.partial.is_some() || !queue.is_empty()
    }

    /// A packet of `len` bytes was queued at `now_ns`: an idle link starts a frame at once (with
    /// DAMA: in the next granted slot).
    pub(crate) fn packet_queued(
        &mut self,
        now_ns: u64,
        len: usize,
        queue: &mut Queue,
        channel: &Channel,
    ) {
        if let Some(d) = self.dama.as_mut() {
            d.arrived(len);
        }
        if self.gated {
            return;
        }
        if self.frame.is_none() && self.slot_wait_ns.is_none() {
            self.carry_ns = 0.0;
            self.start_or_wait(now_ns.max(self.link_free_ns), queue, channel);
        }
    }

    /// Starts a frame at `t_ns`, or with DAMA at the first granted slot from `t_ns` on (a timer
    /// if it is later; none left in this superframe: the next superframe's tick retries).
    fn start_or_wait(&mut self, t_ns: u64, queue: &mut Queue, channel: &Channel) {
        match self.dama.as_mut().map(|d| d.take_slot(t_ns)) {
            None => {
                self.start_frame(t_ns, queue, channel);
            }
            Some(Some(slot)) if slot <= t_ns => {
                self.start_frame(t_ns, queue, channel);
            }
            Some(Some(slot)) => self.slot_wait_ns = Some(slot),
            Some(None) => {}
        }
    }

    /// The scheduler's next timer (DAMA only): a granted slot a burst waits for, or the next
    /// superframe's start.
    pub(crate) fn next_timer_ns(&self) -> Option<u64> {
        let tick = self
            .dama
            .as_ref()
            .filter(|_| !self.pooled)
            .map(Dama::next_tick_ns);
        [self.slot_wait_ns, tick].into_iter().flatten().min()
    }

    /// Runs the timer due at `t_ns` ([`Scheduler::next_timer_ns`]): a burst starts in its slot,
    /// or a superframe starts (requests, grant) and a waiting burst takes a slot of it.
    pub(crate) fn timer(&mut self, t_ns: u64, queue: &mut Queue, channel: &Channel) {
        if let Some(slot) = self.slot_wait_ns.filter(|&s| s <= t_ns) {
            self.slot_wait_ns = None;
            self.start_frame(slot, queue, channel);
            return;
        }
        let backlog = self.backlog_bytes(queue);
        let slot_bytes = self.phy.current_data_bytes();
        let Some(d) = self.dama.as_mut().filter(|_| !self.pooled) else {
            return;
        };
        if d.next_tick_ns() > t_ns {
            return;
        }
        let tick = d.next_tick_ns();
        d.tick(backlog, slot_bytes);
        self.superframe_started(tick, queue, channel);
    }

    fn backlog_bytes(&self, queue: &Queue) -> u64 {
        queue.bytes() + self.partial.as_ref().map_or(0, |p| u64::from(p.remaining))
    }

    /// A superframe's grant is in, at `tick`: a waiting burst takes its first slot.
    fn superframe_started(&mut self, tick: u64, queue: &mut Queue, channel: &Channel) {
        let waiting = self.partial.is_some() || !queue.is_empty();
        if self.frame.is_none() && self.slot_wait_ns.is_none() && waiting {
            self.start_or_wait(tick.max(self.link_free_ns), queue, channel);
        }
    }

    /// A return beam's terminal (pooled DAMA) at the start of a superframe: its requests, and
    /// what it may be granted.
    pub(crate) fn dama_request(&mut self, queue: &Queue) -> Demand {
        let backlog = self.backlog_bytes(queue);
        let slot_bytes = self.phy.current_data_bytes();
        let d = self
            .dama
            .as_mut()
            .expect("a return beam's terminal has dama");
        d.request(backlog, slot_bytes)
    }

    /// A return beam's terminal: the controller's grant for the superframe that started at
    /// `tick`.
    pub(crate) fn dama_grant(&mut self, tick: u64, g: Grant, queue: &mut Queue, channel: &Channel) {
        let d = self
            .dama
            .as_mut()
            .expect("a return beam's terminal has dama");
        d.set_grant(g);
        self.superframe_started(tick, queue, channel);
    }

    /// The DAMA stage (a return beam's controller reads its settings).
    pub(crate) fn dama(&self) -> Option<&Dama> {
        self.dama.as_ref()
    }

    /// The terminal's DAMA requests and grant in the current superframe.
    pub(crate) fn dama_status(&self) -> Option<Box<DamaStatus>> {
        self.dama.as_ref().map(|d| Box::new(d.status()))
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
        if self.gated {
            return;
        }
        if self.partial.is_some() || !queue.is_empty() {
            self.start_or_wait(f.end_ns, queue, channel);
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

    /// The frame on the air.
    pub(crate) fn on_air(&self) -> Option<InFlight> {
        self.frame
    }

    /// The MODCOD row the ACM loop gives the next frame (0 on a fixed-rate link).
    pub(crate) fn current_modcod(&self) -> usize {
        match &self.phy {
            Phy::Modcod { acm, .. } => acm.current(),
            Phy::Fixed { .. } => 0,
        }
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

    /// Puts a piece of another terminal's frame on the air (a beam's mixed frames): this
    /// terminal's packets in the `room` bytes left in a frame at MODCOD row `modcod` that started
    /// at `t_ns` and ends at `end_ns`. Returns the GSE bytes it took (none: no piece, and no
    /// frame on the air for this terminal).
    pub(crate) fn start_piece(
        &mut self,
        t_ns: u64,
        end_ns: u64,
        modcod: usize,
        room: u32,
        queue: &mut Queue,
    ) -> u32 {
        let packed = framing::pack(
            self.gse,
            room,
            &mut self.partial,
            &mut queue.at(t_ns),
            &mut self.completes,
        );
        if packed.gse_bytes == 0 {
            return 0;
        }
        self.gse_bytes_sent += packed.gse_bytes as u64;
        self.link_free_ns = end_ns;
        self.frame = Some(InFlight {
            end_ns,
            modcod,
            partial_touched: packed.partial_touched,
        });
        packed.gse_bytes
    }

    /// The Es/N0 MODCOD row `row` needs, dB (a fixed-rate link: none needed).
    pub(crate) fn required_esn0_db(&self, row: usize) -> f64 {
        match &self.phy {
            Phy::Modcod { table, .. } => table.rows[row].esn0_db,
            Phy::Fixed { .. } => f64::NEG_INFINITY,
        }
    }

    /// Puts the next frame on the air at `t_ns`: packs it (or takes one packet on a fixed-rate
    /// link) and computes its end. Returns the bytes of the frame left as padding.
    pub(crate) fn start_frame(&mut self, t_ns: u64, queue: &mut Queue, channel: &Channel) -> u32 {
        let (dur_ns, modcod, packed, room) = match &mut self.phy {
            Phy::Modcod {
                shapes,
                symbol_rate_baud,
                acm,
                ..
            } => {
                acm.update(t_ns, channel);
                let m = acm.next_frame_modcod();
                let shape = shapes[m].expect("usable MODCOD");
                let mut q = queue.at(t_ns);
                let packed = match &mut self.writer {
                    // Same packing decisions, plus the bytes (gse.rs).
                    Some(w) => {
                        let (packed, df) = w.frame(
                            shape.data_bytes,
                            &mut self.partial,
                            &mut q,
                            &mut self.completes,
                        );
                        self.data_field = df;
                        packed
                    }
                    None => framing::pack(
                        self.gse,
                        shape.data_bytes,
                        &mut self.partial,
                        &mut q,
                        &mut self.completes,
                    ),
                };
                let left = shape.data_bytes - packed.gse_bytes;
                (
                    shape.symbols as f64 * 1e9 / *symbol_rate_baud,
                    m,
                    packed,
                    left,
                )
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
                    0,
                )
            }
        };
        // Bursts in DAMA slots are not back to back: no carry between them.
        let dur = dur_ns
            + if self.dama.is_some() {
                0.0
            } else {
                self.carry_ns
            };
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
        room
    }
}
