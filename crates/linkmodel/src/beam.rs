//! A forward beam: several terminals on one DVB-S2 carrier (`forward.beam`, `terminals.rs`).
//!
//! Each terminal is a whole pipeline ([`Direction`]: its queue, ACM loop on its own channel,
//! erasure and bit errors at its own Es/N0, delay line) whose scheduler is gated: the carrier
//! carries one BBFRAME at a time, and when it is free the frame scheduler picks the terminal
//! whose frame goes next ([`BeamPolicy`]); that frame has the terminal's MODCOD and its packets
//! (one MODCOD per frame, EN 302 307-1 section 5.1.6 ACM). With `mixed_frames` the room it leaves
//! goes to other terminals that can decode that MODCOD: each puts a piece (its packets, the
//! frame's MODCOD and end) in its own pipeline, so the frame's erasure is judged at each
//! receiver's Es/N0. Frames are back to back while any terminal has data. With VLANs
//! (`terminals[].vlan`) a terminal's delivered frames come out tagged with its VLAN ID.
//!
//! Time moves as in a [`Direction`]: `enqueue` and `poll` first replay every frame end up to
//! `now_ns` in order (the ended frame's packets go down its terminal's pipeline, then the next
//! frame starts).
//!
//! Cost at scale (up to 1000 terminals): a packet finds its terminal in a prefix table built
//! once (`prefix_table.rs`); the scheduler walks only the terminals with data (a bitset,
//! `terminal_set.rs`); `poll` polls only the terminals something is due at, from a heap of the
//! busy terminals' next due times (a busy terminal has data, a frame on the air, packets in its
//! delay line or a drop to report). An idle terminal has nothing due but its ACM reports: they
//! are applied when it next gets data, and to every idle terminal at most [`IDLE_SWEEP_NS`]
//! apart (so status shows its MODCOD) without waking the caller for them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::config::{ConfigError, LinkConfig, LinkKind};
use crate::control::ControlCommand;
use crate::direction::{Direction, LinkSetup};
use crate::prefix_table::{self, PrefixTable};
use crate::terminal_links;
use crate::terminal_set::TerminalSet;
use crate::terminals::{BeamConfig, BeamPolicy};
use crate::types::{Dir, DirectionStatus, Outcome};
use packet::ethernet::{ethertype, insert_vlan_tag, VlanTag};

/// Longest time between two polls of an idle terminal (its ACM reports applied, for status), ns:
/// well under any telemetry period, and 1000 idle terminals cost 100 polls per ms at most.
const IDLE_SWEEP_NS: u64 = 10_000_000;

/// Time constant of the carrier's useful rate (`carrier_useful_rate_bps`), ns of airtime: long
/// against a frame (0.1-10 ms) so a round over many terminals averages out, short against a rain
/// fade's MODCOD changes (seconds), and under a gateway's telemetry period.
const CARRIER_RATE_WINDOW_NS: f64 = 100e6;

/// Checks `forward.beam` (and that `return` has none): the terminals' fields, then each
/// terminal's link is built (its files loaded).
pub(crate) fn validate(cfg: &LinkConfig) -> Result<(), ConfigError> {
    if let Some(b) = &cfg.return_.beam {
        b.validate("return.beam")?;
        return Err(ConfigError::field(
            "return.beam",
            "a beam is the forward carrier's; the return link's terminals share it through dama",
        ));
    }
    let Some(b) = &cfg.forward.beam else {
        return Ok(());
    };
    if cfg.forward.link_kind() != LinkKind::Dvbs2 {
        return Err(ConfigError::field(
            "forward.beam",
            "needs a dvbs2 forward link (kind: dvbs2)",
        ));
    }
    if cfg.forward.bit_errors.record_file.is_some() {
        return Err(ConfigError::field(
            "forward.bit_errors.record_file",
            "not with forward.beam (one record file per terminal is not supported)",
        ));
    }
    b.validate("forward.beam")?;
    for k in 0..b.terminals.len() {
        let (link, _) = b.terminal_link(cfg, k);
        link.forward
            .validate(&format!("forward.beam.terminals[{k}]"))?;
        LinkSetup::build(&link, Dir::Forward)?;
    }
    Ok(())
}

/// One terminal of the beam.
#[derive(Debug)]
struct Terminal {
    name: String,
    weight: f64,
    link: Direction,
    /// `proportional_fair`: exponential time average of the rate the carrier served it, bit/s,
    /// as of airtime `avg_at_ns` (it decays lazily: see [`Beam::airtime_ns`]).
    avg_bps: f64,
    avg_at_ns: f64,
    frames: u64,
    /// Its VLAN ID on the st port (`vlan`): its delivered frames leave tagged with it.
    vlan: Option<u16>,
    /// Its next due time while busy (the live entry of [`Beam::due`]); `None`: idle.
    due_ns: Option<u64>,
}

/// Several terminals on one forward carrier. See the module documentation.
#[derive(Debug)]
pub struct Beam {
    terms: Vec<Terminal>,
    /// Destination prefix -> terminal.
    table: PrefixTable,
    /// Terminals with data waiting (every one that has data is in it).
    backlog: TerminalSet,
    /// (due time, terminal) of the busy terminals; an entry whose time is no longer the
    /// terminal's `due_ns` is stale and skipped.
    due: BinaryHeap<Reverse<(u64, usize)>>,
    /// When `poll` next polls the idle terminals ([`IDLE_SWEEP_NS`]).
    next_sweep_ns: u64,
    /// The least input slack of the terminals (it changes only with `control`).
    input_slack_ns: u64,
    policy: BeamPolicy,
    /// `proportional_fair`: total airtime of the frames so far, ns. The averages decay only while
    /// frames are on the air, each by exp(-airtime / window): a terminal's average is brought to
    /// this clock when it is read or served, not at every frame for every terminal.
    airtime_ns: f64,
    /// `proportional_fair`: time constant of the served-rate averages, ns.
    window_ns: f64,
    /// `round_robin`: the terminal looked at first for the next frame.
    rr_next: usize,
    /// Fill frames' room with other terminals' packets (`mixed_frames`).
    mixed: bool,
    /// The frame on the carrier: its end, and the terminals with packets in it (the first is
    /// the terminal it was scheduled for).
    on_air: Option<u64>,
    pieces: Vec<usize>,
    /// End of the last frame: the carrier is free from then on.
    carrier_free_ns: u64,
    /// The carrier's useful rate: data-field bits and airtime of the frames sent, each decayed by
    /// exp(-airtime / [`CARRIER_RATE_WINDOW_NS`]) (see [`Beam::carrier_sent`]).
    carrier_bits: f64,
    carrier_air_ns: f64,
    delivered_due: Vec<u64>,
}

impl Beam {
    /// The beam of a validated configuration with `forward.beam`.
    pub fn new(cfg: &LinkConfig, b: &BeamConfig) -> Result<Self, ConfigError> {
        let n = b.terminals.len();
        let mut terms = Vec::with_capacity(n);
        for (k, t) in b.terminals.iter().enumerate() {
            let (link, shift_ns) = b.terminal_link(cfg, k);
            terms.push(Terminal {
                name: t.name.clone(),
                weight: t.weight,
                link: Direction::terminal(&link, shift_ns)?,
                avg_bps: 0.0,
                avg_at_ns: 0.0,
                frames: 0,
                vlan: t.vlan,
                due_ns: None,
            });
        }
        let prefixes: Vec<_> = (0..n).map(|k| b.prefixes(k)).collect();
        let mut beam = Beam {
            terms,
            table: PrefixTable::new(&prefixes),
            backlog: TerminalSet::new(n),
            due: BinaryHeap::new(),
            next_sweep_ns: 0,
            input_slack_ns: 0,
            policy: b.scheduler,
            airtime_ns: 0.0,
            window_ns: b.fairness_window_ms * 1e6,
            rr_next: 0,
            mixed: b.mixed_frames,
            on_air: None,
            pieces: Vec::new(),
            carrier_free_ns: 0,
            carrier_bits: 0.0,
            carrier_air_ns: 0.0,
            delivered_due: Vec::new(),
        };
        beam.input_slack_ns = beam.least_input_slack_ns();
        Ok(beam)
    }

    /// A packet offered at `now_ns`, queued at the terminal its destination belongs to.
    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        // The header is read first, while the caller's writes are still in the cache.
        let k = self.terminal_of(&frame);
        self.advance(now_ns);
        let link = &mut self.terms[k].link;
        link.enqueue(now_ns, frame);
        self.backlog.set(k, link.has_data());
        // Queued behind a busy terminal's pipeline, a packet changes nothing due before the
        // next frame; a drop is due at once.
        if self.terms[k].due_ns.is_none() || self.terms[k].link.drops_pending() {
            self.refresh_due(k);
        }
        if self.on_air.is_none() {
            self.start_next(now_ns.max(self.carrier_free_ns));
        }
    }

    /// Advances the model to `now_ns` and appends every outcome whose time has come.
    /// Polls the terminals something is due at (and the idle ones every [`IDLE_SWEEP_NS`]).
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        self.advance(now_ns);
        self.delivered_due.clear();
        while let Some(&Reverse((t, k))) = self.due.peek() {
            if t > now_ns && self.terms[k].due_ns == Some(t) {
                break;
            }
            self.due.pop();
            if self.terms[k].due_ns == Some(t) {
                self.poll_one(k, now_ns, out);
            }
        }
        if now_ns >= self.next_sweep_ns {
            self.next_sweep_ns = now_ns + IDLE_SWEEP_NS;
            for k in 0..self.terms.len() {
                if self.terms[k].due_ns.is_none() {
                    self.poll_one(k, now_ns, out);
                }
            }
        }
    }

    fn poll_one(&mut self, k: usize, now_ns: u64, out: &mut Vec<Outcome>) {
        let from = out.len();
        let t = &mut self.terms[k];
        t.link.poll(now_ns, out);
        if let Some(vid) = t.vlan {
            tag_delivered(&mut out[from..], vid);
        }
        self.delivered_due
            .extend_from_slice(t.link.delivered_due_ns());
        self.refresh_due(k);
    }

    /// Terminal `k` put a frame on the air: its due time is that frame's if earlier. (When a
    /// frame ends its packets are due no earlier than it was, so the due time only gets later:
    /// left as it is, it costs at most one early poll of the terminal.)
    fn frame_started(&mut self, k: usize) {
        let t = &mut self.terms[k];
        let Some(f) = t.link.frame_due_ns() else {
            return;
        };
        if t.due_ns.is_none_or(|d| f < d) {
            t.due_ns = Some(f);
            self.due.push(Reverse((f, k)));
        }
    }

    /// Puts terminal `k`'s next due time in the heap if it changed (none while it is idle).
    fn refresh_due(&mut self, k: usize) {
        let t = &mut self.terms[k];
        let due = if t.link.is_idle() {
            None
        } else {
            t.link.next_due_ns()
        };
        if due != t.due_ns {
            t.due_ns = due;
            if let Some(d) = due {
                self.due.push(Reverse((d, k)));
            }
        }
    }

    /// See [`Direction::delivered_due_ns`].
    pub fn delivered_due_ns(&self) -> &[u64] {
        &self.delivered_due
    }

    /// See [`Direction::next_wakeup_ns`]: the earliest of the busy terminals' times and, while
    /// a terminal is idle, the next poll of the idle ones (O(terminals): not the data plane's
    /// call).
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        let busy = self
            .terms
            .iter()
            .filter(|t| t.due_ns.is_some())
            .filter_map(|t| t.link.next_wakeup_ns());
        let sweep = self
            .terms
            .iter()
            .any(|t| t.due_ns.is_none())
            .then_some(self.next_sweep_ns);
        busy.chain(sweep).min()
    }

    /// See [`Direction::next_due_ns`]: a frame starts only when another ends (replayed by
    /// `enqueue` and `poll`), so the earliest of the busy terminals' times is the beam's (an
    /// idle terminal's ACM reports wait for it to get data, or for the sweep). A stale heap top
    /// (cleared by the next poll) can only make it early.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.due.peek().map(|&Reverse((t, _))| t)
    }

    /// See [`Direction::input_slack_ns`].
    pub fn input_slack_ns(&self) -> u64 {
        self.input_slack_ns
    }

    fn least_input_slack_ns(&self) -> u64 {
        self.terms
            .iter()
            .map(|t| t.link.input_slack_ns())
            .min()
            .unwrap_or(0)
    }

    /// Status: the first terminal's link, the queues and counters of all, each terminal's own.
    pub fn status(&self, now_ns: u64) -> DirectionStatus {
        let terms = self.terms.iter();
        let view = terms.map(|t| (t.name.as_str(), &t.link, t.frames));
        let mut st = terminal_links::status(now_ns, view);
        st.carrier_useful_rate_bps = Some(self.carrier_rate_bps(st.useful_rate_bps));
        st
    }

    /// Live change at `now_ns`, applied to the terminal `cmd.terminal` names, or to every
    /// terminal (checked before anything changes).
    pub fn control(&mut self, now_ns: u64, cmd: &ControlCommand) -> Result<(), ConfigError> {
        let only = terminal_links::control_target(self.terms.iter().map(|t| t.name.as_str()), cmd)?;
        self.advance(now_ns);
        let links = self.terms.iter_mut().map(|t| &mut t.link);
        terminal_links::apply_control(links, only, now_ns, cmd)?;
        self.input_slack_ns = self.least_input_slack_ns();
        for k in 0..self.terms.len() {
            self.refresh_due(k);
        }
        Ok(())
    }

    /// GSE bytes and frames sent so far, all terminals.
    pub fn link_totals(&self) -> (u64, u64) {
        terminal_links::totals(self.terms.iter().map(|t| &t.link))
    }

    /// Packets in the delay lines.
    pub fn in_flight(&self) -> usize {
        terminal_links::in_flight(self.terms.iter().map(|t| &t.link))
    }

    // -----------------------------------------------------------------------------------------

    /// The terminal of a packet: the longest prefix holding its IPv4 destination (behind an
    /// optional 802.1Q tag); none, or not IPv4: the first terminal.
    fn terminal_of(&self, frame: &[u8]) -> usize {
        ipv4_destination(frame)
            .and_then(|dst| self.table.lookup(dst))
            .unwrap_or(0)
    }

    /// Replays every frame end up to `now_ns`: the ended frame goes down its terminal's
    /// pipeline, then the carrier starts the next frame at once if any terminal has data.
    fn advance(&mut self, now_ns: u64) {
        while let Some(end) = self.on_air.filter(|&e| e <= now_ns) {
            for &k in &self.pieces {
                self.terms[k].link.advance(end);
            }
            self.on_air = None;
            self.carrier_free_ns = end;
            self.start_next(end);
        }
    }

    /// Starts the next frame at `t_ns` for the terminal the policy picks, if any has data.
    fn start_next(&mut self, t_ns: u64) {
        let pick = match self.policy {
            BeamPolicy::RoundRobin => self.pick_round_robin(),
            BeamPolicy::ProportionalFair => self.pick_proportional_fair(t_ns),
        };
        let Some(k) = pick else {
            return;
        };
        let pf = self.policy == BeamPolicy::ProportionalFair;
        let rate = self.terms[k].link.rate_bps(t_ns);
        self.rr_next = (k + 1) % self.terms.len();
        self.terms[k].frames += 1;
        let (end, modcod, room) = self.terms[k].link.start_granted(t_ns);
        self.backlog.set(k, self.terms[k].link.has_data());
        self.frame_started(k);
        self.carrier_free_ns = end;
        self.on_air = Some(end);
        self.pieces.clear();
        self.pieces.push(k);
        if self.mixed {
            self.fill(k, t_ns, end, modcod, room);
        }
        let air_ns = (end - t_ns) as f64;
        self.carrier_sent(air_ns, rate);
        if pf {
            self.served(k, air_ns, rate);
        }
    }

    /// A frame of `air_ns` at a MODCOD of `rate_bps` went on the air: into the carrier's rate.
    /// The rate counts the frame's whole data field (what the carrier could carry at the MODCODs
    /// its scheduler picks now), not the bytes that filled it, so a lightly loaded beam reports
    /// its capacity and a gateway pacing to it is not held to the load it already has.
    fn carrier_sent(&mut self, air_ns: f64, rate_bps: f64) {
        let keep = (-air_ns / CARRIER_RATE_WINDOW_NS).exp();
        self.carrier_bits = keep * self.carrier_bits + rate_bps * air_ns * 1e-9;
        self.carrier_air_ns = keep * self.carrier_air_ns + air_ns;
    }

    /// The carrier's useful rate, bit/s: the airtime-weighted mean of the MODCOD rates of the
    /// frames it sent over about the last [`CARRIER_RATE_WINDOW_NS`] of airtime (an idle carrier
    /// keeps its last value); before the first frame, the first terminal's rate.
    fn carrier_rate_bps(&self, first_terminal_bps: f64) -> f64 {
        if self.carrier_air_ns > 0.0 {
            self.carrier_bits / (self.carrier_air_ns * 1e-9)
        } else {
            first_terminal_bps
        }
    }

    /// `proportional_fair`: terminal `k` was served at `rate_bps` for `air_ns` of airtime, the
    /// others at 0 (their averages decay lazily: see `avg_now`).
    fn served(&mut self, k: usize, air_ns: f64, rate_bps: f64) {
        let keep = (-air_ns / self.window_ns).exp();
        let avg = self.avg_now(k);
        self.airtime_ns += air_ns;
        let t = &mut self.terms[k];
        t.avg_bps = keep * avg + (1.0 - keep) * rate_bps;
        t.avg_at_ns = self.airtime_ns;
    }

    /// `proportional_fair`: terminal `k`'s average served rate at the airtime clock, bit/s.
    fn avg_now(&self, k: usize) -> f64 {
        let t = &self.terms[k];
        t.avg_bps * (-(self.airtime_ns - t.avg_at_ns) / self.window_ns).exp()
    }

    /// Gives the `room` bytes terminal `k`'s frame (MODCOD row `modcod`) leaves to the other
    /// terminals with data that can decode it, in turn from `rr_next`.
    fn fill(&mut self, k: usize, t_ns: u64, end: u64, modcod: usize, mut room: u32) {
        let mut d = 0;
        while let Some((j, dj)) = self.backlog.next_in_turn(self.rr_next, d) {
            d = dj + 1;
            if room == 0 {
                break;
            }
            if j == k {
                continue;
            }
            let link = &mut self.terms[j].link;
            let used = link.take_piece(t_ns, end, modcod, room);
            self.backlog.set(j, link.has_data());
            if used > 0 {
                room -= used;
                self.pieces.push(j);
                self.frame_started(j);
            }
        }
    }

    /// The first terminal with data from `rr_next` on.
    fn pick_round_robin(&self) -> Option<usize> {
        self.backlog.next_in_turn(self.rr_next, 0).map(|(k, _)| k)
    }

    /// The terminal with data maximising weight x rate now / average served rate (ties: the
    /// first from `rr_next` on; a terminal never served yet counts as infinitely behind).
    fn pick_proportional_fair(&mut self, t_ns: u64) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        let mut d = 0;
        while let Some((k, dk)) = self.backlog.next_in_turn(self.rr_next, d) {
            d = dk + 1;
            let avg = self.avg_now(k);
            let t = &mut self.terms[k];
            let m = t.weight * t.link.rate_bps(t_ns) / avg.max(f64::MIN_POSITIVE);
            if best.is_none_or(|(_, b)| m > b) {
                best = Some((k, m));
            }
        }
        best.map(|(k, _)| k)
    }
}

/// Pushes an 802.1Q tag with VLAN ID `vid` (priority 0) on the delivered frames of `outcomes`
/// (in front of any tag a frame carries already). Lost frames leave no port: left as they are.
fn tag_delivered(outcomes: &mut [Outcome], vid: u16) {
    let tag = VlanTag {
        tpid: ethertype::VLAN,
        pcp: 0,
        dei: false,
        vid,
    };
    for o in outcomes {
        if let Outcome::Deliver { frame, .. } = o {
            insert_vlan_tag(frame, tag);
        }
    }
}

/// The IPv4 destination of an Ethernet frame (behind one optional 802.1Q tag); of an ARP packet
/// (Ethernet/IPv4, RFC 826), its target protocol address: a request goes to the terminal of the
/// address it asks for, a reply to the terminal of the host that asked.
fn ipv4_destination(frame: &[u8]) -> Option<u32> {
    // The target protocol address is at 24 in an ARP packet.
    prefix_table::ipv4_address(frame, 16, 24)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;
    use crate::types::LossCause;
    use crate::types::TerminalStatus;

    /// A 1514-byte Ethernet frame with an IPv4 header for `dst` (10.0.2.`dst`).
    fn packet(dst: u8) -> Vec<u8> {
        let mut f = vec![0u8; 1514];
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        f[14] = 0x45;
        f[30..34].copy_from_slice(&[10, 0, 2, dst]);
        f
    }

    /// The beam of `terminals` (YAML flow list) on a 10 Msym/s carrier with big queues.
    fn beam(scheduler: &str, terminals: &str) -> Beam {
        let yaml = format!(
            "forward: {{delay_ms: 10, symbol_rate_baud: 10.0e6, acm: {{refresh_ms: 10}}, \
             queue: {{limit_packets: 100000, limit_bytes: 200000000}}, \
             beam: {{scheduler: {scheduler}, fairness_window_ms: 50, terminals: {terminals}}}}}"
        );
        let cfg = LinkConfig::from_yaml_str(&yaml).unwrap();
        Beam::new(&cfg, cfg.forward.beam.as_ref().unwrap()).unwrap()
    }

    /// Offers `n` packets to each of 10.0.2.1 and 10.0.2.2 at 0, runs to `t_ns`, returns the
    /// terminals' status.
    fn run_backlogged(b: &mut Beam, n: usize, t_ns: u64) -> Vec<TerminalStatus> {
        for _ in 0..n {
            b.enqueue(0, packet(1));
            b.enqueue(0, packet(2));
        }
        let mut out = Vec::new();
        b.poll(t_ns, &mut out);
        let st = b.status(t_ns);
        assert!(
            st.terminals.iter().all(|t| t.queue_packets > 0),
            "both backlogged"
        );
        st.terminals
    }

    #[test]
    fn round_robin_gives_equal_frames_and_bytes_by_modcod() {
        let mut b = beam(
            "round_robin",
            "[{name: clear, prefixes: [10.0.2.1/32]}, \
              {name: faded, prefixes: [10.0.2.2], attenuation: {type: constant, value_db: 8}}]",
        );
        let t = run_backlogged(&mut b, 2000, 200_000_000);
        let (c, f) = (&t[0], &t[1]);
        let (mc, mf) = (c.modcod.as_ref().unwrap(), f.modcod.as_ref().unwrap());
        assert!(
            mc.required_esn0_db > mf.required_esn0_db,
            "{mc:?} vs {mf:?}"
        );
        assert!(
            c.frames.abs_diff(f.frames) <= 1,
            "{} vs {}",
            c.frames,
            f.frames
        );
        assert!(c.frames > 20);
        // Each full frame carries its MODCOD's data field: bytes per frame differ, not frames.
        assert!(c.sent_bytes > f.sent_bytes);
        assert!(c.counters.delivered_bytes > f.counters.delivered_bytes);
    }

    /// The carrier's rate is what its frames carried per airtime, between its terminals' rates
    /// with both backlogged (the first terminal's alone before any frame, the faded one's with
    /// only it backlogged).
    #[test]
    fn carrier_rate_is_the_airtime_mean_of_the_frames_sent() {
        let terminals = "[{name: clear, prefixes: [10.0.2.1/32]}, \
              {name: faded, prefixes: [10.0.2.2], attenuation: {type: constant, value_db: 8}}]";
        let mut b = beam("round_robin", terminals);
        let idle = b.status(0);
        assert_eq!(idle.carrier_useful_rate_bps, Some(idle.useful_rate_bps));
        let t = run_backlogged(&mut b, 2000, 200_000_000);
        let air = |s: &TerminalStatus| s.sent_bytes as f64 * 8.0 / s.useful_rate_bps;
        let want = (t[0].sent_bytes + t[1].sent_bytes) as f64 * 8.0 / (air(&t[0]) + air(&t[1]));
        let got = b.status(200_000_000).carrier_useful_rate_bps.unwrap();
        assert!((got / want - 1.0).abs() < 0.02, "{got} vs {want}");
        assert!(t[1].useful_rate_bps < got && got < t[0].useful_rate_bps);

        let mut b = beam("round_robin", terminals);
        for _ in 0..2000 {
            b.enqueue(0, packet(2));
        }
        b.poll(100_000_000, &mut Vec::new());
        let st = b.status(100_000_000);
        let faded = st.terminals[1].useful_rate_bps;
        assert!((st.carrier_useful_rate_bps.unwrap() / faded - 1.0).abs() < 1e-9);
    }

    #[test]
    fn proportional_fair_shares_airtime_by_weight() {
        let mut b = beam(
            "proportional_fair",
            "[{name: a, prefixes: [10.0.2.1/32], weight: 3}, {name: b, prefixes: [10.0.2.2/32]}]",
        );
        let t = run_backlogged(&mut b, 6000, 500_000_000);
        let ratio = t[0].frames as f64 / t[1].frames as f64;
        assert!(
            (ratio - 3.0).abs() < 0.15,
            "frames {} / {}",
            t[0].frames,
            t[1].frames
        );
    }

    #[test]
    fn proportional_fair_with_equal_weights_is_equal_airtime() {
        let mut b = beam(
            "proportional_fair",
            "[{name: a, prefixes: [10.0.2.1/32]}, \
              {name: b, prefixes: [10.0.2.2/32], attenuation: {type: constant, value_db: 8}}]",
        );
        let t = run_backlogged(&mut b, 6000, 500_000_000);
        // Frames of different modulations last differently long: compare airtime.
        let air = |s: &TerminalStatus| s.sent_bytes as f64 * 8.0 / s.useful_rate_bps;
        let r = air(&t[0]) / air(&t[1]);
        assert!((r - 1.0).abs() < 0.05, "airtime ratio {r}");
    }

    /// Terminal `clear` backlogged, `faded` (8 dB of rain, a more robust MODCOD) sent one small
    /// packet per ms for 200 ms; or the other way round. Returns the terminals' status.
    fn mixed_run(mixed: bool, backlogged: u8) -> Vec<TerminalStatus> {
        let mut b = beam(
            "round_robin",
            &format!(
                "[{{name: clear, prefixes: [10.0.2.1/32]}}, {{name: faded, prefixes: [10.0.2.2], \
                 attenuation: {{type: constant, value_db: 8}}}}], mixed_frames: {mixed}"
            ),
        );
        for _ in 0..3000 {
            b.enqueue(0, packet(backlogged));
        }
        let mut out = Vec::new();
        for ms in 0..200u64 {
            let mut small = packet(3 - backlogged);
            small.truncate(200);
            b.enqueue(ms * 1_000_000, small);
            b.poll(ms * 1_000_000, &mut out);
        }
        b.status(200_000_000).terminals
    }

    #[test]
    fn mixed_frames_carry_only_terminals_that_decode_their_modcod() {
        // The faded terminal's robust frames have room: the clear terminal's packets fill it.
        let (off, on) = (mixed_run(false, 1), mixed_run(true, 1));
        assert!(
            on[0].sent_bytes > off[0].sent_bytes * 3 / 2,
            "clear: {} with mixed frames, {} without",
            on[0].sent_bytes,
            off[0].sent_bytes
        );
        assert_eq!(
            on[1].counters.delivered_packets,
            off[1].counters.delivered_packets
        );
        // The clear terminal's 32APSK frames have room too, but the faded one cannot decode them.
        let (off, on) = (mixed_run(false, 2), mixed_run(true, 2));
        assert_eq!(on[1].sent_bytes, off[1].sent_bytes);
        assert_eq!(on[1].counters.frame_erasures, 0);
    }

    #[test]
    fn a_terminal_without_data_is_skipped_and_unmatched_packets_go_to_the_first() {
        let mut b = beam(
            "round_robin",
            "[{name: a, prefixes: [10.0.0.0/8]}, {name: b, prefixes: [10.0.2.0/24]}, \
              {name: c, prefixes: [10.0.2.2/32]}]",
        );
        assert_eq!(b.terminal_of(&packet(2)), 2, "longest prefix");
        assert_eq!(b.terminal_of(&packet(3)), 1);
        let mut arp = packet(2);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        assert_eq!(b.terminal_of(&arp), 0);
        for _ in 0..50 {
            b.enqueue(0, packet(2));
        }
        let mut out = Vec::new();
        b.poll(1_000_000_000, &mut out);
        let st = b.status(1_000_000_000);
        assert_eq!(st.counters.delivered_packets, 50);
        assert_eq!(st.terminals[2].counters.delivered_packets, 50);
        assert_eq!(st.terminals[0].frames + st.terminals[1].frames, 0);
    }

    #[test]
    fn arp_goes_to_the_terminal_of_its_target_address() {
        let b = beam(
            "round_robin",
            "[{name: a, prefixes: [10.0.2.1]}, {name: b, prefixes: [10.0.2.2]}]",
        );
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        arp[14..22].copy_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        arp[38..42].copy_from_slice(&[10, 0, 2, 2]);
        assert_eq!(b.terminal_of(&arp), 1);
        arp[38..42].copy_from_slice(&[10, 0, 9, 9]);
        assert_eq!(b.terminal_of(&arp), 0, "no terminal's: the first");
    }

    #[test]
    fn with_vlans_each_terminal_s_frames_come_out_tagged_with_its_vlan() {
        let mut b = beam(
            "round_robin",
            "[{name: a, prefixes: [10.0.2.1], vlan: 101}, \
              {name: b, prefixes: [10.0.2.2], vlan: 4094}]",
        );
        for _ in 0..5 {
            b.enqueue(0, packet(1));
            b.enqueue(0, packet(2));
        }
        let mut out = Vec::new();
        b.poll(1_000_000_000, &mut out);
        let mut seen = Vec::new();
        for o in out {
            let Outcome::Deliver { frame, .. } = o else {
                panic!("lost {o:?}")
            };
            assert_eq!(frame.len(), 1518);
            assert_eq!(frame[12..14], [0x81, 0x00]);
            let vid = u16::from_be_bytes([frame[14], frame[15]]) & 0x0fff;
            seen.push((frame[37], vid)); // the destination 10.0.2.x, 4 bytes later
        }
        assert_eq!(seen.len(), 10);
        assert!(seen
            .iter()
            .all(|&(d, v)| v == [101, 4094][usize::from(d) - 1]));
    }

    #[test]
    fn a_rain_cell_reaches_the_following_terminal_later() {
        let b = beam(
            "round_robin",
            "[{name: a, attenuation: {type: on_off, on_ticks: 1, off_ticks: 1, amplitude_db: 6, \
               tick_ms: 1000}}, {name: b, rain_cell: {follow: a, offset_s: 0.5}}]",
        );
        let att = |t_ms: u64| {
            let st = b.status(t_ms * 1_000_000);
            (
                st.terminals[0].attenuation_db,
                st.terminals[1].attenuation_db,
            )
        };
        assert_eq!(att(1200), (6.0, 0.0));
        assert_eq!(att(1700), (6.0, 6.0));
        assert_eq!(att(2200), (0.0, 6.0));
        assert_eq!(att(2700), (0.0, 0.0));
    }

    /// Runs `arrivals` (time, destination 10.0.2.x, id) through beam `b`, waking at the arrivals
    /// and at the times `next` gives; returns (id, poll time, delivered) of every outcome, and
    /// the number of polls. Every delivery comes out at its model time, every queue drop at the
    /// packet's arrival (not later).
    fn drive(
        mut b: Beam,
        arrivals: &[(u64, u8, u32)],
        next: fn(&Beam) -> Option<u64>,
    ) -> (Vec<(u32, u64, bool)>, usize) {
        let (mut got, mut out, mut polls) = (Vec::new(), Vec::new(), 0);
        let (mut i, mut now) = (0, 0);
        let end = arrivals.last().unwrap().0 + 200_000_000;
        while now < end {
            while i < arrivals.len() && arrivals[i].0 <= now {
                let (t, dst, id) = arrivals[i];
                let mut p = packet(dst);
                p.truncate(200 + (id as usize * 37) % 1300);
                p[50..54].copy_from_slice(&id.to_be_bytes());
                b.enqueue(t, p);
                i += 1;
            }
            b.poll(now, &mut out);
            polls += 1;
            assert!(
                b.delivered_due_ns().iter().all(|&d| d == now),
                "late at {now}"
            );
            for o in out.drain(..) {
                let dropped = matches!(
                    o,
                    Outcome::Lost {
                        cause: LossCause::QueueDrop,
                        ..
                    }
                );
                let (frame, delivered) = match o {
                    Outcome::Deliver { frame, .. } => (frame, true),
                    Outcome::Lost { frame, .. } => (frame, false),
                };
                let id = u32::from_be_bytes(frame[50..54].try_into().unwrap());
                assert!(!dropped || arrivals[id as usize].0 == now, "drop {id} late");
                got.push((id, now, delivered));
            }
            let arrival = arrivals.get(i).map(|a| a.0);
            let wake = [next(&b), arrival].into_iter().flatten().min();
            now = wake.unwrap_or(end).max(now + 1);
        }
        (got, polls)
    }

    #[test]
    fn waking_only_for_the_terminals_due_gives_every_outcome_on_time() {
        // 40 terminals, bursts to a few and gaps (terminals go idle and busy again), queues
        // that overflow, a faded terminal, mixed frames.
        let terminals: Vec<String> = (1..=40)
            .map(|k| {
                let rain = if k == 3 {
                    ", attenuation: {type: constant, value_db: 5}"
                } else {
                    ""
                };
                format!("{{name: t{k}, prefixes: [10.0.2.{k}]{rain}}}")
            })
            .collect();
        let mut arrivals = Vec::new();
        let mut t = 1_000_000;
        for id in 0..2000u32 {
            t += if id % 400 < 250 { 2_000 } else { 60_000 };
            let dst = if id % 400 < 250 {
                1 + (id % 4) as u8
            } else {
                1 + (id % 40) as u8
            };
            arrivals.push((t, dst, id));
        }
        for scheduler in ["round_robin", "proportional_fair"] {
            let yaml = format!(
                "forward: {{delay_ms: 20, symbol_rate_baud: 2.0e7, acm: {{refresh_ms: 7}}, \
                 queue: {{limit_packets: 30, limit_bytes: 1000000}}, \
                 beam: {{scheduler: {scheduler}, mixed_frames: true, terminals: [{}]}}}}",
                terminals.join(", ")
            );
            let cfg = LinkConfig::from_yaml_str(&yaml).unwrap();
            let b = || Beam::new(&cfg, cfg.forward.beam.as_ref().unwrap()).unwrap();
            let (every, pe) = drive(b(), &arrivals, Beam::next_wakeup_ns);
            let (due, pd) = drive(b(), &arrivals, Beam::next_due_ns);
            assert_eq!(every, due, "{scheduler}");
            assert!(
                pd < pe,
                "{scheduler}: {pd} polls, {pe} waking at every event"
            );
            assert_eq!(due.len(), arrivals.len(), "{scheduler}");
            assert!(due.iter().any(|o| !o.2), "{scheduler}: some queue drops");
        }
    }

    #[test]
    fn a_control_naming_a_terminal_changes_that_terminal_only() {
        let mut b = beam(
            "round_robin",
            "[{name: a, prefixes: [10.0.2.1]}, {name: b, prefixes: [10.0.2.2]}]",
        );
        let cmd = |terminal: Option<&str>, db| ControlCommand {
            attenuation_db: Some(db),
            terminal: terminal.map(str::to_string),
            ..Default::default()
        };
        let att = |b: &Beam| {
            let st = b.status(1_000_000);
            (
                st.terminals[0].attenuation_db,
                st.terminals[1].attenuation_db,
            )
        };
        b.control(1_000_000, &cmd(Some("b"), 7.0)).unwrap();
        assert_eq!(att(&b), (0.0, 7.0));
        b.control(1_000_000, &cmd(None, 3.0)).unwrap();
        assert_eq!(att(&b), (3.0, 3.0));
        let e = b.control(1_000_000, &cmd(Some("zz"), 1.0)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "terminal: no terminal of forward.beam is named \"zz\""
        );
        assert_eq!(att(&b), (3.0, 3.0));
    }

    #[test]
    fn one_beam_runs_as_a_model() {
        let cfg = LinkConfig::from_yaml_str(
            "forward: {beam: {terminals: [{name: a, prefixes: [10.0.2.1]}]}}",
        )
        .unwrap();
        assert!(matches!(
            Model::new(&cfg, Dir::Forward).unwrap(),
            Model::Beam(_)
        ));
        assert!(matches!(
            Model::new(&cfg, Dir::Return).unwrap(),
            Model::One(_)
        ));
    }

    #[test]
    fn bad_beams_are_refused_naming_the_field() {
        let err = |terminals: &str| {
            let y = format!("forward: {{beam: {{terminals: {terminals}}}}}");
            LinkConfig::from_yaml_str(&y).unwrap_err().to_string()
        };
        assert_eq!(
            err("[{name: a}, {name: a}]"),
            "forward.beam.terminals[1].name: \"a\" is the name of an earlier terminal"
        );
        assert_eq!(
            err("[{name: a, rain_cell: {follow: z, offset_s: 1}}]"),
            "forward.beam.terminals[0].rain_cell.follow: no terminal is named \"z\""
        );
        assert_eq!(
            err("[]"),
            "forward.beam.terminals: 0 terminals; a beam has 1 to 1000"
        );
        let many: Vec<String> = (0..1001).map(|k| format!("{{name: t{k}}}")).collect();
        assert_eq!(
            err(&format!("[{}]", many.join(", "))),
            "forward.beam.terminals: 1001 terminals; a beam has 1 to 1000"
        );
        assert!(err("[{name: a, prefixes: [10.0.2.0/40]}]")
            .starts_with("forward.beam.terminals[0].prefixes[0]: \"10.0.2.0/40\""));
        assert!(
            err("[{name: a, attenuation: {type: file, file: /nonexistent/trace.txt}}]")
                .contains("/nonexistent/trace.txt")
        );
        assert!(err("[{name: a, queue: {limit_packets: 0}}]")
            .starts_with("forward.beam.terminals[0].queue.limit_packets: "));
        assert_eq!(
            err("[{name: a, vlan: 7}, {name: b, vlan: 7}]"),
            "forward.beam.terminals[1].vlan: VLAN 7 is terminal \"a\"'s already"
        );
        assert_eq!(
            err("[{name: a, vlan: 7}, {name: b}]"),
            "forward.beam.terminals[1].vlan: terminal \"a\" has a vlan and \"b\" none: \
             give every terminal a vlan, or none"
        );
        assert_eq!(
            err("[{name: a}, {name: b, vlan: 7}]"),
            "forward.beam.terminals[1].vlan: terminal \"b\" has a vlan and \"a\" none: \
             give every terminal a vlan, or none"
        );
        assert!(err("[{name: a, vlan: 4095}]").starts_with("forward.beam.terminals[0].vlan: "));
        assert!(err("[{name: a, vlan: 0}]").starts_with("forward.beam.terminals[0].vlan: "));
        let e = LinkConfig::from_yaml_str("return: {beam: {terminals: [{name: a}]}}").unwrap_err();
        assert!(e.to_string().starts_with("return.beam: "));
    }
}
