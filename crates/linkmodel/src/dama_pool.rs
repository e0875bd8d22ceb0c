//! The gateway's DAMA controller of a return beam (`return_beam.rs`): once a superframe it
//! divides the MF-TDMA pool (`carriers` x `timeslots_per_frame` x `frames_per_superframe` slots)
//! among the terminals' [`Demand`]s, category by category: CRA for every terminal first, then
//! RBDC, then VBDC, then (with `free_capacity`) every slot left, each terminal within its own
//! `timeslots_per_frame` per frame (it sends on one carrier at a time).
//!
//! EN 301 545-2 (the DVB-RCS2 lower layers: its capacity request categories) fixes the categories
//! and their order of precedence but leaves the division of a short pool to the operator's NCC. OpenSAND's legacy controller
//! (DamaCtrlRcsLegacy) cuts every RBDC request by one ratio (request x capacity / total) and
//! serves VBDC largest request first, whole, which can leave a small requester with nothing for
//! as long as a large one keeps asking. Here each category is divided max-min fairly: when the
//! requests do not fit, every terminal gets min(its request, L) for the largest level L that
//! fits, and the few slots left over (fewer than the terminals that wanted more than L) go one
//! each in turn from a terminal that rotates every superframe. So a terminal that asks for less
//! than an equal share gets all of it, nobody is starved, and a tie never favours the same
//! terminal twice in a row.
//!
//! Where the slots lie: within a frame, terminal after terminal (in configuration order) takes a
//! run of consecutive timeslots, wrapping from the last timeslot of one carrier to the first of
//! the next, so the bursts of different terminals are spread over the frame and a terminal never
//! has two slots at the same time. With several frames per superframe, the slots of a grant that
//! do not divide evenly over the frames go to consecutive frames, the next terminal's from where
//! the last one's stopped, so they spread over the superframe.
//!
//! With `contention`, the gateway also receives the superframe's contention slots
//! ([`ContentionSlots`]): a request alone among the beam's terminals in its slot can be decoded
//! (it may still meet the background load, `dama.rs`); two or more in one slot are all lost.

use crate::dama::{Demand, Grant};

/// The contention slots of a return beam's superframe, as the gateway receives them: the
/// requests the terminals sent there ([`Demand::contention_slot`]) collide when two or more
/// share a slot. Slotted ALOHA: bursts in one slot overlap whole, so none of them is decoded
/// (no capture effect).
#[derive(Debug)]
pub(crate) struct ContentionSlots {
    /// Scratch: requests sent in each slot this superframe.
    senders: Vec<u32>,
}

impl ContentionSlots {
    pub(crate) fn new(slots: u32) -> Self {
        ContentionSlots {
            senders: vec![0; slots as usize],
        }
    }

    /// Marks in `grants` (one per terminal, as `demands`) the requests that shared their slot.
    pub(crate) fn collide(&mut self, demands: &[Demand], grants: &mut [Grant]) {
        self.senders.fill(0);
        for s in demands.iter().filter_map(|d| d.contention_slot) {
            self.senders[s as usize] += 1;
        }
        for (d, g) in demands.iter().zip(grants) {
            g.request_collided = d
                .contention_slot
                .is_some_and(|s| self.senders[s as usize] > 1);
        }
    }
}

/// The pool and the controller's rotating start.
#[derive(Debug)]
pub(crate) struct Pool {
    /// Slots in a superframe, all carriers.
    slots: u32,
    /// Timeslots per frame on one carrier.
    per_frame: u32,
    frames: u32,
    /// A terminal's slots in a superframe (one carrier at a time).
    cap: u32,
    free_capacity: bool,
    /// The terminal the leftover slots go to first (rotates every superframe).
    start: usize,
    /// Scratch: what each terminal wants / gets in the category being divided.
    want: Vec<u32>,
    sorted: Vec<u32>,
    /// Scratch: whose want was cut to the level.
    cut: Vec<bool>,
}

impl Pool {
    pub(crate) fn new(carriers: u32, per_frame: u32, frames: u32, free_capacity: bool) -> Self {
        Pool {
            slots: carriers * per_frame * frames,
            per_frame,
            frames,
            cap: per_frame * frames,
            free_capacity,
            start: 0,
            want: Vec::new(),
            sorted: Vec::new(),
            cut: Vec::new(),
        }
    }

    /// Slots in a superframe, all carriers.
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// This superframe's grants for the terminals' `demands`, into `out`.
    pub(crate) fn grant(&mut self, demands: &[Demand], out: &mut Vec<Grant>) {
        let n = demands.len();
        out.clear();
        out.resize(n, Grant::default());
        let mut left = self.slots;
        left -= self.divide(demands, |d, _| d.cra, left, out, |g, s| g.cra = s);
        left -= self.divide(demands, |d, _| d.rbdc, left, out, |g, s| g.rbdc = s);
        left -= self.divide(demands, |d, _| d.vbdc, left, out, |g, s| g.vbdc = s);
        if self.free_capacity {
            let cap = self.cap;
            self.divide(demands, |_, g| cap - g.total(), left, out, |g, s| g.fca = s);
        }
        let (mut cursor, mut extra) = (0u64, 0u32);
        for g in out.iter_mut() {
            g.first_slot = (cursor % u64::from(self.per_frame)) as u32;
            cursor += u64::from(g.total().div_ceil(self.frames));
            g.first_frame = extra;
            extra = (extra + g.total() % self.frames) % self.frames;
        }
        self.start = if n == 0 { 0 } else { (self.start + 1) % n };
    }

    /// Divides at most `avail` slots among the terminals wanting `want(demand, grant so far)`
    /// (max-min fair, leftovers in turn from `start`); `set` records each one's share. Returns
    /// the slots given.
    fn divide(
        &mut self,
        demands: &[Demand],
        want: impl Fn(&Demand, &Grant) -> u32,
        avail: u32,
        out: &mut [Grant],
        set: impl Fn(&mut Grant, u32),
    ) -> u32 {
        self.want.clear();
        self.want
            .extend(demands.iter().zip(out.iter()).map(|(d, g)| want(d, g)));
        let total: u64 = self.want.iter().map(|&w| u64::from(w)).sum();
        if total > u64::from(avail) {
            self.level_off(avail);
        }
        for (g, &s) in out.iter_mut().zip(&self.want) {
            set(g, s);
        }
        total.min(u64::from(avail)) as u32
    }

    /// Cuts `want` to a max-min fair division of `avail` slots (the wants sum to more).
    fn level_off(&mut self, avail: u32) {
        self.sorted.clear();
        self.sorted.extend_from_slice(&self.want);
        self.sorted.sort_unstable();
        let n = self.sorted.len();
        let mut rest = u64::from(avail);
        let mut level = 0;
        for (i, &w) in self.sorted.iter().enumerate() {
            let m = (n - i) as u64;
            if u64::from(w) * m > rest {
                level = (rest / m) as u32;
                break;
            }
            rest -= u64::from(w);
        }
        let mut given = 0u64;
        self.cut.clear();
        for w in self.want.iter_mut() {
            self.cut.push(*w > level);
            *w = (*w).min(level);
            given += u64::from(*w);
        }
        // The leftover is less than the terminals cut to `level`: one each, in turn.
        let mut leftover = u64::from(avail) - given;
        let mut k = self.start;
        while leftover > 0 {
            if self.cut[k] {
                self.want[k] += 1;
                leftover -= 1;
            }
            k = (k + 1) % n;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(cra: u32, rbdc: u32, vbdc: u32) -> Demand {
        Demand {
            cra,
            rbdc,
            vbdc,
            contention_slot: None,
        }
    }

    #[test]
    fn a_short_pool_is_shared_max_min_fairly_and_leftovers_rotate() {
        // 1 carrier x 10 slots x 1 frame; RBDC wants 2, 9, 9: 2 + 4 + 4 = 10.
        let mut p = Pool::new(1, 10, 1, false);
        let mut out = Vec::new();
        p.grant(
            &[demand(0, 2, 0), demand(0, 9, 0), demand(0, 9, 0)],
            &mut out,
        );
        let rbdc: Vec<u32> = out.iter().map(|g| g.rbdc).collect();
        assert_eq!(rbdc, [2, 4, 4]);
        // 3 x 9 wanted, 10 slots: 3 each and the last slot in turn.
        let mut extra = [0; 3];
        for _ in 0..3 {
            p.grant(&[demand(0, 9, 0); 3], &mut out);
            assert_eq!(out.iter().map(|g| g.total()).sum::<u32>(), 10);
            for (k, g) in out.iter().enumerate() {
                extra[k] += g.rbdc - 3;
            }
        }
        assert_eq!(extra, [1, 1, 1]);
    }

    #[test]
    fn categories_go_in_order_and_free_capacity_fills_each_terminal() {
        // 2 carriers x 4 slots: CRA 2 + 2, then 4 slots left for RBDC 3 + 3.
        let mut p = Pool::new(2, 4, 1, true);
        let mut out = Vec::new();
        p.grant(&[demand(2, 3, 0), demand(2, 3, 0)], &mut out);
        assert_eq!((out[0].cra, out[1].cra), (2, 2));
        assert_eq!(out[0].rbdc + out[1].rbdc, 4);
        assert_eq!(out[0].fca + out[1].fca, 0);
        // One idle terminal: the other takes its 4 slots (a terminal's one carrier), no more.
        p.grant(&[demand(0, 0, 0), demand(0, 4, 0)], &mut out);
        assert_eq!(out[1].total(), 4);
        assert_eq!(out[0].fca, 4, "free capacity to the idle one");
        // Runs of slots: terminal 0 from timeslot 0, terminal 1 after it (wrapping).
        assert_eq!((out[0].first_slot, out[1].first_slot), (0, 0));
        p.grant(&[demand(1, 0, 0), demand(1, 0, 0)], &mut out);
        assert_eq!(out[0].first_slot, 0);
        assert_eq!(
            out[1].first_slot, 0,
            "4 slots of terminal 0 (fca) fill carrier 1"
        );
        let mut q = Pool::new(2, 4, 1, false);
        q.grant(&[demand(3, 0, 0), demand(2, 0, 0)], &mut out);
        assert_eq!((out[0].first_slot, out[1].first_slot), (0, 3));
    }

    #[test]
    fn remainder_slots_spread_over_the_frames() {
        // 2 frames: 3 slots each = 1 + 1 per frame + 1 remainder, in frame 0 then frame 1.
        let mut p = Pool::new(1, 4, 2, false);
        let mut out = Vec::new();
        p.grant(&[demand(3, 0, 0), demand(3, 0, 0)], &mut out);
        assert_eq!((out[0].first_frame, out[1].first_frame), (0, 1));
    }

    #[test]
    fn requests_sharing_a_contention_slot_collide_and_lone_ones_do_not() {
        // Slots of 5 terminals' requests: 0, 2, 2, none (in-band or backing off), 3.
        let slots = [Some(0), Some(2), Some(2), None, Some(3)];
        let demands: Vec<Demand> = slots
            .iter()
            .map(|&s| Demand {
                contention_slot: s,
                ..demand(0, 1, 0)
            })
            .collect();
        let mut grants = vec![Grant::default(); 5];
        grants[3].request_collided = true; // stale: every grant is marked afresh
        let mut c = ContentionSlots::new(4);
        c.collide(&demands, &mut grants);
        let lost: Vec<bool> = grants.iter().map(|g| g.request_collided).collect();
        assert_eq!(lost, [false, true, true, false, false]);
        // The next superframe counts afresh: terminal 1 moves to slot 1, both alone now.
        let mut next = demands.clone();
        next[1].contention_slot = Some(1);
        c.collide(&next, &mut grants);
        assert!(grants.iter().all(|g| !g.request_collided));
    }
}
