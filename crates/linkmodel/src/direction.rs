//! One direction of the link: queue -> link scheduler -> channel -> delay line.
//!
//! Scheduler: frames (BBFrames, RCS2 bursts, or single packets on a fixed-rate link) are sent
//! back to back while there is data, so a saturated link carries exactly the MODCOD's useful
//! rate. When the queue empties the link idles; a packet arriving at an idle link starts a frame
//! at once (the rest of the frame is padding), so an idle link adds one frame time, not a fill
//! timeout. A frame's content is fixed when it starts; its MODCOD is the ACM loop's choice at
//! that instant. Frame durations are symbols / symbol rate, accumulated with a fractional-ns carry
//! while frames are back to back, so the long-run rate is exact.
//!
//! Channel: when a frame ends, it is judged once against the Es/N0 at the time it reaches the
//! receiver (frame end + propagation delay): erased with probability PER(MODCOD, Es/N0). Every
//! packet whose last piece is in an erased frame, or one of whose fragments was in an erased
//! frame, is lost (FrameErasure). Packets that survive go through the bit-error stage (with
//! `oracle_eten` configured, a hit carries the TCP segment key read before the flips).
//!
//! Delay line: a packet leaves at the end of the last frame carrying it + the one-way delay at
//! that time (+ reordering offset if configured). Lost packets (erasure, corruption drop) come
//! out of the delay line as `Outcome::Lost` at that same time (where the receiver notices them);
//! queue drops come out at the next poll.

use crate::acm::{AcmLoop, Mode};
use crate::cn::Channel;
use crate::config::{AcmMode, ConfigError, CorruptionAction, EmulatorConfig, LinkKind};
use crate::control::ControlCommand;
use crate::delay::DelaySource;
use crate::delay_line::DelayLine;
use crate::errors::BitErrors;
use crate::framing::{self, Gse, Partial};
use crate::modcod::{dvbs2_shape, rcs2_shape, FrameShape, ModcodTable};
use crate::per::{self, PerCurve};
use crate::queue::Queue;
use crate::reorder::Reorder;
use crate::rng::{Rng, Stream};
use crate::segment;
use crate::types::{Counters, Dir, DirectionStatus, Hit, LossCause, ModcodStatus, Outcome};

/// Frames with fewer data bytes than this are not used (no room for GSE headers and data).
const MIN_FRAME_DATA_BYTES: u32 = 16;

/// The physical layer of a direction (one per direction: the size difference does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
enum Phy {
    /// DVB-S2 or RCS2: MODCOD table, frame shapes and PER curves per row, ACM loop.
    Modcod {
        table: ModcodTable,
        shapes: Vec<Option<FrameShape>>,
        curves: Vec<PerCurve>,
        symbol_rate_baud: f64,
        acm: AcmLoop,
    },
    /// Fixed bit rate, one packet at a time, no erasures.
    Fixed { rate_bps: f64 },
}

/// Everything built from the configuration of one direction, except random streams and the
/// bit-error record file. Building it validates cross-field settings and loads every file.
#[derive(Debug)]
pub(crate) struct LinkSetup {
    phy: Phy,
    channel: Channel,
    delay: DelaySource,
    bit_errors: BitErrors,
}

impl LinkSetup {
    pub(crate) fn build(cfg: &EmulatorConfig, dir: Dir) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        let p = dir.as_str();
        let channel = Channel::from_config(&d.uplink, &d.downlink, p)?;
        let delay = DelaySource::from_config(cfg, d)?;
        let kind = d.link_kind();
        let phy = match kind {
            LinkKind::Fixed => Phy::Fixed {
                rate_bps: d.rate_bps.ok_or_else(|| {
                    ConfigError::field(format!("{p}.rate_bps"), "required when kind is fixed")
                })?,
            },
            LinkKind::Dvbs2 | LinkKind::Rcs2 => {
                let table = match &d.modcod_table {
                    Some(path) => ModcodTable::load(path)?,
                    None if kind == LinkKind::Dvbs2 => ModcodTable::dvbs2_default(),
                    None => ModcodTable::rcs2_default(),
                };
                let shapes: Vec<Option<FrameShape>> = table
                    .rows
                    .iter()
                    .map(|m| {
                        let s = if kind == LinkKind::Dvbs2 {
                            dvbs2_shape(m, d.frame, d.pilots)
                        } else {
                            rcs2_shape(m, d.burst_symbols)
                        };
                        s.filter(|s| s.data_bytes >= MIN_FRAME_DATA_BYTES)
                    })
                    .collect();
                let file_curves = match &d.per_table {
                    Some(path) => Some(per::load(path)?),
                    None => None,
                };
                let curves = table
                    .rows
                    .iter()
                    .map(|m| {
                        file_curves
                            .as_ref()
                            .and_then(|c| c.get(&m.id).cloned())
                            .unwrap_or_else(|| PerCurve::waterfall(m.esn0_db, d.waterfall_width_db))
                    })
                    .collect();
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
                let check_id = |field: String, id: u32| -> Result<usize, ConfigError> {
                    let i = table.index_of(id).ok_or_else(|| {
                        let ids: Vec<String> =
                            table.rows.iter().map(|r| r.id.to_string()).collect();
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
                };
                let mode = match d.acm.mode {
                    AcmMode::Acm => Mode::Acm,
                    AcmMode::Ccm => Mode::Ccm(check_id(
                        format!("{p}.acm.modcod"),
                        d.acm.modcod.ok_or_else(|| {
                            ConfigError::field(
                                format!("{p}.acm.modcod"),
                                "required when acm.mode is ccm",
                            )
                        })?,
                    )?),
                    AcmMode::Vcm => {
                        let mut cycle = Vec::with_capacity(d.acm.vcm_modcods.len());
                        for (k, id) in d.acm.vcm_modcods.iter().enumerate() {
                            cycle.push(check_id(format!("{p}.acm.vcm_modcods[{k}]"), *id)?);
                        }
                        Mode::Vcm { cycle, pos: 0 }
                    }
                };
                let feedback = DelaySource::from_config(cfg, cfg.direction(dir.opposite()))?;
                let acm = AcmLoop::new(
                    mode,
                    usable,
                    d.acm.refresh_ms,
                    d.acm.margin_db,
                    d.acm.hysteresis_db,
                    feedback,
                    &channel,
                );
                Phy::Modcod {
                    table,
                    shapes,
                    curves,
                    symbol_rate_baud: d.symbol_rate_baud.unwrap_or(40e6),
                    acm,
                }
            }
        };
        let bit_errors = BitErrors::build(
            &d.bit_errors,
            Rng::derive(cfg.seed, dir, Stream::BitErrors),
            &format!("{p}.bit_errors"),
        )?;
        Ok(LinkSetup {
            phy,
            channel,
            delay,
            bit_errors,
        })
    }
}

/// The frame on the air.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    end_ns: u64,
    /// MODCOD row index (unused for a fixed-rate link).
    modcod: usize,
    partial_touched: bool,
}

/// One direction of the emulated link. See the module documentation.
#[derive(Debug)]
pub struct Direction {
    dir: Dir,
    phy: Phy,
    channel: Channel,
    delay: DelaySource,
    queue: Queue,
    gse: Gse,
    partial: Option<Partial>,
    frame: Option<InFlight>,
    /// Packets whose last piece is in the frame on the air (reused buffer).
    completes: Vec<(Vec<u8>, bool)>,
    carry_ns: f64,
    /// End of the last frame sent: an idle link never starts a frame before it (guards against
    /// a caller's `now_ns` going slightly backwards).
    link_free_ns: u64,
    erasure_rng: Rng,
    bit_errors: BitErrors,
    action: CorruptionAction,
    /// Read each packet's TCP segment key before the bit-error stage (Oracle ETEN on).
    keep_segment_keys: bool,
    reorder: Option<Reorder>,
    line: DelayLine,
    /// Queue drops waiting for the next poll.
    ready: Vec<Outcome>,
    ready_since: u64,
    /// Model delivery times of the outcomes the last `poll` took from the delay line.
    popped_due: Vec<u64>,
    /// Model delivery times of the packets the last `poll` delivered, in order.
    delivered_due: Vec<u64>,
    counters: Counters,
    /// GSE bytes (headers + data) sent so far, for rate checks.
    gse_bytes_sent: u64,
    frames_sent: u64,
}

impl Direction {
    /// Builds direction `dir` of a validated configuration; random streams derive from
    /// `cfg.seed` and `dir`. Opens the bit-error record file if one is configured.
    pub fn new(cfg: &EmulatorConfig, dir: Dir) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        let LinkSetup {
            phy,
            channel,
            delay,
            mut bit_errors,
        } = LinkSetup::build(cfg, dir)?;
        if let Some(path) = &d.bit_errors.record_file {
            bit_errors.open_recorder(path)?;
        }
        Ok(Direction {
            dir,
            phy,
            channel,
            delay,
            queue: Queue::new(d.queue.limit_packets, d.queue.limit_bytes),
            gse: Gse {
                label_bytes: d.gse_label_bytes as u32,
            },
            partial: None,
            frame: None,
            completes: Vec::with_capacity(64),
            carry_ns: 0.0,
            link_free_ns: 0,
            erasure_rng: Rng::derive(cfg.seed, dir, Stream::Erasure),
            bit_errors,
            action: d.bit_errors.action,
            keep_segment_keys: d.oracle_eten.is_some(),
            reorder: Reorder::new(&d.reorder, Rng::derive(cfg.seed, dir, Stream::Reorder)),
            line: DelayLine::new(),
            ready: Vec::new(),
            ready_since: 0,
            popped_due: Vec::new(),
            delivered_due: Vec::new(),
            counters: Counters::default(),
            gse_bytes_sent: 0,
            frames_sent: 0,
        })
    }

    /// A packet (a whole Ethernet frame) offered at `now_ns`. Dropped (reported by the next
    /// poll) when the queue is full.
    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        self.advance(now_ns);
        self.counters.offered_packets += 1;
        if let Err(frame) = self.queue.push(frame) {
            self.counters.queue_drops += 1;
            if self.ready.is_empty() {
                self.ready_since = now_ns;
            }
            self.ready.push(Outcome::Lost {
                frame,
                cause: LossCause::QueueDrop,
            });
            return;
        }
        if self.frame.is_none() {
            self.carry_ns = 0.0;
            self.start_frame(now_ns.max(self.link_free_ns));
        }
    }

    /// Advances the model to `now_ns` and appends every outcome whose time has come.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        self.advance(now_ns);
        if let Phy::Modcod { acm, .. } = &mut self.phy {
            acm.update(now_ns, &self.channel);
        }
        out.append(&mut self.ready);
        let first = out.len();
        self.popped_due.clear();
        self.delivered_due.clear();
        self.line.pop_due(now_ns, out, &mut self.popped_due);
        for (o, &due) in out[first..].iter().zip(&self.popped_due) {
            if let Outcome::Deliver { frame, .. } = o {
                self.delivered_due.push(due);
                self.counters.delivered_packets += 1;
                self.counters.delivered_bytes += frame.len() as u64;
            }
        }
    }

    /// The model's delivery time of each packet the last `poll` delivered, in the order of its
    /// `Deliver` outcomes (the data plane measures how late it released them).
    pub fn delivered_due_ns(&self) -> &[u64] {
        &self.delivered_due
    }

    /// Earliest time at which `poll` would produce something or the model must act (frame end,
    /// delivery, ACM report arrival).
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut consider = |x: Option<u64>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if !self.ready.is_empty() {
            consider(Some(self.ready_since));
        }
        consider(self.frame.map(|f| f.end_ns));
        consider(self.line.next_time());
        if let Phy::Modcod { acm, .. } = &self.phy {
            consider(acm.next_report_arrival_ns());
        }
        t
    }

    /// Earliest time at which `poll` could hand out an outcome or the ACM must act: like
    /// [`Direction::next_wakeup_ns`], but the frame on the air counts only by the earliest time
    /// one of its packets could come out (its end plus the delay then, or its end when reordering
    /// may pull packets forward). Frame ends themselves need no wake-up: `enqueue` and `poll`
    /// replay them in order, so a caller that polls at these times (and reads its input before
    /// each poll) gets exactly the same outcomes with fewer wake-ups.
    pub fn next_due_ns(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut consider = |x: Option<u64>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if !self.ready.is_empty() {
            consider(Some(self.ready_since));
        }
        consider(self.frame.map(|f| {
            if self.reorder.is_some() {
                f.end_ns
            } else {
                f.end_ns.saturating_add(self.delay.at(f.end_ns))
            }
        }));
        consider(self.line.next_time());
        if let Phy::Modcod { acm, .. } = &self.phy {
            consider(acm.next_report_arrival_ns());
        }
        t
    }

    /// A lower bound of the time between a packet's arrival and the earliest outcome it can
    /// cause (the fixed one-way delay; 0 when the delay varies or reordering is on). A caller may
    /// leave input unread this long without any packet's outcome coming late.
    pub fn input_slack_ns(&self) -> u64 {
        match (&self.delay, &self.reorder) {
            (DelaySource::Fixed { ns }, None) => *ns,
            _ => 0,
        }
    }

    /// Status at `now_ns` (call `poll` first to bring the model up to date).
    pub fn status(&self, now_ns: u64) -> DirectionStatus {
        let (modcod, useful_rate_bps) = match &self.phy {
            Phy::Modcod {
                table,
                shapes,
                symbol_rate_baud,
                acm,
                ..
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
        };
        let (a_up, a_down) = self.channel.attenuation_db(now_ns);
        DirectionStatus {
            direction: self.dir,
            modcod,
            esn0_db: self.channel.esn0_db(now_ns),
            attenuation_db: a_up + a_down,
            useful_rate_bps,
            delay_ms: self.delay.at(now_ns) as f64 / 1e6,
            ber: self.bit_errors.mean_ber(),
            queue_packets: self.queue.len() as u64,
            queue_bytes: self.queue.bytes(),
            counters: self.counters.clone(),
        }
    }

    /// Live change at `now_ns`. Every field is checked before anything changes; an error names
    /// the field, the value and the limit.
    pub fn control(&mut self, now_ns: u64, cmd: &ControlCommand) -> Result<(), ConfigError> {
        cmd.validate()?;
        self.advance(now_ns);
        if cmd.resume_trace {
            self.channel.clear_override();
        }
        if let Some(a) = cmd.attenuation_db {
            self.channel.set_override(now_ns, a);
        }
        if let Some(b) = cmd.ber {
            self.bit_errors.set_uniform(b);
        }
        if let Some(d) = cmd.delay_ms {
            self.delay = DelaySource::fixed_ms(d);
        }
        Ok(())
    }

    /// GSE bytes (headers + data, no padding) and frames sent so far (rate checks, benchmarks).
    pub fn link_totals(&self) -> (u64, u64) {
        (self.gse_bytes_sent, self.frames_sent)
    }

    /// Packets in the delay line (in flight).
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    // -----------------------------------------------------------------------------------------

    /// Processes every frame end up to `now_ns`, starting the next frame back to back.
    fn advance(&mut self, now_ns: u64) {
        while let Some(f) = self.frame {
            if f.end_ns > now_ns {
                break;
            }
            self.frame = None;
            self.finish_frame(f);
            if self.partial.is_some() || !self.queue.is_empty() {
                self.start_frame(f.end_ns);
            }
        }
    }

    fn start_frame(&mut self, t_ns: u64) {
        let (dur_ns, modcod, packed) = match &mut self.phy {
            Phy::Modcod {
                shapes,
                symbol_rate_baud,
                acm,
                ..
            } => {
                acm.update(t_ns, &self.channel);
                let m = acm.next_frame_modcod();
                let shape = shapes[m].expect("usable MODCOD");
                let packed = framing::pack(
                    self.gse,
                    shape.data_bytes,
                    &mut self.partial,
                    &mut self.queue,
                    &mut self.completes,
                );
                (shape.symbols as f64 * 1e9 / *symbol_rate_baud, m, packed)
            }
            Phy::Fixed { rate_bps } => {
                let p = self.queue.pop().expect("start_frame with data");
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

    fn finish_frame(&mut self, f: InFlight) {
        let base = f.end_ns + self.delay.at(f.end_ns);
        let erased = match &self.phy {
            Phy::Modcod { curves, .. } => {
                let esn0 = self.channel.esn0_db(base);
                self.erasure_rng.bernoulli(curves[f.modcod].per(esn0))
            }
            Phy::Fixed { .. } => false,
        };
        if erased {
            self.counters.frame_erasures += 1;
            if f.partial_touched {
                if let Some(p) = self.partial.as_mut() {
                    p.erased = true;
                }
            }
        }
        let mut completes = std::mem::take(&mut self.completes);
        for (mut pkt, prior_erased) in completes.drain(..) {
            if erased || prior_erased {
                self.counters.erased_packets += 1;
                self.line.push(
                    base,
                    None,
                    f.end_ns,
                    Outcome::Lost {
                        frame: pkt,
                        cause: LossCause::FrameErasure,
                    },
                );
                continue;
            }
            let hit = if self.bit_errors.is_off() {
                None
            } else if self.keep_segment_keys {
                // The oracle names the segment as it was sent, whatever bits the channel flips.
                let key = segment::tcp_data_key(&pkt);
                self.bit_errors
                    .apply(&mut pkt)
                    .map(|h| Hit { segment: key, ..h })
            } else {
                self.bit_errors.apply(&mut pkt)
            };
            let outcome = match hit {
                Some(h) => {
                    self.counters.corrupted_packets += 1;
                    match self.action {
                        CorruptionAction::Deliver => Outcome::Deliver {
                            frame: pkt,
                            corrupted: Some(h),
                        },
                        CorruptionAction::Drop => Outcome::Lost {
                            frame: pkt,
                            cause: LossCause::Corruption(h),
                        },
                    }
                }
                None => Outcome::Deliver {
                    frame: pkt,
                    corrupted: None,
                },
            };
            let offset = match (&mut self.reorder, &outcome) {
                (Some(r), Outcome::Deliver { .. }) => Some(r.offset_ns()),
                _ => None,
            };
            if self.line.push(base, offset, f.end_ns, outcome) {
                self.counters.reordered_packets += 1;
            }
        }
        self.completes = completes;
    }
}
