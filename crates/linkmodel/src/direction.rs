//! One direction of the link: the pipeline of its stages, in packet order.
//!
//! ```text
//! enqueue -> queue.rs       drop-tail queue, or per-class queues (classes.rs: DSCP / flow
//!                           rules, strict priority + DRR); a packet that does not fit is a
//!                           QueueDrop
//!         -> scheduler.rs   frames on the air: BBFrames / RCS2 bursts packed with GSE
//!                           (framing.rs; MODCOD from the ACM loop, acm.rs), or one packet at a
//!                           time on a fixed-rate link
//!         -> erasure.rs     the channel's verdict on each ended frame: erased with
//!                           PER(MODCOD, Es/N0) (channel.rs, per.rs); its packets are lost
//!                           (near the threshold, with `failed_frames`: delivered through a
//!                           second, uniform bit-error stage instead)
//!            or frame_channel.rs  `kind: dvbs2_waveform`: the frame's real bytes through a
//!                           decoder at Es/N0 (gse.rs); what parses intact is delivered, with
//!                           the decoder's residual bit errors
//!         -> bit_errors.rs  bit errors on the packets that survive; delivered, delivered
//!                           corrupted or lost per `bit_errors.action`
//!         -> reorder.rs     optional extra delay per delivered packet (overtaking)
//!         -> delay_line.rs  held until their time -> poll
//! ```
//!
//! [`Direction`] owns one of each, and the two conditions they read as functions of time: the
//! channel's Es/N0 (`channel.rs`) and the propagation delay (`delay.rs`). Time moves only in
//! `enqueue`, `poll` and `control`, which first replay every frame end up to `now_ns` in order:
//! when a frame ends, its packets go through erasure, bit errors and reordering into the delay
//! line, then the next frame starts back to back if data waits.
//!
//! Times: a frame is judged against the Es/N0 at the time it reaches the receiver (frame end +
//! propagation delay). A packet leaves at the end of the last frame carrying it + the one-way
//! delay at that time (+ reordering offset if configured). Lost packets (erasure, corruption drop)
//! come out of the delay line as `Outcome::Lost` at that same time (where the receiver notices
//! them); queue drops come out at the next poll.

use crate::bit_errors::{self, BitErrors};
use crate::channel::Channel;
use crate::config::{
    BitErrorConfig, BitErrorModel, ConfigError, CorruptionAction, LinkConfig, LinkKind,
};
use crate::control::ControlCommand;
use crate::dama::{Dama, Demand, Grant};
use crate::delay::DelaySource;
use crate::delay_line::DelayLine;
use crate::erasure::{self, Erasure, Verdict};
use crate::frame_channel::{FrameChannel, Received, WaveformReceiver};
use crate::gse;
use crate::modcod::dvbs2_shape;
use crate::per::PerCurve;
use crate::queue::Queue;
use crate::reorder::Reorder;
use crate::rng::{Rng, Stream};
use crate::scheduler::{self, InFlight, Phy, Scheduler};
use crate::types::{Counters, Dir, DirectionStatus, Hit, HitRegion, LossCause, Outcome};

/// What the configuration of one direction builds and may refuse: the channel, the delay, the
/// physical layer with its ACM loop, the PER curves and the bit-error model. Building it
/// validates cross-field settings and loads every file; it opens no file for writing (the
/// bit-error record file is opened by [`Direction::new`]).
#[derive(Debug)]
pub(crate) struct LinkSetup {
    channel: Channel,
    delay: DelaySource,
    phy: Phy,
    /// Timeslot grants of an RCS2 return link with `dama`.
    dama: Option<Dama>,
    /// PER curve per MODCOD row (empty on a fixed-rate link).
    curves: Vec<PerCurve>,
    /// Per MODCOD row, the Es/N0 down to which a failed frame is corrupted, not erased.
    corrupt_floors: Vec<f64>,
    bit_errors: BitErrors,
    /// The bit errors of corrupted frames (`failed_frames`).
    residual: Option<BitErrors>,
    /// `kind: dvbs2_waveform`: per MODCOD row, the DVB-S2 MODCOD id and the BBFRAME length
    /// (K_bch / 8 bytes); `None` for a row the link cannot send.
    waveform_rows: Option<Vec<Option<(u32, usize)>>>,
}

impl LinkSetup {
    pub(crate) fn build(cfg: &LinkConfig, dir: Dir) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        let p = dir.as_str();
        let channel = Channel::from_config(&d.uplink, &d.downlink, p)?;
        let delay = DelaySource::from_config(cfg, d)?;
        let mut waveform_rows = None;
        let (phy, curves, corrupt_floors) = match d.link_kind() {
            LinkKind::Fixed => (Phy::fixed(d, p)?, Vec::new(), Vec::new()),
            LinkKind::Dvbs2 | LinkKind::Rcs2 | LinkKind::Dvbs2Waveform => {
                let table = scheduler::modcod_table(d)?;
                let curves = erasure::per_curves(&table, d)?;
                let floors = erasure::corrupt_floors(&table, d);
                if d.is_waveform() {
                    waveform_rows = Some(
                        table
                            .rows
                            .iter()
                            .map(|m| {
                                dvbs2_shape(m, d.frame, d.pilots)
                                    .map(|s| (m.id, s.data_bytes as usize + gse::BBHEADER_BYTES))
                            })
                            .collect(),
                    );
                }
                (Phy::modcod(cfg, dir, table, &channel)?, curves, floors)
            }
        };
        let bit_errors = BitErrors::build(
            &d.bit_errors,
            Rng::derive(cfg.seed, dir, Stream::BitErrors),
            &format!("{p}.bit_errors"),
        )?
        .with_segment_keys(d.oracle_eten.is_some());
        let residual = match &d.failed_frames {
            Some(f) => Some(
                BitErrors::build(
                    &BitErrorConfig {
                        model: BitErrorModel::Uniform,
                        ber: f.ber,
                        action: d.bit_errors.action,
                        ..BitErrorConfig::default()
                    },
                    Rng::derive(cfg.seed, dir, Stream::FailedFrames),
                    &format!("{p}.failed_frames"),
                )?
                .with_segment_keys(d.oracle_eten.is_some()),
            ),
            None => None,
        };
        let dama = phy.dama(cfg, dir)?;
        Ok(LinkSetup {
            channel,
            delay,
            phy,
            dama,
            curves,
            corrupt_floors,
            bit_errors,
            residual,
            waveform_rows,
        })
    }
}

/// The decoder side of a `kind: dvbs2_waveform` direction (frame_channel.rs).
#[derive(Debug)]
struct Waveform {
    rx: WaveformReceiver,
    /// Per MODCOD row: DVB-S2 MODCOD id and K_bch / 8 bytes.
    rows: Vec<Option<(u32, usize)>>,
    /// `bit_errors.action` for packets the decoder delivers with residual errors.
    action: CorruptionAction,
    /// Oracle ETEN: name the TCP segment a corrupted packet was.
    segment_keys: bool,
}

/// One direction of the emulated link. See the module documentation.
#[derive(Debug)]
pub struct Direction {
    dir: Dir,
    /// Es/N0 at the receiver over time (read by the ACM loop and the erasure stage).
    channel: Channel,
    /// One-way propagation delay over time.
    delay: DelaySource,
    // The stages, in packet order.
    queue: Queue,
    scheduler: Scheduler,
    erasure: Erasure,
    bit_errors: BitErrors,
    residual: Option<BitErrors>,
    /// `kind: dvbs2_waveform`: the decoder in place of the erasure stage.
    waveform: Option<Waveform>,
    reorder: Option<Reorder>,
    line: DelayLine,
    /// Queue drops waiting for the next poll, and the time of the first.
    queue_drops: Vec<Outcome>,
    drops_since: u64,
    /// Model delivery times of the outcomes the last `poll` took from the delay line.
    popped_due: Vec<u64>,
    /// Model delivery times of the packets the last `poll` delivered, in order.
    delivered_due: Vec<u64>,
    counters: Counters,
}

impl Direction {
    /// Builds direction `dir` of a validated configuration; random streams derive from
    /// `cfg.seed` and `dir`. Opens the bit-error record file if one is configured. A direction of
    /// `kind: dvbs2_waveform` needs its decoder: [`Direction::with_frame_channel`].
    pub fn new(cfg: &LinkConfig, dir: Dir) -> Result<Self, ConfigError> {
        if cfg.direction(dir).is_waveform() {
            return Err(ConfigError::field(
                format!("{}.kind", dir.as_str()),
                "dvbs2_waveform needs a frame channel (the emulator's DVB-S2 decoder)",
            ));
        }
        Self::build(cfg, dir, None)
    }

    /// Direction `dir` of `kind: dvbs2_waveform`: every frame's BBFRAME goes through `channel`
    /// when it ends, and its verdict replaces the PER draw.
    pub fn with_frame_channel(
        cfg: &LinkConfig,
        dir: Dir,
        channel: Box<dyn FrameChannel>,
    ) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        if !d.is_waveform() {
            return Err(ConfigError::field(
                format!("{}.kind", dir.as_str()),
                "a frame channel is only for kind dvbs2_waveform",
            ));
        }
        Self::build(cfg, dir, Some(WaveformReceiver::new(d.frame, channel)))
    }

    fn build(
        cfg: &LinkConfig,
        dir: Dir,
        rx: Option<WaveformReceiver>,
    ) -> Result<Self, ConfigError> {
        let d = cfg.direction(dir);
        let mut s = LinkSetup::build(cfg, dir)?;
        if let Some(path) = &d.bit_errors.record_file {
            s.bit_errors.open_recorder(path)?;
        }
        let mut scheduler = Scheduler::new(s.phy, s.dama, d.gse_label_bytes);
        let waveform = match (rx, s.waveform_rows) {
            (Some(rx), Some(rows)) => {
                scheduler.write_gse();
                Some(Waveform {
                    rx,
                    rows,
                    action: d.bit_errors.action,
                    segment_keys: d.oracle_eten.is_some(),
                })
            }
            _ => None,
        };
        Ok(Direction {
            dir,
            channel: s.channel,
            delay: s.delay,
            queue: Queue::from_config(&d.queue),
            scheduler,
            erasure: Erasure::new(
                s.curves,
                s.corrupt_floors,
                Rng::derive(cfg.seed, dir, Stream::Erasure),
            ),
            bit_errors: s.bit_errors,
            residual: s.residual,
            waveform,
            reorder: Reorder::new(&d.reorder, Rng::derive(cfg.seed, dir, Stream::Reorder)),
            line: DelayLine::new(),
            queue_drops: Vec::new(),
            drops_since: 0,
            popped_due: Vec::new(),
            delivered_due: Vec::new(),
            counters: Counters::default(),
        })
    }

    /// A packet (a whole Ethernet frame) offered at `now_ns`. Dropped (reported by the next
    /// poll) when the queue is full.
    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        self.advance(now_ns);
        self.counters.offered_packets += 1;
        let len = frame.len();
        if let Err(frame) = self.queue.push(now_ns, frame) {
            self.counters.queue_drops += 1;
            if self.queue_drops.is_empty() {
                self.drops_since = now_ns;
            }
            self.queue_drops.push(Outcome::Lost {
                frame,
                cause: LossCause::QueueDrop,
            });
            return;
        }
        self.scheduler
            .packet_queued(now_ns, len, &mut self.queue, &self.channel);
    }

    /// Advances the model to `now_ns` and appends every outcome whose time has come.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        self.advance(now_ns);
        self.scheduler.update_acm(now_ns, &self.channel);
        out.append(&mut self.queue_drops);
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
    /// delivery, ACM report arrival, DAMA slot or superframe).
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        earliest([
            self.first_drop_ns(),
            self.scheduler.frame_end_ns(),
            self.line.next_time(),
            self.scheduler.next_report_arrival_ns(),
            self.scheduler.next_timer_ns(),
        ])
    }

    /// Earliest time at which `poll` could hand out an outcome or the ACM must act: like
    /// [`Direction::next_wakeup_ns`], but the frame on the air counts only by the earliest time
    /// one of its packets could come out (its end plus the delay then, or its end when reordering
    /// may pull packets forward). Frame ends themselves need no wake-up: `enqueue` and `poll`
    /// replay them in order, so a caller that polls at these times (and reads its input before
    /// each poll) gets exactly the same outcomes with fewer wake-ups.
    pub fn next_due_ns(&self) -> Option<u64> {
        earliest([
            self.first_drop_ns(),
            self.frame_due_ns(),
            self.line.next_time(),
            self.scheduler.next_report_arrival_ns(),
            // DAMA: a burst starts in its slot, a superframe's grant frees a waiting burst.
            self.scheduler.next_timer_ns(),
        ])
    }

    /// The earliest time a packet of the frame on the air could come out: its end plus the delay
    /// then, or its end when reordering may pull packets forward.
    pub(crate) fn frame_due_ns(&self) -> Option<u64> {
        self.scheduler.frame_end_ns().map(|end| {
            if self.reorder.is_some() {
                end
            } else {
                end.saturating_add(self.delay.at(end))
            }
        })
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
        let (modcod, useful_rate_bps) = self.scheduler.modcod_status();
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
            classes: self.queue.class_status(),
            dama: self.scheduler.dama_status(),
            terminals: Vec::new(),
            carrier_useful_rate_bps: None,
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
        self.scheduler.totals()
    }

    /// Packets in the delay line (in flight).
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }

    // -----------------------------------------------------------------------------------------
    // A terminal of a beam (`beam.rs`): the beam's carrier starts its frames.

    /// Terminal link `cfg` (forward, from `BeamConfig::terminal_link`) whose frames start only
    /// when the beam grants one, its downlink attenuation read `shift_ns` late (a rain cell).
    pub(crate) fn terminal(cfg: &LinkConfig, shift_ns: u64) -> Result<Self, ConfigError> {
        let mut d = Direction::new(cfg, Dir::Forward)?;
        d.scheduler.gate();
        d.queue.release_reserve();
        d.channel.shift_downlink(shift_ns);
        Ok(d)
    }

    // A terminal of a return beam (`return_beam.rs`): the beam ticks its superframes and the
    // shared controller grants its slots.

    /// Return link `cfg` of one terminal, its DAMA pooled.
    pub(crate) fn pooled_terminal(cfg: &LinkConfig) -> Result<Self, ConfigError> {
        let mut d = Direction::new(cfg, Dir::Return)?;
        d.scheduler.pool_dama();
        d.queue.release_reserve();
        Ok(d)
    }

    /// The superframe starting at `tick_ns`: the terminal's requests, and what it may be granted.
    pub(crate) fn dama_request(&mut self, tick_ns: u64) -> Demand {
        self.advance(tick_ns);
        self.scheduler.update_acm(tick_ns, &self.channel);
        self.scheduler.dama_request(&self.queue)
    }

    /// The controller's grant `g` for the superframe that started at `tick_ns`.
    pub(crate) fn dama_grant(&mut self, tick_ns: u64, g: Grant) {
        self.scheduler
            .dama_grant(tick_ns, g, &mut self.queue, &self.channel);
    }

    /// The DAMA stage (its settings for the return beam).
    pub(crate) fn dama(&self) -> Option<&Dama> {
        self.scheduler.dama()
    }

    /// Whether data waits for a frame.
    pub(crate) fn has_data(&self) -> bool {
        self.scheduler.has_data(&self.queue)
    }

    /// Whether queue drops wait for the next poll.
    pub(crate) fn drops_pending(&self) -> bool {
        !self.queue_drops.is_empty()
    }

    /// Whether nothing is pending but ACM reports: no data, no frame on the air, nothing in the
    /// delay line, no drop to report.
    pub(crate) fn is_idle(&self) -> bool {
        !self.has_data()
            && self.scheduler.frame_end_ns().is_none()
            && self.line.is_empty()
            && self.queue_drops.is_empty()
    }

    /// The useful rate of the MODCOD the ACM loop would give a frame at `t_ns`, bit/s.
    pub(crate) fn rate_bps(&mut self, t_ns: u64) -> f64 {
        self.scheduler.update_acm(t_ns, &self.channel);
        self.scheduler.modcod_status().1
    }

    /// Puts this terminal's next frame on the carrier at `t_ns`; returns its end, its MODCOD
    /// row and the bytes left as padding.
    pub(crate) fn start_granted(&mut self, t_ns: u64) -> (u64, usize, u32) {
        let room = self
            .scheduler
            .start_frame(t_ns, &mut self.queue, &self.channel);
        let f = self.scheduler.on_air().expect("frame started");
        (f.end_ns, f.modcod, room)
    }

    /// Fills up to `room` bytes of another terminal's frame (MODCOD row `modcod`, from `t_ns` to
    /// `end_ns`) with this terminal's packets if it has data and can decode that MODCOD: its own
    /// MODCOD needs at least the Es/N0 `modcod` needs. Returns the bytes taken.
    pub(crate) fn take_piece(&mut self, t_ns: u64, end_ns: u64, modcod: usize, room: u32) -> u32 {
        self.scheduler.update_acm(t_ns, &self.channel);
        let own = self.scheduler.current_modcod();
        let s = &self.scheduler;
        if !self.has_data() || s.required_esn0_db(own) < s.required_esn0_db(modcod) {
            return 0;
        }
        self.scheduler
            .start_piece(t_ns, end_ns, modcod, room, &mut self.queue)
    }

    /// Replays every frame end and scheduler timer (DAMA) up to `now_ns` in time order: the ended
    /// frame's packets go down the pipeline, then the next frame starts back to back (with DAMA:
    /// in the next granted slot) if data waits.
    pub(crate) fn advance(&mut self, now_ns: u64) {
        loop {
            let end = self.scheduler.frame_end_ns().filter(|&e| e <= now_ns);
            let timer = self.scheduler.next_timer_ns().filter(|&t| t <= now_ns);
            match (end, timer) {
                (Some(e), t) if t.is_none_or(|t| e <= t) => {
                    let f = self.scheduler.take_ended(e).expect("frame ended");
                    self.frame_ended(&f);
                    self.scheduler.send_next(&f, &mut self.queue, &self.channel);
                }
                (_, Some(t)) => self.scheduler.timer(t, &mut self.queue, &self.channel),
                _ => break,
            }
        }
    }

    /// Frame `f` has ended: the erasure stage judges it, then each packet whose last piece it
    /// carried goes through the bit-error stage (that of failed frames for a corrupted one) and
    /// reordering into the delay line, due when the frame reaches the receiver.
    fn frame_ended(&mut self, f: &InFlight) {
        let arrival_ns = f.end_ns + self.delay.at(f.end_ns);
        if self.waveform.is_some() {
            self.decoded_frame_ended(f, arrival_ns);
            return;
        }
        let verdict = self.erasure.judge(f.modcod, &self.channel, arrival_ns);
        let erased = verdict == Verdict::Erased;
        if erased {
            self.counters.frame_erasures += 1;
        }
        if verdict != Verdict::Decoded {
            // A fragment in a failed frame: the reassembled packet fails GSE's CRC-32.
            self.scheduler.fragment_erased(f);
        }
        for (pkt, fragment_erased) in self.scheduler.completed() {
            if erased || fragment_erased {
                lost_to_erasure(&mut self.counters, &mut self.line, pkt, arrival_ns, f);
                continue;
            }
            let outcome = match (&mut self.residual, verdict) {
                (Some(r), Verdict::Corrupted) => r.pass(pkt),
                _ => self.bit_errors.pass(pkt),
            };
            let stages = (&mut self.counters, &mut self.reorder, &mut self.line);
            survived(stages, arrival_ns, f.end_ns, outcome);
        }
    }

    /// `kind: dvbs2_waveform`: frame `f`'s BBFRAME goes through the decoder at the Es/N0 of its
    /// arrival (synchronously: the decode stalls this thread, absorbed by the delay line's
    /// propagation delay). A packet the receiver could not parse intact (erased frame, lost
    /// fragment, CRC-32) is lost; one delivered with the decoder's residual bit errors is
    /// corrupted (`bit_errors.action`); an intact one goes on through the bit-error stage.
    fn decoded_frame_ended(&mut self, f: &InFlight, arrival_ns: u64) {
        let esn0_db = self.channel.esn0_db(arrival_ns);
        let df = self.scheduler.take_data_field();
        let sent: Vec<(Vec<u8>, bool)> = self.scheduler.completed().collect();
        let w = self.waveform.as_mut().expect("a waveform direction");
        let (id, kbch_bytes) = w.rows[f.modcod].expect("frames use usable MODCODs");
        let got = match df {
            Ok(df) => {
                w.rx.receive(id, esn0_db, kbch_bytes, &df, sent.len())
                    // The decoder is gone (its flowgraph died): no verdict can stand in for it.
                    .unwrap_or_else(|e| panic!("{} kind dvbs2_waveform: {e}", self.dir.as_str()))
            }
            // A packet longer than GSE's 12-bit length: the frame cannot be written.
            Err(_) => {
                w.rx.frame_lost();
                Received {
                    erased: true,
                    delivered: vec![None; sent.len()],
                }
            }
        };
        let (action, segment_keys) = (w.action, w.segment_keys);
        if got.erased {
            self.counters.frame_erasures += 1;
        }
        for ((pkt, _), out) in sent.into_iter().zip(got.delivered) {
            let Some(bytes) = out else {
                lost_to_erasure(&mut self.counters, &mut self.line, pkt, arrival_ns, f);
                continue;
            };
            let outcome = match residual_hit(&pkt, &bytes) {
                None => self.bit_errors.pass(bytes),
                Some(mut hit) => {
                    if segment_keys {
                        hit.segment = crate::segment::tcp_data_key(&pkt);
                    }
                    match action {
                        CorruptionAction::Deliver => Outcome::Deliver {
                            frame: bytes,
                            corrupted: Some(hit),
                        },
                        CorruptionAction::Drop => Outcome::Lost {
                            frame: bytes,
                            cause: LossCause::Corruption(hit),
                        },
                    }
                }
            };
            let stages = (&mut self.counters, &mut self.reorder, &mut self.line);
            survived(stages, arrival_ns, f.end_ns, outcome);
        }
    }

    /// Time of the first queue drop waiting for the next poll.
    fn first_drop_ns(&self) -> Option<u64> {
        (!self.queue_drops.is_empty()).then_some(self.drops_since)
    }
}

/// A packet of an erased frame (or one whose fragment was erased): counted and put in the delay
/// line as lost, due when the frame would have reached the receiver.
fn lost_to_erasure(
    counters: &mut Counters,
    line: &mut DelayLine,
    pkt: Vec<u8>,
    arrival_ns: u64,
    f: &InFlight,
) {
    counters.erased_packets += 1;
    let lost = Outcome::Lost {
        frame: pkt,
        cause: LossCause::FrameErasure,
    };
    line.push(arrival_ns, None, f.end_ns, lost);
}

/// A packet that came through its frame's decoding (delivered, maybe corrupted, or lost to
/// corruption): counted, given its reordering offset and put in the delay line (the stages
/// after the frame's verdict, borrowed apart from the scheduler that yields the packets).
fn survived(
    (counters, reorder, line): (&mut Counters, &mut Option<Reorder>, &mut DelayLine),
    arrival_ns: u64,
    end_ns: u64,
    outcome: Outcome,
) {
    if is_corrupted(&outcome) {
        counters.corrupted_packets += 1;
    }
    let offset = match (reorder, &outcome) {
        (Some(r), Outcome::Deliver { .. }) => Some(r.offset_ns()),
        _ => None,
    };
    if line.push(arrival_ns, offset, end_ns, outcome) {
        counters.reordered_packets += 1;
    }
}

/// The decoder's residual errors in a packet, `sent` as it was sent and `got` as the receiver
/// parsed it: the bits that differ (a length that differs counts its missing bytes' bits) and
/// the most significant region hit, the Ethernet header counting as the IP header's; `None`
/// when the packet is intact.
fn residual_hit(sent: &[u8], got: &[u8]) -> Option<Hit> {
    let (ip_end, tr_end) = bit_errors::header_bounds(sent);
    let mut bits = 8 * sent.len().abs_diff(got.len()) as u32;
    let mut region = HitRegion::Payload;
    for (i, (a, b)) in sent.iter().zip(got).enumerate() {
        let d = (a ^ b).count_ones();
        if d == 0 {
            continue;
        }
        bits += d;
        if i < ip_end {
            region = HitRegion::IpHeader;
        } else if i < tr_end && region == HitRegion::Payload {
            region = HitRegion::TransportHeader;
        }
    }
    (bits > 0).then_some(Hit {
        where_: region,
        bits_flipped: bits,
        segment: None,
    })
}

/// Whether the bit-error stage hit the packet (delivered corrupted or lost to corruption).
fn is_corrupted(o: &Outcome) -> bool {
    matches!(
        o,
        Outcome::Deliver {
            corrupted: Some(_),
            ..
        } | Outcome::Lost {
            cause: LossCause::Corruption(_),
            ..
        }
    )
}

/// The earliest of the times given.
fn earliest<const N: usize>(times: [Option<u64>; N]) -> Option<u64> {
    times.into_iter().flatten().min()
}
