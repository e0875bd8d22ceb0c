//! A forward beam: several terminals on one DVB-S2 carrier (`forward.beam`, `terminals.rs`).
//!
//! Each terminal is a whole pipeline ([`Direction`]: its queue, ACM loop on its own channel,
//! erasure and bit errors at its own Es/N0, delay line) whose scheduler is gated: the carrier
//! carries one BBFRAME at a time, and when it is free the frame scheduler picks the terminal
//! whose frame goes next ([`BeamPolicy`]); that frame has the terminal's MODCOD and its packets
//! (one MODCOD per frame, EN 302 307-1 section 5.1.6 ACM). With `mixed_frames` the room it leaves
//! goes to other terminals that can decode that MODCOD: each puts a piece (its packets, the
//! frame's MODCOD and end) in its own pipeline, so the frame's erasure is judged at each
//! receiver's Es/N0. Frames are back to back while any terminal has data.
//!
//! Time moves as in a [`Direction`]: `enqueue` and `poll` first replay every frame end up to
//! `now_ns` in order (the ended frame's packets go down its terminal's pipeline, then the next
//! frame starts).

use crate::config::{ConfigError, LinkConfig, LinkKind};
use crate::control::ControlCommand;
use crate::direction::{Direction, LinkSetup};
use crate::terminals::{BeamConfig, BeamPolicy, Prefix};
use crate::types::{Dir, DirectionStatus, Outcome, TerminalStatus};

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
    prefixes: Vec<Prefix>,
    weight: f64,
    link: Direction,
    /// `proportional_fair`: exponential time average of the rate the carrier served it, bit/s.
    avg_bps: f64,
    frames: u64,
}

/// Several terminals on one forward carrier. See the module documentation.
#[derive(Debug)]
pub struct Beam {
    terms: Vec<Terminal>,
    policy: BeamPolicy,
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
    delivered_due: Vec<u64>,
}

impl Beam {
    /// The beam of a validated configuration with `forward.beam`.
    pub fn new(cfg: &LinkConfig, b: &BeamConfig) -> Result<Self, ConfigError> {
        let mut terms = Vec::with_capacity(b.terminals.len());
        for (k, t) in b.terminals.iter().enumerate() {
            let (link, shift_ns) = b.terminal_link(cfg, k);
            terms.push(Terminal {
                name: t.name.clone(),
                prefixes: b.prefixes(k),
                weight: t.weight,
                link: Direction::terminal(&link, shift_ns)?,
                avg_bps: 0.0,
                frames: 0,
            });
        }
        Ok(Beam {
            terms,
            policy: b.scheduler,
            window_ns: b.fairness_window_ms * 1e6,
            rr_next: 0,
            mixed: b.mixed_frames,
            on_air: None,
            pieces: Vec::new(),
            carrier_free_ns: 0,
            delivered_due: Vec::new(),
        })
    }

    /// A packet offered at `now_ns`, queued at the terminal its destination belongs to.
    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        self.advance(now_ns);
        let k = self.terminal_of(&frame);
        self.terms[k].link.enqueue(now_ns, frame);
        if self.on_air.is_none() {
            self.start_next(now_ns.max(self.carrier_free_ns));
        }
    }

    /// Advances the model to `now_ns` and appends every outcome whose time has come.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        self.advance(now_ns);
        self.delivered_due.clear();
        for t in &mut self.terms {
            t.link.poll(now_ns, out);
            self.delivered_due
                .extend_from_slice(t.link.delivered_due_ns());
        }
    }

    /// See [`Direction::delivered_due_ns`].
    pub fn delivered_due_ns(&self) -> &[u64] {
        &self.delivered_due
    }

    /// See [`Direction::next_wakeup_ns`].
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        self.terms
            .iter()
            .filter_map(|t| t.link.next_wakeup_ns())
            .min()
    }

    /// See [`Direction::next_due_ns`]: a frame starts only when another ends (replayed by
    /// `enqueue` and `poll`), so the earliest of the terminals' times is the beam's.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.terms.iter().filter_map(|t| t.link.next_due_ns()).min()
    }

    /// See [`Direction::input_slack_ns`].
    pub fn input_slack_ns(&self) -> u64 {
        self.terms
            .iter()
            .map(|t| t.link.input_slack_ns())
            .min()
            .unwrap_or(0)
    }

    /// Status: the first terminal's link, the queues and counters of all, each terminal's own.
    pub fn status(&self, now_ns: u64) -> DirectionStatus {
        let mut st = self.terms[0].link.status(now_ns);
        st.queue_packets = 0;
        st.queue_bytes = 0;
        st.counters = Default::default();
        for t in &self.terms {
            let s = t.link.status(now_ns);
            st.queue_packets += s.queue_packets;
            st.queue_bytes += s.queue_bytes;
            st.counters.add(&s.counters);
            st.terminals.push(TerminalStatus {
                name: t.name.clone(),
                modcod: s.modcod,
                esn0_db: s.esn0_db,
                attenuation_db: s.attenuation_db,
                useful_rate_bps: s.useful_rate_bps,
                queue_packets: s.queue_packets,
                queue_bytes: s.queue_bytes,
                frames: t.frames,
                sent_bytes: t.link.link_totals().0,
                counters: s.counters,
            });
        }
        st
    }

    /// Live change at `now_ns`, applied to every terminal (checked before anything changes).
    pub fn control(&mut self, now_ns: u64, cmd: &ControlCommand) -> Result<(), ConfigError> {
        cmd.validate()?;
        self.advance(now_ns);
        for t in &mut self.terms {
            t.link.control(now_ns, cmd)?;
        }
        Ok(())
    }

    /// GSE bytes and frames sent so far, all terminals.
    pub fn link_totals(&self) -> (u64, u64) {
        self.terms.iter().fold((0, 0), |(b, f), t| {
            let (tb, tf) = t.link.link_totals();
            (b + tb, f + tf)
        })
    }

    /// Packets in the delay lines.
    pub fn in_flight(&self) -> usize {
        self.terms.iter().map(|t| t.link.in_flight()).sum()
    }

    // -----------------------------------------------------------------------------------------

    /// The terminal of a packet: the longest prefix holding its IPv4 destination (behind an
    /// optional 802.1Q tag); none, or not IPv4: the first terminal.
    fn terminal_of(&self, frame: &[u8]) -> usize {
        let Some(dst) = ipv4_destination(frame) else {
            return 0;
        };
        let mut best = (0, None::<u8>);
        for (k, t) in self.terms.iter().enumerate() {
            for p in t.prefixes.iter().filter(|p| p.contains(dst)) {
                if best.1.is_none_or(|l| p.len > l) {
                    best = (k, Some(p.len));
                }
            }
        }
        best.0
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
        let served = self.terms[k].link.rate_bps(t_ns);
        self.rr_next = (k + 1) % self.terms.len();
        self.terms[k].frames += 1;
        let (end, modcod, room) = self.terms[k].link.start_granted(t_ns);
        self.carrier_free_ns = end;
        self.on_air = Some(end);
        self.pieces.clear();
        self.pieces.push(k);
        if self.mixed {
            self.fill(k, t_ns, end, modcod, room);
        }
        if self.policy == BeamPolicy::ProportionalFair {
            // Over the frame's airtime, terminal k is served at its rate and the others at 0.
            let keep = (-((end - t_ns) as f64) / self.window_ns).exp();
            for (j, t) in self.terms.iter_mut().enumerate() {
                let r = if j == k { served } else { 0.0 };
                t.avg_bps = keep * t.avg_bps + (1.0 - keep) * r;
            }
        }
    }

    /// Gives the `room` bytes terminal `k`'s frame (MODCOD row `modcod`) leaves to the other
    /// terminals that can decode it, in turn from `rr_next`.
    fn fill(&mut self, k: usize, t_ns: u64, end: u64, modcod: usize, mut room: u32) {
        let n = self.terms.len();
        for j in (0..n).map(|i| (self.rr_next + i) % n).filter(|&j| j != k) {
            if room == 0 {
                break;
            }
            let used = self.terms[j].link.take_piece(t_ns, end, modcod, room);
            if used > 0 {
                room -= used;
                self.pieces.push(j);
            }
        }
    }

    /// The first terminal with data from `rr_next` on.
    fn pick_round_robin(&self) -> Option<usize> {
        let n = self.terms.len();
        (0..n)
            .map(|i| (self.rr_next + i) % n)
            .find(|&k| self.terms[k].link.has_data())
    }

    /// The terminal with data maximising weight x rate now / average served rate (ties: the
    /// first from `rr_next` on; a terminal never served yet counts as infinitely behind).
    fn pick_proportional_fair(&mut self, t_ns: u64) -> Option<usize> {
        let n = self.terms.len();
        let mut best: Option<(usize, f64)> = None;
        for k in (0..n).map(|i| (self.rr_next + i) % n) {
            let t = &mut self.terms[k];
            if !t.link.has_data() {
                continue;
            }
            let m = t.weight * t.link.rate_bps(t_ns) / t.avg_bps.max(f64::MIN_POSITIVE);
            if best.is_none_or(|(_, b)| m > b) {
                best = Some((k, m));
            }
        }
        best.map(|(k, _)| k)
    }
}

/// The IPv4 destination of an Ethernet frame (behind one optional 802.1Q tag).
fn ipv4_destination(frame: &[u8]) -> Option<u32> {
    let mut off = 12;
    let mut ether = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    if ether == 0x8100 {
        off += 4;
        ether = u16::from_be_bytes([*frame.get(off)?, *frame.get(off + 1)?]);
    }
    if ether != 0x0800 {
        return None;
    }
    let ip = off + 2;
    let d = frame.get(ip + 16..ip + 20)?;
    Some(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Model;

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
            "forward.beam.terminals: 0 terminals; a beam has 1 to 64"
        );
        let many: Vec<String> = (0..65).map(|k| format!("{{name: t{k}}}")).collect();
        assert_eq!(
            err(&format!("[{}]", many.join(", "))),
            "forward.beam.terminals: 65 terminals; a beam has 1 to 64"
        );
        assert!(err("[{name: a, prefixes: [10.0.2.0/40]}]")
            .starts_with("forward.beam.terminals[0].prefixes[0]: \"10.0.2.0/40\""));
        assert!(
            err("[{name: a, attenuation: {type: file, file: /nonexistent/trace.txt}}]")
                .contains("/nonexistent/trace.txt")
        );
        assert!(err("[{name: a, queue: {limit_packets: 0}}]")
            .starts_with("forward.beam.terminals[0].queue.limit_packets: "));
        let e = LinkConfig::from_yaml_str("return: {beam: {terminals: [{name: a}]}}").unwrap_err();
        assert!(e.to_string().starts_with("return.beam: "));
    }
}
