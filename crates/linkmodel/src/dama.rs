//! DAMA stage (part of the scheduler, `scheduler.rs`): which MF-TDMA timeslots the terminal may
//! send its DVB-RCS2 bursts in (`return.dama`, ETSI EN 301 545-2, the DVB-RCS2 lower layers).
//!
//! Time is cut into superframes of `frames_per_superframe` frames of `timeslots_per_frame` slots
//! (superframe 0 starts at time 0). At each superframe start:
//! 1. the terminal computes its capacity requests from its queue and sends them in-band (in the
//!    burst headers, so they take no slot of their own); a request reaches the gateway's DAMA
//!    controller, is scheduled and its grant (the TBTP) is back at the terminal
//!    `request_delay` superframes later;
//! 2. the controller grants this superframe's slots, in order: CRA (constant, no request), RBDC
//!    (the last rate request, held until `rbdc_timeout_superframes` after it arrived), VBDC (the
//!    volume requested and not granted yet), then, with `free_capacity`, every slot left.
//!
//! The terminal's requests (an approximation of OpenSAND's legacy DAMA agent):
//! - RBDC = the bytes that arrived in the last superframe as a rate + the backlog drained over one
//!   request round trip - CRA, within [0, `rbdc_max_kbps`]; a zero request is not sent, so a
//!   granted rate lapses only at its timeout;
//! - VBDC = the backlog not covered by volume already asked for nor by CRA + RBDC over one round
//!   trip, at most `vbdc_max_bytes`.
//!
//! With `contention`, a request of a terminal that had no granted slot in the last superframe
//! (no burst to carry it in-band) goes in one of the superframe's `slots_per_superframe`
//! contention slots, picked at random (slotted ALOHA; config.rs, ContentionConfig). It is lost if
//! another request shares the slot: one of the beam's other terminals (on a return beam,
//! `dama_pool.rs` finds them and the grant says so) or one of the `background_load` requests
//! per slot of terminals outside the emulated set (Poisson: present with probability
//! 1 - exp(-background_load)). So with n of the beam's terminals contending in k slots a request
//! gets through with probability (1 - 1/k)^(n-1) x exp(-background_load).
//!
//! The grant is spread evenly over the superframe's frames, each frame's granted slots first (on
//! a return beam, from the timeslot the controller gives the terminal on: `dama_pool.rs`).
//! One burst per slot; a slot's payload is the burst's at the terminal's MODCOD (RCS2 waveform
//! table). Rates are turned into slots with a fractional carry, so CRA over a long run is exact.
//! One terminal alone has the slots of one carrier; on a return beam (`return_beam.rs`) the
//! terminals share the pool of `carriers` x `timeslots_per_frame` slots per frame, each on one
//! carrier at a time (at most `timeslots_per_frame` per frame). There a tick is split in two:
//! [`Dama::request`] (the terminal's requests, what it may be granted) and [`Dama::set_grant`]
//! (the shared controller's decision).

use std::collections::VecDeque;

use crate::config::{ConfigError, ContentionConfig, DamaConfig};
use crate::rng::Rng;
use crate::types::DamaStatus;

/// A capacity request on its way to the gateway.
#[derive(Debug, Clone, Copy)]
struct Request {
    /// Superframe whose grant it first shapes.
    effective_sf: u64,
    /// RBDC rate asked for, bit/s (`None`: no RBDC request in this superframe).
    rbdc_bps: Option<f64>,
    vbdc_bytes: u64,
}

/// Contention access of the terminal's requests (slotted ALOHA: the beam's other terminals and
/// a background load of terminals outside the emulated set).
#[derive(Debug)]
struct Contention {
    /// Contention slots per superframe.
    slots: u32,
    /// Probability that no request of the background load is in a slot: exp(-background_load).
    p_no_background: f64,
    backoff_sf: u32,
    rng: Rng,
    /// The first superframe the terminal may try again after a collision.
    next_try_sf: u64,
    attempts: u64,
    collisions: u64,
    /// Of the collisions, those with another of the beam's terminals (whether or not the
    /// background load was in the slot too); the rest met only the background load.
    beam_collisions: u64,
}

impl Contention {
    fn new(c: &ContentionConfig, rng: Rng) -> Self {
        Contention {
            slots: c.slots_per_superframe,
            p_no_background: (-c.background_load).exp(),
            backoff_sf: c.backoff_superframes,
            rng,
            next_try_sf: 0,
            attempts: 0,
            collisions: 0,
            beam_collisions: 0,
        }
    }

    /// A request to send in superframe `sf`: the contention slot it goes in, or `None` (backing
    /// off after a collision: no try this superframe).
    fn pick_slot(&mut self, sf: u64) -> Option<u32> {
        if sf < self.next_try_sf {
            return None;
        }
        self.attempts += 1;
        let slot = (self.rng.f64() * f64::from(self.slots)) as u32;
        Some(slot.min(self.slots - 1))
    }

    /// Whether the request sent in superframe `sf` reaches the gateway: it did not share its
    /// slot with another of the beam's terminals (`beam_collision`) nor with the background
    /// load. After a collision the terminal waits a uniform 0..=`backoff_sf` superframes more.
    fn got_through(&mut self, sf: u64, beam_collision: bool) -> bool {
        // Drawn even after a beam collision, so one terminal's stream does not depend on the
        // others' choices of slot.
        let background_free = self.rng.f64() < self.p_no_background;
        if background_free && !beam_collision {
            return true;
        }
        self.collisions += 1;
        self.beam_collisions += u64::from(beam_collision);
        let wait = (self.rng.f64() * (self.backoff_sf + 1) as f64) as u64;
        self.next_try_sf = sf + 1 + wait;
        false
    }
}

/// Slots granted in one superframe, by capacity category.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Grant {
    pub(crate) cra: u32,
    pub(crate) rbdc: u32,
    pub(crate) vbdc: u32,
    pub(crate) fca: u32,
    /// The timeslot (in each frame) where the terminal's run of slots starts; a run that passes
    /// the frame's last slot goes on at its first (on the next carrier of a shared pool,
    /// `return_beam.rs`), so the terminal never has two slots at once. 0 for one terminal.
    pub(crate) first_slot: u32,
    /// The frame where the slots that do not divide evenly over the frames start (they go to
    /// this frame and the next ones, wrapping), so a pool's remainders spread over its frames.
    /// 0 for one terminal.
    pub(crate) first_frame: u32,
    /// The terminal's request of this superframe went in a contention slot that another of the
    /// beam's terminals also sent in (`dama_pool.rs`, ContentionSlots): it is lost. Always
    /// false for one terminal (its contention meets the background load only).
    pub(crate) request_collided: bool,
}

/// What a terminal may be granted in one superframe, by category, before a shared pool is
/// divided (`return_beam.rs`): CRA and RBDC from their rates (fractional carry), VBDC from the
/// volume outstanding, each within the terminal's own slots (one carrier at a time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Demand {
    pub(crate) cra: u32,
    pub(crate) rbdc: u32,
    pub(crate) vbdc: u32,
    /// The contention slot the terminal's request went out in this superframe (`None`: no
    /// request, sent in-band, or backing off).
    pub(crate) contention_slot: Option<u32>,
}

impl Grant {
    pub(crate) fn total(&self) -> u32 {
        self.cra + self.rbdc + self.vbdc + self.fca
    }
}

/// A terminal's `n` granted slots in one frame of `s` timeslots, from timeslot `first` on and
/// wrapping to timeslot 0 (`n` <= `s`: all at different times). In time order, the wrapped
/// `w` = first + n - s slots (timeslots 0..w) come first, then timeslots first..s.
struct RunOfSlots {
    first: u32,
    n: u32,
    w: u32,
}

impl RunOfSlots {
    fn new(first: u32, n: u32, s: u32) -> Self {
        RunOfSlots {
            first,
            n,
            w: (first + n).saturating_sub(s),
        }
    }

    /// The timeslot of the run's `j`-th slot in time order.
    fn timeslot(&self, j: u32) -> u32 {
        if j < self.w {
            j
        } else {
            self.first + j - self.w
        }
    }

    /// The index (in time order) of the run's first slot at or after timeslot `t`.
    fn index_from(&self, t: u64) -> u64 {
        let (first, w) = (u64::from(self.first), u64::from(self.w));
        if t < w {
            t
        } else if t <= first {
            w
        } else {
            w + t - first
        }
    }
}

/// The DAMA state of the terminal and the gateway's controller for it.
#[derive(Debug)]
pub(crate) struct Dama {
    frame_ns: f64,
    slot_ns: f64,
    frames: u32,
    slots_per_frame: u32,
    cra_bps: f64,
    rbdc_max_bps: f64,
    rbdc_timeout_sf: u64,
    vbdc_max_bytes: u64,
    request_delay_sf: u64,
    free_capacity: bool,
    contention: Option<Contention>,
    /// The request sent in a contention slot this superframe, until the grant says whether it
    /// collided with another of the beam's terminals ([`Dama::set_grant`]).
    contending: Option<(Request, u32)>,
    /// The current superframe (`None` before the first tick).
    sf: Option<u64>,
    // Terminal side.
    arrived_bytes: u64,
    /// VBDC volume asked for and not granted yet.
    vbdc_pending_bytes: u64,
    in_flight: VecDeque<Request>,
    last_rbdc_request_bps: f64,
    last_vbdc_request_bytes: u64,
    // Controller side.
    rbdc_bps: f64,
    rbdc_expires_sf: u64,
    vbdc_outstanding_bytes: u64,
    cra_carry: f64,
    rbdc_carry: f64,
    // This superframe's grant and the next unused granted slot (frame, slot in frame).
    grant: Grant,
    slot_bytes: u32,
    next_slot: (u32, u32),
}

impl Dama {
    /// Builds the DAMA stage of the return direction (`p` = `return`). `burst_ns` is one burst's
    /// duration; `slot_bytes` the payload of a burst at the terminal's initial MODCOD;
    /// `two_way_delay_ns` the return + forward propagation delay at the start; `rng` the
    /// contention stream.
    pub(crate) fn build(
        c: &DamaConfig,
        p: &str,
        burst_ns: f64,
        slot_bytes: u32,
        two_way_delay_ns: u64,
        rng: Rng,
    ) -> Result<Self, ConfigError> {
        let frame_ns = c.frame_duration_ms * 1e6;
        let slot_ns = frame_ns / c.timeslots_per_frame as f64;
        if burst_ns > slot_ns {
            return Err(ConfigError::field(
                format!("{p}.dama.timeslots_per_frame"),
                format!(
                    "{} slots of {:.1} us do not hold a burst of {:.1} us (burst_symbols / \
                     symbol_rate_baud): at most {} slots fit a {} ms frame",
                    c.timeslots_per_frame,
                    slot_ns / 1e3,
                    burst_ns / 1e3,
                    (frame_ns / burst_ns).floor() as u64,
                    c.frame_duration_ms
                ),
            ));
        }
        let sf_s = frame_ns * c.frames_per_superframe as f64 / 1e9;
        let slot_bits = slot_bytes as f64 * 8.0;
        let max_kbps =
            slot_bits * (c.timeslots_per_frame * c.frames_per_superframe) as f64 / sf_s / 1e3;
        if c.cra_kbps > max_kbps {
            return Err(ConfigError::field(
                format!("{p}.dama.cra_kbps"),
                format!(
                    "{} kbit/s does not fit the superframe: the terminal's {} slots per frame of \
                     {slot_bytes} bytes carry at most {max_kbps:.1} kbit/s",
                    c.cra_kbps, c.timeslots_per_frame
                ),
            ));
        }
        let sf_ns = frame_ns * c.frames_per_superframe as f64;
        let request_delay_sf = match c.request_delay_superframes {
            Some(d) => u64::from(d),
            None => {
                (two_way_delay_ns as f64 / sf_ns).ceil() as u64
                    + u64::from(c.scheduling_delay_superframes)
            }
        }
        .max(1);
        Ok(Dama {
            frame_ns,
            slot_ns,
            frames: c.frames_per_superframe,
            slots_per_frame: c.timeslots_per_frame,
            cra_bps: c.cra_kbps * 1e3,
            rbdc_max_bps: c.rbdc_max_kbps * 1e3,
            rbdc_timeout_sf: u64::from(c.rbdc_timeout_superframes),
            vbdc_max_bytes: c.vbdc_max_bytes,
            request_delay_sf,
            free_capacity: c.free_capacity,
            contention: c.contention.as_ref().map(|k| Contention::new(k, rng)),
            contending: None,
            sf: None,
            arrived_bytes: 0,
            vbdc_pending_bytes: 0,
            in_flight: VecDeque::new(),
            last_rbdc_request_bps: 0.0,
            last_vbdc_request_bytes: 0,
            rbdc_bps: 0.0,
            rbdc_expires_sf: 0,
            vbdc_outstanding_bytes: 0,
            cra_carry: 0.0,
            rbdc_carry: 0.0,
            grant: Grant::default(),
            slot_bytes,
            next_slot: (0, 0),
        })
    }

    fn sf_ns(&self) -> f64 {
        self.frame_ns * self.frames as f64
    }

    fn sf_start_ns(&self, sf: u64) -> u64 {
        (sf as f64 * self.sf_ns()).round() as u64
    }

    /// Start of the next superframe (the next tick).
    pub(crate) fn next_tick_ns(&self) -> u64 {
        self.sf_start_ns(self.sf.map_or(0, |s| s + 1))
    }

    /// A packet of `len` bytes joined the terminal's queue.
    pub(crate) fn arrived(&mut self, len: usize) {
        self.arrived_bytes += len as u64;
    }

    /// The next superframe starts: the terminal sends its requests for a backlog of
    /// `backlog_bytes`, the controller grants this superframe's slots of `slot_bytes` each.
    pub(crate) fn tick(&mut self, backlog_bytes: u64, slot_bytes: u32) {
        let d = self.request(backlog_bytes, slot_bytes);
        let fca = if self.free_capacity {
            self.capacity() - d.cra - d.rbdc - d.vbdc
        } else {
            0
        };
        self.set_grant(Grant {
            cra: d.cra,
            rbdc: d.rbdc,
            vbdc: d.vbdc,
            fca,
            first_slot: 0,
            first_frame: 0,
            request_collided: false,
        });
    }

    /// The first half of a superframe tick: the terminal's requests go out, those due reach the
    /// controller; returns what the terminal may be granted ([`Dama::set_grant`] gives the grant).
    pub(crate) fn request(&mut self, backlog_bytes: u64, slot_bytes: u32) -> Demand {
        let sf = self.sf.map_or(0, |s| s + 1);
        self.sf = Some(sf);
        self.slot_bytes = slot_bytes;
        self.send_requests(sf, backlog_bytes);
        self.receive_requests(sf);
        self.demand()
    }

    /// The terminal's slots in a superframe (one carrier at a time).
    pub(crate) fn capacity(&self) -> u32 {
        self.slots_per_frame * self.frames
    }

    /// Slots the CRA takes in a superframe at most (rounded up).
    pub(crate) fn cra_slots(&self) -> u32 {
        (self.cra_bps * self.sf_ns() / 1e9 / (self.slot_bytes as f64 * 8.0)).ceil() as u32
    }

    fn send_requests(&mut self, sf: u64, backlog_bytes: u64) {
        let sf_s = self.sf_ns() / 1e9;
        let rtt_s = self.request_delay_sf as f64 * sf_s;
        let in_rate = self.arrived_bytes as f64 * 8.0 / sf_s;
        self.arrived_bytes = 0;
        let rbdc = if self.rbdc_max_bps > 0.0 {
            (in_rate + backlog_bytes as f64 * 8.0 / rtt_s - self.cra_bps)
                .clamp(0.0, self.rbdc_max_bps)
        } else {
            0.0
        };
        let covered = ((self.cra_bps + rbdc) * rtt_s / 8.0) as u64 + self.vbdc_pending_bytes;
        let vbdc = backlog_bytes
            .saturating_sub(covered)
            .min(self.vbdc_max_bytes);
        self.last_rbdc_request_bps = rbdc;
        self.last_vbdc_request_bytes = vbdc;
        if rbdc == 0.0 && vbdc == 0 {
            return;
        }
        let r = Request {
            effective_sf: sf + self.request_delay_sf,
            rbdc_bps: (rbdc > 0.0).then_some(rbdc),
            vbdc_bytes: vbdc,
        };
        // In-band when the last superframe's grant gave the terminal a burst to carry it in;
        // else, with contention access, in a contention slot (the outcome comes with the grant).
        match &mut self.contention {
            Some(c) if self.grant.total() == 0 => self.contending = c.pick_slot(sf).map(|s| (r, s)),
            _ => self.dispatch(r),
        }
    }

    /// A request reaches the controller `request_delay_sf` after it left.
    fn dispatch(&mut self, r: Request) {
        self.vbdc_pending_bytes += r.vbdc_bytes;
        self.in_flight.push_back(r);
    }

    /// The request sent in a contention slot this superframe, if any: on its way to the
    /// controller unless it collided (`beam_collision`: with another of the beam's terminals).
    fn settle_contention(&mut self, beam_collision: bool) {
        let (Some((r, _)), Some(c), Some(sf)) =
            (self.contending.take(), self.contention.as_mut(), self.sf)
        else {
            return;
        };
        if c.got_through(sf, beam_collision) {
            self.dispatch(r);
        }
    }

    fn receive_requests(&mut self, sf: u64) {
        while let Some(r) = self.in_flight.front().filter(|r| r.effective_sf <= sf) {
            if let Some(rate) = r.rbdc_bps {
                self.rbdc_bps = rate;
                self.rbdc_expires_sf = r.effective_sf + self.rbdc_timeout_sf;
            }
            self.vbdc_outstanding_bytes += r.vbdc_bytes;
            self.in_flight.pop_front();
        }
        if sf >= self.rbdc_expires_sf {
            self.rbdc_bps = 0.0;
        }
    }

    fn demand(&mut self) -> Demand {
        let capacity = self.capacity();
        let slot_bits = self.slot_bytes as f64 * 8.0;
        let sf_s = self.sf_ns() / 1e9;
        let want = |carry: &mut f64, rate_bps: f64, room: u32| -> u32 {
            *carry += rate_bps * sf_s / slot_bits;
            (carry.floor() as u32).min(room)
        };
        let cra = want(&mut self.cra_carry, self.cra_bps, capacity);
        let rbdc = if self.rbdc_bps > 0.0 {
            want(&mut self.rbdc_carry, self.rbdc_bps, capacity - cra)
        } else {
            self.rbdc_carry = 0.0;
            0
        };
        let wanted = self
            .vbdc_outstanding_bytes
            .div_ceil(u64::from(self.slot_bytes));
        let vbdc = wanted.min(u64::from(capacity - cra - rbdc)) as u32;
        Demand {
            cra,
            rbdc,
            vbdc,
            contention_slot: self.contending.map(|(_, s)| s),
        }
    }

    /// The second half of a superframe tick: the controller's grant `g` (at most the
    /// [`Demand`] in CRA, RBDC and VBDC; a carry keeps at most one slot a rate was not granted),
    /// and the fate of this superframe's contention request.
    pub(crate) fn set_grant(&mut self, g: Grant) {
        // Before the grant's volume is taken off: a request that gets through counts as
        // pending from the superframe it was sent in, as an in-band one does.
        self.settle_contention(g.request_collided);
        self.cra_carry = (self.cra_carry - g.cra as f64).min(1.0);
        self.rbdc_carry = (self.rbdc_carry - g.rbdc as f64).min(1.0);
        let volume =
            (u64::from(g.vbdc) * u64::from(self.slot_bytes)).min(self.vbdc_outstanding_bytes);
        self.vbdc_outstanding_bytes -= volume;
        self.vbdc_pending_bytes = self.vbdc_pending_bytes.saturating_sub(volume);
        self.grant = g;
        self.next_slot = (0, 0);
    }

    /// Slots granted in frame `f` of the current superframe.
    fn frame_slots(&self, f: u32) -> u32 {
        let g = self.grant.total();
        let turn = (f + self.frames - self.grant.first_frame % self.frames) % self.frames;
        g / self.frames + u32::from(turn < g % self.frames)
    }

    /// Takes the first unused granted slot starting at or after `t_ns` in the current
    /// superframe; its start time, or `None` (wait for the next superframe's grant).
    pub(crate) fn take_slot(&mut self, t_ns: u64) -> Option<u64> {
        let sf = self.sf?;
        let sf_start = sf as f64 * self.sf_ns();
        let (f0, j0) = self.next_slot;
        for f in f0..self.frames {
            let frame_start = sf_start + f as f64 * self.frame_ns;
            let first = if f == f0 { j0 } else { 0 };
            let due = ((t_ns as f64 - frame_start) / self.slot_ns).ceil().max(0.0) as u64;
            let run = RunOfSlots::new(
                self.grant.first_slot,
                self.frame_slots(f),
                self.slots_per_frame,
            );
            let j = u64::from(first).max(run.index_from(due));
            if j < u64::from(run.n) {
                let j = j as u32;
                self.next_slot = (f, j + 1);
                let at = run.timeslot(j) as f64 * self.slot_ns;
                // Never before t_ns (rounding of a slot that starts exactly at t_ns).
                return Some(((frame_start + at).round() as u64).max(t_ns));
            }
        }
        self.next_slot = (self.frames, 0);
        None
    }

    /// This superframe's requests and grant (status / telemetry).
    pub(crate) fn status(&self) -> DamaStatus {
        let sf_s = self.sf_ns() / 1e9;
        let kbps = |slots: u32| slots as f64 * self.slot_bytes as f64 * 8.0 / sf_s / 1e3;
        DamaStatus {
            superframe: self.sf.unwrap_or(0),
            request_delay_superframes: self.request_delay_sf,
            slot_bytes: self.slot_bytes,
            requested_rbdc_kbps: self.last_rbdc_request_bps / 1e3,
            requested_vbdc_bytes: self.last_vbdc_request_bytes,
            granted_slots: self.grant.total(),
            granted_kbps: kbps(self.grant.total()),
            cra_kbps: kbps(self.grant.cra),
            rbdc_kbps: kbps(self.grant.rbdc),
            vbdc_kbps: kbps(self.grant.vbdc),
            fca_kbps: kbps(self.grant.fca),
            contention_attempts: self.contention.as_ref().map_or(0, |c| c.attempts),
            contention_collisions: self.contention.as_ref().map_or(0, |c| c.collisions),
            contention_beam_collisions: self.contention.as_ref().map_or(0, |c| c.beam_collisions),
        }
    }

    #[cfg(test)]
    pub(crate) fn grant(&self) -> Grant {
        self.grant
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 slots per 10 ms frame of 100 bytes: 80 kbit/s per slot-per-frame, 800 kbit/s in all.
    fn cfg() -> DamaConfig {
        DamaConfig {
            carriers: 1,
            timeslots_per_frame: 10,
            frame_duration_ms: 10.0,
            frames_per_superframe: 1,
            cra_kbps: 0.0,
            rbdc_max_kbps: 0.0,
            rbdc_timeout_superframes: 5,
            vbdc_max_bytes: 0,
            request_delay_superframes: Some(4),
            scheduling_delay_superframes: 1,
            free_capacity: false,
            contention: None,
        }
    }

    fn build(c: &DamaConfig) -> Dama {
        Dama::build(c, "return", 500_000.0, 100, 500_000_000, Rng::new(7)).unwrap()
    }

    /// Runs `n` superframes with a constant backlog; the slots granted in each.
    fn run(d: &mut Dama, n: usize, backlog: u64) -> Vec<u32> {
        (0..n)
            .map(|_| {
                d.tick(backlog, 100);
                d.grant().total()
            })
            .collect()
    }

    #[test]
    fn cra_only_grants_exactly_cra() {
        // 200 kbit/s = 2.5 slots of 800 bits per 10 ms: 2 and 3 alternately, whatever the backlog.
        let mut d = build(&DamaConfig {
            cra_kbps: 200.0,
            ..cfg()
        });
        let slots = run(&mut d, 1000, 1_000_000);
        let bits: u64 = slots.iter().map(|&s| u64::from(s) * 800).sum();
        assert_eq!(
            bits,
            200_000 * 10,
            "1000 superframes of 10 ms = 10 s at CRA"
        );
        assert!(slots.iter().all(|&s| s == 2 || s == 3), "{slots:?}");
        assert_eq!(d.grant().rbdc + d.grant().vbdc + d.grant().fca, 0);
    }

    #[test]
    fn rbdc_ramps_after_the_request_delay_and_lapses_after_the_timeout() {
        let mut d = build(&DamaConfig {
            rbdc_max_kbps: 400.0,
            ..cfg()
        });
        // Backlog from superframe 0: the request sent at 0 is effective at 4.
        let busy = run(&mut d, 8, 1_000_000);
        assert_eq!(busy, [0, 0, 0, 0, 5, 5, 5, 5], "400 kbit/s = 5 slots");
        // The queue empties at superframe 8: no more requests; the last one (sent at 7, effective
        // at 11) holds until 11 + 5 = 16.
        let idle = run(&mut d, 10, 0);
        assert_eq!(idle, [5, 5, 5, 5, 5, 5, 5, 5, 0, 0]);
        assert_eq!(d.status().requested_rbdc_kbps, 0.0);
    }

    #[test]
    fn rbdc_request_is_capped_at_its_maximum() {
        let mut d = build(&DamaConfig {
            rbdc_max_kbps: 10_000.0,
            ..cfg()
        });
        let slots = run(&mut d, 6, 10_000_000);
        assert_eq!(slots[5], 10, "at most the terminal's 10 slots per frame");
        assert_eq!(d.status().requested_rbdc_kbps, 10_000.0);
    }

    #[test]
    fn vbdc_drains_the_requested_volume() {
        let mut d = build(&DamaConfig {
            vbdc_max_bytes: 100_000,
            ..cfg()
        });
        // 2500 bytes waiting once: one request of 2500 bytes, granted as 25 slots from
        // superframe 4 on (10 per superframe), then nothing.
        d.tick(2500, 100);
        let mut slots = vec![d.grant().total()];
        // The terminal's queue keeps its 2500 bytes until it sends: no second request.
        slots.extend(run(&mut d, 3, 2500));
        slots.extend(run(&mut d, 5, 0));
        assert_eq!(slots, [0, 0, 0, 0, 10, 10, 5, 0, 0]);
    }

    #[test]
    fn free_capacity_fills_the_frame_only_when_on() {
        let on = run(
            &mut build(&DamaConfig {
                cra_kbps: 80.0,
                free_capacity: true,
                ..cfg()
            }),
            3,
            0,
        );
        assert_eq!(on, [10, 10, 10]);
        let off = run(
            &mut build(&DamaConfig {
                cra_kbps: 80.0,
                ..cfg()
            }),
            3,
            0,
        );
        assert_eq!(off, [1, 1, 1]);
    }

    #[test]
    fn slots_are_spread_over_the_frames_and_used_once() {
        let mut d = build(&DamaConfig {
            frames_per_superframe: 2,
            cra_kbps: 120.0, // 120 kbit/s x 20 ms = 2400 bits = 3 slots
            ..cfg()
        });
        d.tick(0, 100);
        assert_eq!(d.grant().total(), 3);
        // Frame 0: slots 0 and 1 (at 0 and 1 ms); frame 1: slot 0 (at 10 ms).
        assert_eq!(d.take_slot(0), Some(0));
        assert_eq!(d.take_slot(0), Some(1_000_000));
        assert_eq!(d.take_slot(500_000), Some(10_000_000));
        assert_eq!(d.take_slot(0), None);
        // A slot that has begun is not usable.
        d.tick(0, 100);
        assert_eq!(d.take_slot(20_000_001), Some(21_000_000));
    }

    #[test]
    fn a_run_of_slots_past_the_frames_end_wraps_to_its_start() {
        // 10 slots of 1 ms: a grant of 4 from timeslot 8 is at 0, 1, 8 and 9 ms.
        let mut d = build(&cfg());
        d.request(0, 100);
        d.set_grant(Grant {
            cra: 4,
            first_slot: 8,
            ..Grant::default()
        });
        let slots: Vec<Option<u64>> = (0..5).map(|_| d.take_slot(0)).collect();
        let ms = |t: u64| Some(t * 1_000_000);
        assert_eq!(slots, [ms(0), ms(1), ms(8), ms(9), None]);
        d.request(0, 100);
        d.set_grant(Grant {
            cra: 4,
            first_slot: 8,
            ..Grant::default()
        });
        assert_eq!(d.take_slot(10_000_000 + 1_500_000), Some(18_000_000));
    }

    #[test]
    fn errors_name_the_field() {
        let e = Dama::build(
            &DamaConfig {
                cra_kbps: 900.0,
                ..cfg()
            },
            "return",
            500_000.0,
            100,
            0,
            Rng::new(7),
        )
        .unwrap_err();
        assert!(e
            .to_string()
            .starts_with("return.dama.cra_kbps: 900 kbit/s does not fit"));
        let e = Dama::build(&cfg(), "return", 1_500_000.0, 100, 0, Rng::new(7)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("return.dama.timeslots_per_frame:"),
            "{e}"
        );
    }

    #[test]
    fn default_request_delay_is_the_two_way_delay_plus_scheduling() {
        let d = Dama::build(
            &DamaConfig {
                request_delay_superframes: None,
                ..cfg()
            },
            "return",
            500_000.0,
            100,
            505_000_000,
            Rng::new(7),
        )
        .unwrap();
        assert_eq!(d.request_delay_sf, 51 + 1);
    }

    /// An RBDC request every superframe (a backlog is always there) that no grant answers within
    /// the test (a request delay of 10 000 superframes), so each one goes through contention.
    fn contending(load: f64, backoff: u32) -> Dama {
        build(&DamaConfig {
            rbdc_max_kbps: 100.0,
            request_delay_superframes: Some(10_000),
            contention: Some(ContentionConfig {
                slots_per_superframe: 4,
                background_load: load,
                backoff_superframes: backoff,
            }),
            ..cfg()
        })
    }

    #[test]
    fn contention_loses_requests_at_the_slotted_aloha_rate() {
        let mut d = contending(1.0, 0);
        for _ in 0..4000 {
            d.tick(10_000, 100);
        }
        let st = d.status();
        assert_eq!(
            st.contention_attempts, 4000,
            "no backoff: a try every superframe"
        );
        let lost = st.contention_collisions as f64 / st.contention_attempts as f64;
        // 1 - exp(-1) = 0.632; 4000 Bernoulli draws: sd 0.008, five of them allowed.
        assert!((lost - 0.632).abs() < 0.04, "{lost}");
        assert_eq!(
            st.contention_beam_collisions, 0,
            "alone: background losses only"
        );
        // Only the requests that got through are in flight to the gateway.
        assert_eq!(d.in_flight.len() as u64, 4000 - st.contention_collisions);
    }

    #[test]
    fn a_request_that_shared_its_slot_with_another_terminals_is_lost() {
        // No background load: only the beam's own terminals (the grant says so) collide.
        let mut d = contending(0.0, 0);
        let slot = d.request(10_000, 100).contention_slot;
        assert!(slot.is_some_and(|s| s < 4), "{slot:?}");
        d.set_grant(Grant {
            request_collided: true,
            ..Grant::default()
        });
        assert!(d.in_flight.is_empty());
        assert!(d.request(10_000, 100).contention_slot.is_some());
        d.set_grant(Grant::default());
        assert_eq!(d.in_flight.len(), 1, "alone in its slot: through");
        let st = d.status();
        assert_eq!((st.contention_attempts, st.contention_collisions), (2, 1));
        assert_eq!(
            st.contention_beam_collisions, 1,
            "the one loss was the beam's"
        );
    }

    #[test]
    fn a_terminal_picks_each_contention_slot_alike() {
        // 4000 picks over 4 slots: 1000 each, sd 27; five of them allowed.
        let mut d = contending(0.0, 0);
        let mut picks = [0u32; 4];
        for _ in 0..4000 {
            let s = d.request(10_000, 100).contention_slot.expect("a try");
            picks[s as usize] += 1;
            d.set_grant(Grant::default());
        }
        assert!(picks.iter().all(|&n| n.abs_diff(1000) < 137), "{picks:?}");
    }

    #[test]
    fn after_a_collision_the_terminal_backs_off() {
        // Every request collides (exp(-20) = 2e-9): after a try the next superframe plus a
        // uniform 0..=4 superframes of wait, 1 + 2 = 3 superframes a try on average (1000
        // intervals of sd 1.4: sd of the mean 0.05, six of them allowed).
        let mut d = contending(20.0, 4);
        for _ in 0..3000 {
            d.tick(10_000, 100);
        }
        let st = d.status();
        assert_eq!(st.contention_attempts, st.contention_collisions);
        let per_try = 3000.0 / st.contention_attempts as f64;
        assert!((per_try - 3.0).abs() < 0.3, "{per_try} superframes a try");
    }

    #[test]
    fn a_terminal_with_a_grant_sends_its_requests_in_band() {
        // CRA gives a slot every superframe: no request needs a contention slot.
        let mut d = build(&DamaConfig {
            cra_kbps: 80.0,
            rbdc_max_kbps: 800.0,
            contention: Some(ContentionConfig {
                background_load: 20.0,
                ..ContentionConfig::default()
            }),
            ..cfg()
        });
        d.tick(10_000, 100); // the first superframe: no grant yet, a contention try
        for _ in 0..100 {
            d.tick(10_000, 100);
        }
        assert_eq!(d.status().contention_attempts, 1);
    }
}
