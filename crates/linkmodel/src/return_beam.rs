//! The return link of a beam: the terminals of `forward.beam` share one MF-TDMA pool through the
//! gateway's DAMA controller (`return.dama` with `forward.beam`).
//!
//! Each terminal is a whole return pipeline ([`Direction`]: its queue, requests, bursts in its
//! granted slots at its MODCOD, erasure, bit errors, delay line) whose DAMA stage is pooled: at
//! every superframe start the beam asks each terminal for its requests (`dama.rs`), the
//! controller (`dama_pool.rs`) divides the superframe's carriers x timeslots among them, and
//! each terminal sends in its own slots. Every terminal has the `return.dama` settings (CRA,
//! RBDC and VBDC limits, timeout, contention) and its own random streams, and its own MODCOD:
//! fixed, or from its own uplink C/N and attenuation (`terminals[].return`, `terminals.rs`), so
//! its slots carry its MODCOD's burst payload (`Direction` passes it to its DAMA stage at every
//! superframe). With `contention`, the
//! terminals that send a request by contention in the same superframe share its contention
//! slots: two or more in one slot all lose their request (`dama_pool.rs`, ContentionSlots).
//!
//! A packet's terminal is the one whose `prefixes` hold its IPv4 SOURCE (the return link carries
//! what the terminals' LANs send): the same longest-prefix table as the forward beam, looked up
//! by source; unmatched packets (IPv6, other sources) go to the first terminal, as forward.
//!
//! Cost: the superframe tick visits every terminal (requests, grants: 1000 terminals every 26.5
//! ms); between ticks only the terminals with something pending (`busy`) are advanced and polled.

use crate::config::{ConfigError, LinkConfig};
use crate::control::ControlCommand;
use crate::dama::{Demand, Grant};
use crate::dama_pool::{ContentionSlots, Pool};
use crate::direction::Direction;
use crate::prefix_table::{self, PrefixTable};
use crate::terminal_links;
use crate::terminal_set::TerminalSet;
use crate::terminals::BeamConfig;
use crate::types::{DirectionStatus, Outcome};

/// Whether the return link is a beam: `forward.beam` and `return.dama` both given.
pub(crate) fn is_beam(cfg: &LinkConfig) -> bool {
    cfg.forward.beam.is_some() && cfg.return_.dama.is_some()
}

/// Checks each terminal's return link (its MODCOD, uplink) and that the pool holds every
/// terminal's CRA (the one-terminal checks ran already); a terminal's `return` needs
/// `return.dama`.
pub(crate) fn validate(cfg: &LinkConfig) -> Result<(), ConfigError> {
    match &cfg.forward.beam {
        Some(b) if is_beam(cfg) => ReturnBeam::new(cfg, b).map(|_| ()),
        Some(b) => match b.terminals.iter().position(|t| t.return_.is_some()) {
            Some(k) => Err(ConfigError::field(
                format!("forward.beam.terminals[{k}].return"),
                "a terminal's own return link needs return.dama (the return beam)",
            )),
            None => Ok(()),
        },
        None => Ok(()),
    }
}

/// An error building terminal `k`'s return link, named after the terminal: its own MODCOD's
/// field, or the return field with the terminal's name added.
fn in_terminal(e: ConfigError, k: usize, name: &str) -> ConfigError {
    match e {
        ConfigError::Field { field, reason } if field == "return.acm.modcod" => {
            ConfigError::field(format!("forward.beam.terminals[{k}].return.modcod"), reason)
        }
        ConfigError::Field { field, reason } => {
            ConfigError::field(field, format!("{reason} (terminal {name:?})"))
        }
        other => other,
    }
}

/// One terminal of the return beam.
#[derive(Debug)]
struct Terminal {
    name: String,
    link: Direction,
}

/// Several terminals sharing the return link's MF-TDMA pool. See the module documentation.
#[derive(Debug)]
pub struct ReturnBeam {
    terms: Vec<Terminal>,
    /// Source prefix -> terminal.
    table: PrefixTable,
    pool: Pool,
    /// The superframe's contention slots (`return.dama.contention`).
    contention: Option<ContentionSlots>,
    /// Start of the next superframe (every terminal's).
    next_tick_ns: u64,
    /// Terminals with data, a burst on the air, packets in the delay line or drops to report.
    busy: TerminalSet,
    input_slack_ns: u64,
    demands: Vec<Demand>,
    grants: Vec<Grant>,
    delivered_due: Vec<u64>,
}

impl ReturnBeam {
    /// The return beam of a validated configuration with `forward.beam` (`b`) and `return.dama`.
    pub fn new(cfg: &LinkConfig, b: &BeamConfig) -> Result<Self, ConfigError> {
        let c =
            cfg.return_.dama.as_ref().ok_or_else(|| {
                ConfigError::field("return.dama", "a return beam needs return.dama")
            })?;
        let n = b.terminals.len();
        let mut terms = Vec::with_capacity(n);
        for (k, t) in b.terminals.iter().enumerate() {
            let link = b.return_terminal_link(cfg, k);
            terms.push(Terminal {
                name: t.name.clone(),
                link: Direction::pooled_terminal(&link).map_err(|e| in_terminal(e, k, &t.name))?,
            });
        }
        let pool = Pool::new(
            c.carriers,
            c.timeslots_per_frame,
            c.frames_per_superframe,
            c.free_capacity,
        );
        let first = terms[0].link.dama().expect("pooled dama");
        // Each terminal's CRA in slots of its own initial MODCOD's bursts.
        let cra: u64 = terms
            .iter()
            .map(|t| u64::from(t.link.dama().expect("pooled dama").cra_slots()))
            .sum();
        if cra > u64::from(pool.slots()) {
            return Err(ConfigError::field(
                "return.dama.cra_kbps",
                format!(
                    "{} kbit/s for each of the {n} terminals of forward.beam take {cra} slots a \
                     superframe; the pool of {} carriers x {} timeslots x {} frames has {} (a \
                     terminal's CRA in bursts of its own MODCOD)",
                    c.cra_kbps,
                    c.carriers,
                    c.timeslots_per_frame,
                    c.frames_per_superframe,
                    pool.slots()
                ),
            ));
        }
        let contention = c
            .contention
            .as_ref()
            .map(|k| ContentionSlots::new(k.slots_per_superframe));
        let next_tick_ns = first.next_tick_ns();
        let input_slack_ns = terminal_links::least_input_slack_ns(terms.iter().map(|t| &t.link));
        let prefixes: Vec<_> = (0..n).map(|k| b.prefixes(k)).collect();
        Ok(ReturnBeam {
            terms,
            table: PrefixTable::new(&prefixes),
            pool,
            contention,
            next_tick_ns,
            busy: TerminalSet::new(n),
            input_slack_ns,
            demands: Vec::with_capacity(n),
            grants: Vec::with_capacity(n),
            delivered_due: Vec::new(),
        })
    }

    /// A packet offered at `now_ns`, queued at the terminal its source belongs to.
    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        let k = self.terminal_of(&frame);
        self.advance(now_ns);
        self.terms[k].link.enqueue(now_ns, frame);
        self.busy.insert(k);
    }

    /// Advances the model to `now_ns` and appends every outcome whose time has come.
    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        self.advance(now_ns);
        self.delivered_due.clear();
        let mut k = 0;
        while let Some(j) = self.busy.next_from(k) {
            let link = &mut self.terms[j].link;
            link.poll(now_ns, out);
            self.delivered_due
                .extend_from_slice(link.delivered_due_ns());
            self.busy.set(j, !link.is_idle());
            k = j + 1;
        }
    }

    /// Runs every superframe start up to `now_ns`: each terminal's requests, the controller's
    /// division of the pool and the contention slots' collisions, each terminal's grant.
    fn advance(&mut self, now_ns: u64) {
        while self.next_tick_ns <= now_ns {
            let t = self.next_tick_ns;
            self.demands.clear();
            for term in &mut self.terms {
                self.demands.push(term.link.dama_request(t));
            }
            self.pool.grant(&self.demands, &mut self.grants);
            if let Some(c) = self.contention.as_mut() {
                c.collide(&self.demands, &mut self.grants);
            }
            for (k, (term, &g)) in self.terms.iter_mut().zip(&self.grants).enumerate() {
                term.link.dama_grant(t, g);
                self.busy.set(k, !term.link.is_idle());
            }
            self.next_tick_ns = self.terms[0]
                .link
                .dama()
                .expect("pooled dama")
                .next_tick_ns();
        }
    }

    /// The model's delivery time of each packet the last `poll` delivered.
    pub fn delivered_due_ns(&self) -> &[u64] {
        &self.delivered_due
    }

    /// The earliest of the busy terminals' wake-up times and the next superframe start.
    pub fn next_wakeup_ns(&self) -> Option<u64> {
        self.earliest(Direction::next_wakeup_ns)
    }

    /// The earliest of the busy terminals' due times and the next superframe start.
    pub fn next_due_ns(&self) -> Option<u64> {
        self.earliest(Direction::next_due_ns)
    }

    fn earliest(&self, f: fn(&Direction) -> Option<u64>) -> Option<u64> {
        let mut t = self.next_tick_ns;
        let mut k = 0;
        while let Some(j) = self.busy.next_from(k) {
            t = f(&self.terms[j].link).map_or(t, |d| d.min(t));
            k = j + 1;
        }
        Some(t)
    }

    pub fn input_slack_ns(&self) -> u64 {
        self.input_slack_ns
    }

    /// Status: the first terminal's link, the queues, counters and DAMA requests and grants
    /// summed, each terminal's own (`frames`: its bursts).
    pub fn status(&self, now_ns: u64) -> DirectionStatus {
        let terms = self.terms.iter();
        let view = terms.map(|t| (t.name.as_str(), &t.link, t.link.link_totals().1));
        terminal_links::status(now_ns, view)
    }

    /// Live change at `now_ns`, applied to the terminal `cmd.terminal` names, or to every one.
    pub fn control(&mut self, now_ns: u64, cmd: &ControlCommand) -> Result<(), ConfigError> {
        let only = terminal_links::control_target(self.terms.iter().map(|t| t.name.as_str()), cmd)?;
        self.advance(now_ns);
        let links = self.terms.iter_mut().map(|t| &mut t.link);
        terminal_links::apply_control(links, only, now_ns, cmd)?;
        for (k, t) in self.terms.iter().enumerate() {
            self.busy.set(k, !t.link.is_idle());
        }
        self.input_slack_ns = terminal_links::least_input_slack_ns(self.links());
        Ok(())
    }

    fn links(&self) -> impl Iterator<Item = &Direction> {
        self.terms.iter().map(|t| &t.link)
    }

    /// GSE bytes and bursts sent so far, all terminals.
    pub fn link_totals(&self) -> (u64, u64) {
        terminal_links::totals(self.links())
    }

    /// Packets in the delay lines.
    pub fn in_flight(&self) -> usize {
        terminal_links::in_flight(self.links())
    }

    /// The terminal of a packet: the longest prefix holding its IPv4 source; none, or not IPv4:
    /// the first terminal.
    fn terminal_of(&self, frame: &[u8]) -> usize {
        ipv4_source(frame)
            .and_then(|src| self.table.lookup(src))
            .unwrap_or(0)
    }
}

/// The IPv4 source of an Ethernet frame (behind one optional 802.1Q tag); of an ARP packet
/// (Ethernet/IPv4, RFC 826), its sender protocol address (after the 8-byte header and the
/// sender's 6-byte hardware address).
fn ipv4_source(frame: &[u8]) -> Option<u32> {
    prefix_table::ipv4_address(frame, 12, 14)
}
