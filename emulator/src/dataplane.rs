//! One thread per direction: it owns the direction's `linkmodel::Model`, the input port's rx
//! half and the output port's tx half.
//!
//! Each loop: apply pending commands -> read every waiting frame in batches (complete partial
//! checksums, cut GSO super-packets, put back stripped VLAN tags) and `enqueue(now)` them ->
//! `poll(now)` -> send the delivered frames in one `sendmmsg` batch -> publish telemetry -> sleep
//! until the model next has something due (`next_due_ns`: a delivery or loss, not the end of a
//! frame on the air, which `enqueue`/`poll` replay) or until input arrives (epoll on the rx
//! socket, a timerfd armed a learnt lead before the deadline (`wake_lead`), then a short busy poll
//! to the deadline itself), so delivery times are met within a few microseconds without a core
//! spinning all the time. While input flows the socket is not watched: it is read at every wake-up and at least
//! every `rx_coalesce` (up to 1 ms when the link's fixed delay is longer; frames keep their
//! kernel receive times, so reading them later changes no outcome).
//!
//! Frame buffers are recycled through a per-thread pool: no allocation per packet in steady state.
//!
//! With `oracle_eten` configured, every outcome that is a corrupted or erased TCP data segment is
//! written to the sender host's notice map as it comes out of the model (`oracle`).

use crate::oracle::{self, Oracle};
use crate::release::ReleaseHistogram;
use crate::rt_guard::{self, RtGuard};
use crate::settings::EventLevel;
use crate::telemetry::{self, Event, EventKind, Msg};
use crate::vlans::StVlans;
use crate::wake_lead::WakeLead;
use linkmodel::{ControlCommand, Dir, DirectionStatus, LossCause, Model, Outcome};
use netio::port::{RxFrame, RxPort, TxPort, BATCH};
use netio::sys::{self, Clock, Notifier, Waiter};
use packet::ethernet;
use packet::offload::{self, Gso};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};
use std::sync::Arc;

/// Buffers kept for reuse per thread.
const POOL_MAX: usize = 16384;
/// Capacity of a fresh frame buffer (a 1500-byte MTU frame with two VLAN tags fits).
const FRAME_CAPACITY: usize = 1536;
/// Buffers that grew beyond this (jumbo frames) are not kept.
const POOL_KEEP_MAX: usize = 16384;
/// Receive batches per loop before the model is polled (bounds the latency of deliveries).
const RX_BATCHES_PER_LOOP: usize = 8;
/// Longest input is left unread while it flows (when the link's delay allows), ns.
const RX_COALESCE_MAX_NS: u64 = 1_000_000;
/// Input pause after a receive error (interface down or gone), ns.
const RX_ERROR_PAUSE_NS: u64 = 100_000_000;
/// How often a MODCOD change is looked for, ns.
const MODCOD_CHECK_NS: u64 = 1_000_000;

/// A request to a direction thread.
pub enum Cmd {
    /// Reply with the current status.
    Status(SyncSender<DirectionStatus>),
    /// Apply a control command; reply Ok or the error text (`<field>: <reason>`).
    Control(ControlCommand, SyncSender<Result<(), String>>),
}

/// How other threads reach a direction thread.
pub struct DirHandle {
    tx: Sender<Cmd>,
    notifier: Notifier,
}

impl DirHandle {
    /// Sends a command and wakes the thread.
    pub fn send(&self, c: Cmd) {
        let _ = self.tx.send(c);
        self.notifier.notify();
    }

    /// Wakes the thread (to notice shutdown).
    pub fn wake(&self) {
        self.notifier.notify();
    }
}

/// Per-direction I/O counters (the model keeps its own).
#[derive(Debug, Default)]
pub struct PortStats {
    /// Frames read (a super-packet counts once).
    pub rx_frames: AtomicU64,
    /// Bytes read.
    pub rx_bytes: AtomicU64,
    /// Super-packets segmented.
    pub gso_superpackets: AtomicU64,
    /// Segments produced.
    pub gso_segments: AtomicU64,
    /// Partial checksums completed.
    pub csum_completed: AtomicU64,
    /// Frames dropped at input.
    pub rx_invalid: AtomicU64,
    /// Frames the kernel dropped because we did not read them fast enough.
    pub rx_kernel_drops: AtomicU64,
    /// Frames sent.
    pub tx_frames: AtomicU64,
    /// Frames refused by the output port.
    pub tx_errors: AtomicU64,
    /// Oracle ETEN notices written to the sender host's map.
    pub oracle_notices: AtomicU64,
    /// Oracle ETEN notices the map refused (bpf(2) error).
    pub oracle_errors: AtomicU64,
    /// How late each delivered frame left, against the model's delivery time.
    pub release: ReleaseHistogram,
    /// Times the thread stepped down from SCHED_FIFO because it was saturated (`rt_guard`).
    pub rt_stepdowns: AtomicU64,
}

/// Everything a direction thread needs.
pub struct DirThread {
    dir: Dir,
    model: Model,
    rx: RxPort,
    tx: TxPort,
    waiter: Waiter,
    cmds: Receiver<Cmd>,
    clock: Clock,
    shutdown: Arc<AtomicBool>,
    stats: Arc<PortStats>,
    tele: telemetry::Sender,
    events: EventLevel,
    oracle: Option<Oracle>,
    oracle_error_logged: bool,
    trunk: Option<Arc<StVlans>>,
    period_ns: u64,
    spin_ns: Option<u64>,
    rt_priority: Option<i32>,
    rx_coalesce_ns: u64,
    rx_paused_until: u64,
    rx_error_logged_at: u64,
    rt_offset: i64,
    pool: Vec<Vec<u8>>,
    outcomes: Vec<Outcome>,
    out_frames: Vec<Vec<u8>>,
}

/// Settings of a direction thread.
pub struct DirSettings {
    /// Which events to publish.
    pub events: EventLevel,
    /// Telemetry period, ns.
    pub period_ns: u64,
    /// Fixed busy-poll window before a deadline, ns; `None`: learnt from the timer's lateness
    /// (`wake_lead`).
    pub spin_ns: Option<u64>,
    /// SCHED_FIFO priority for the thread (None: nice -10).
    pub rt_priority: Option<i32>,
    /// While input flows, read it every this many ns instead of waking for every frame.
    pub rx_coalesce_ns: u64,
    /// Oracle ETEN notice map of this direction (`oracle_eten`), opened.
    pub oracle: Option<Oracle>,
    /// The input port is the st port as a VLAN trunk (the return thread of a beam with VLANs).
    pub trunk: Option<Arc<StVlans>>,
}

impl DirThread {
    /// Prepares a direction thread and the handle other threads use to reach it.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dir: Dir,
        model: Model,
        rx: RxPort,
        tx: TxPort,
        clock: Clock,
        shutdown: Arc<AtomicBool>,
        tele: telemetry::Sender,
        settings: DirSettings,
    ) -> std::io::Result<(DirThread, DirHandle, Arc<PortStats>)> {
        let waiter = Waiter::new()?;
        waiter.add(rx.fd(), 0)?;
        let notifier = waiter.notifier()?;
        let (ctx, crx) = std::sync::mpsc::channel();
        let stats = Arc::new(PortStats::default());
        let t = DirThread {
            dir,
            model,
            rx,
            tx,
            waiter,
            cmds: crx,
            clock,
            shutdown,
            stats: stats.clone(),
            tele,
            events: settings.events,
            oracle: settings.oracle,
            oracle_error_logged: false,
            trunk: settings.trunk,
            period_ns: settings.period_ns.max(1_000_000),
            spin_ns: settings.spin_ns,
            rt_priority: settings.rt_priority,
            rx_coalesce_ns: settings.rx_coalesce_ns,
            rx_paused_until: 0,
            rx_error_logged_at: 0,
            rt_offset: sys::realtime_offset_ns().0,
            pool: Vec::new(),
            outcomes: Vec::with_capacity(4096),
            out_frames: Vec::with_capacity(4096),
        };
        Ok((t, DirHandle { tx: ctx, notifier }, stats))
    }

    fn commands(&mut self) {
        while let Ok(c) = self.cmds.try_recv() {
            let now = self.clock.now_ns();
            match c {
                Cmd::Status(reply) => {
                    let _ = reply.try_send(self.model.status(now));
                }
                Cmd::Control(cmd, reply) => {
                    let r = self.model.control(now, &cmd).map_err(|e| e.to_string());
                    let _ = reply.try_send(r);
                }
            }
        }
    }

    /// Reads every waiting frame (bounded) and offers it to the model; returns frames read and,
    /// when input is left unread (more than the bound was waiting), the latest time given to the
    /// model (the model must not be polled past it before the rest is read).
    ///
    /// A frame's time is its kernel receive timestamp (clamped to `[not_before, clock after the
    /// read]`, so the model never sees time go back), not the time this thread woke up to read it.
    fn receive(&mut self, not_before: u64, now: u64) -> (usize, Option<u64>) {
        let mut total = 0;
        if now < self.rx_paused_until {
            return (0, None);
        }
        let offset = self.rt_offset;
        let mut times = RxTimes {
            clock: self.clock,
            offset,
            not_before,
            now,
        };
        let mut latest = not_before;
        let mut backed_up = false;
        for _ in 0..RX_BATCHES_PER_LOOP {
            let n = match self.rx.recv_batch() {
                Ok(n) => {
                    // Upper bound of the frames' times: the clock after the read (a frame can
                    // arrive after `now` was taken and before the read; clamping it to `now`
                    // would make it leave early).
                    times.now = self.clock.now_ns();
                    n
                }
                Err(e) => {
                    // Interface gone or down: pause input for a while instead of spinning on
                    // the error, and say so at most once a second.
                    self.rx_paused_until = now + RX_ERROR_PAUSE_NS;
                    self.stats.rx_invalid.fetch_add(1, Ordering::Relaxed);
                    if now >= self.rx_error_logged_at + 1_000_000_000
                        || self.rx_error_logged_at == 0
                    {
                        self.rx_error_logged_at = now.max(1);
                        crate::log(&format!(
                            "{}: receive error: {e} (retrying)",
                            self.dir.as_str()
                        ));
                    }
                    0
                }
            };
            let mut ingest = Ingest {
                model: &mut self.model,
                pool: &mut self.pool,
                stats: &self.stats,
                trunk: self.trunk.as_deref(),
            };
            for i in 0..n {
                latest = latest.max(ingest.received(&mut self.rx, i, &times));
            }
            total += n;
            backed_up = n == BATCH;
            if !backed_up {
                break;
            }
        }
        (total, backed_up.then_some(latest))
    }

    fn deliver(&mut self, now: u64) {
        self.model.poll(now, &mut self.outcomes);
        if self.outcomes.is_empty() {
            return;
        }
        let want_events = !matches!(self.events, EventLevel::None) && self.tele.has_clients();
        let all = matches!(self.events, EventLevel::All);
        for o in self.outcomes.drain(..) {
            if let Some(oracle) = &self.oracle {
                notify(
                    oracle,
                    &o,
                    &self.stats,
                    self.dir,
                    &mut self.oracle_error_logged,
                );
            }
            match o {
                Outcome::Deliver { frame, corrupted } => {
                    if want_events && (all || corrupted.is_some()) {
                        let kind = if corrupted.is_some() {
                            EventKind::Corrupted
                        } else {
                            EventKind::Delivered
                        };
                        self.tele.send(Msg::Event(Event::from_frame(
                            now,
                            self.dir,
                            kind,
                            &frame,
                            corrupted.map(|h| h.where_),
                        )));
                    }
                    self.out_frames.push(frame);
                }
                Outcome::Lost { frame, cause } => {
                    if want_events {
                        let (kind, hit) = match cause {
                            LossCause::QueueDrop => (EventKind::QueueDrop, None),
                            LossCause::FrameErasure => (EventKind::Erased, None),
                            LossCause::Corruption(h) => (EventKind::Corrupted, Some(h.where_)),
                        };
                        self.tele.send(Msg::Event(Event::from_frame(
                            now, self.dir, kind, &frame, hit,
                        )));
                    }
                    recycle(&mut self.pool, frame);
                }
            }
        }
        if !self.out_frames.is_empty() {
            // Released = handed to the kernel. Not the clock after the send call: on a veth port
            // that call also runs the receiving host's network stack for the batch.
            let released = self.clock.now_ns();
            for &due in self.model.delivered_due_ns() {
                self.stats.release.record(released.saturating_sub(due));
            }
            let (sent, failed) = self.tx.send_batch(&self.out_frames);
            self.stats
                .tx_frames
                .fetch_add(sent as u64, Ordering::Relaxed);
            if failed > 0 {
                self.stats
                    .tx_errors
                    .fetch_add(failed as u64, Ordering::Relaxed);
            }
            for f in self.out_frames.drain(..) {
                recycle(&mut self.pool, f);
            }
        }
    }

    /// Changes the thread's scheduling policy as the saturation guard decided, and says so.
    fn step(&self, change: rt_guard::Change, prio: i32) {
        let dir = self.dir.as_str();
        let what = match change {
            rt_guard::Change::Demote => {
                "saturated: SCHED_OTHER nice -10 until its load falls (the kernel throttles \
                 real-time threads that use a whole CPU)"
            }
            rt_guard::Change::Promote => "load fell: back to SCHED_FIFO",
        };
        match rt_guard::apply(change, prio) {
            Ok(()) => {
                if change == rt_guard::Change::Demote {
                    self.stats.rt_stepdowns.fetch_add(1, Ordering::Relaxed);
                }
                crate::log(&format!("{dir} thread {what}"));
            }
            Err(e) => crate::log(&format!("{dir} thread: scheduling change refused ({e})")),
        }
    }

    /// Runs until shutdown: each loop forwards (commands, input, deliveries), publishes what is
    /// due, then waits for the next thing due.
    pub fn run(mut self) {
        let mut s = self.start();
        while !self.shutdown.load(Ordering::Relaxed) {
            self.commands();
            let now = self.clock.now_ns();
            let (got, unread_after) = self.receive(s.last_poll, now);
            let now = self.clock.now_ns();
            // Input left unread (a backlog beyond one loop's reads): do not move the model past
            // the last frame it has seen, or the unread frames would get later times.
            let poll_at = unread_after.map_or(now, |t| t.clamp(s.last_poll, now));
            self.deliver(poll_at);
            s.last_poll = poll_at;
            self.telemetry(now, &mut s);
            self.guard(now, &mut s);
            if got >= BATCH * RX_BATCHES_PER_LOOP {
                continue; // input is backed up: keep reading
            }
            self.wait(got, &mut s);
        }
    }

    /// Raises the thread's priority and sets up its schedule.
    fn start(&self) -> Schedule {
        sys::precise_timer_slack();
        let mut realtime = false;
        match sys::raise_thread_priority(self.rt_priority) {
            Ok(how) => {
                realtime = how.starts_with("SCHED_FIFO");
                crate::log(&format!("{} thread: {how}", self.dir.as_str()));
            }
            Err(e) => crate::log(&format!(
                "{} thread: priority not raised ({e}); delay precision may suffer under load",
                self.dir.as_str()
            )),
        }
        // Saturated at real-time priority the kernel would freeze the thread 50 ms a second.
        let guard = match (realtime, self.rt_priority) {
            (true, Some(p)) => RtGuard::kernel_budget().map(|b| (RtGuard::new(b), p)),
            _ => None,
        };
        Schedule {
            guard,
            next_guard_sample: 0,
            next_status: 0,
            next_modcod_check: 0,
            last_modcod: None,
            // Start from the lateness typical of each kind of thread here; it is learnt from then on.
            lead: WakeLead::new(self.spin_ns, if realtime { 20_000 } else { 50_000 }),
            last_poll: 0,
            rx_interest: true,
            last_input: 0,
            overdue: Overdue::default(),
        }
    }

    /// Telemetry: periodic, and at once (within 1 ms) when the MODCOD changes.
    fn telemetry(&mut self, now: u64, s: &mut Schedule) {
        if now < s.next_modcod_check && now < s.next_status {
            return;
        }
        let periodic = now >= s.next_status;
        s.next_modcod_check = now + MODCOD_CHECK_NS;
        if self.tele.has_clients() {
            let st = self.model.status(now);
            let id = st.modcod.as_ref().map(|m| m.id);
            if periodic || id != s.last_modcod {
                s.last_modcod = id;
                self.tele.send(Msg::Status {
                    t_ns: now,
                    status: Box::new(st),
                });
            }
        }
        if periodic {
            // The offset only moves when the wall clock is stepped; refresh it with a tight
            // measurement.
            let (off, width) = sys::realtime_offset_ns();
            if width < 20_000 {
                self.rt_offset = off;
            }
            let d = self.rx.take_kernel_drops();
            if d > 0 {
                self.stats.rx_kernel_drops.fetch_add(d, Ordering::Relaxed);
            }
            s.next_status = now - now % self.period_ns + self.period_ns;
        }
    }

    /// Samples the saturation guard when due, and applies what it decides.
    fn guard(&self, now: u64, s: &mut Schedule) {
        if let Some((g, prio)) = s.guard.as_mut().filter(|_| now >= s.next_guard_sample) {
            s.next_guard_sample = now + rt_guard::SAMPLE_NS;
            if let Some(change) = g.sample(now, rt_guard::thread_cpu_ns()) {
                self.step(change, *prio);
            }
        }
    }

    /// Waits for the next thing due: busy-polls the last microseconds before a model deadline,
    /// otherwise sleeps on the timer and (unless input is coalesced) the rx socket. `got`: frames
    /// this loop read.
    fn wait(&mut self, got: usize, s: &mut Schedule) {
        let now = self.clock.now_ns();
        // Model deadlines are met precisely (timer, then a short busy poll); telemetry and input
        // reading only need to happen "about then".
        let precise = self.model.next_due_ns();
        let (lazy, coalesce) = self.lazy_wake(now, got, s);
        let spin_ns = s.lead.lead_ns();
        if let Some(p) = precise.filter(|&p| p <= now + spin_ns) {
            if p > now {
                std::hint::spin_loop();
                s.overdue.reset();
            } else if got == 0 {
                s.overdue.idle(precise, self.dir);
            }
            return; // busy-poll the last microseconds (still reading input)
        }
        s.overdue.reset();
        let wake_at = precise.map_or(lazy, |p| lazy.min(p.saturating_sub(spin_ns)));
        if wake_at <= now {
            return;
        }
        // Only a thread about to sleep needs the right interest (the busy poll reads anyway).
        if coalesce == s.rx_interest {
            s.rx_interest = !coalesce;
            let _ = self.waiter.set_interest(self.rx.fd(), 0, s.rx_interest);
        }
        self.waiter.arm(self.clock.mono_ns_of(wake_at));
        self.waiter.wait(-1);
        if precise.is_some_and(|p| wake_at == p.saturating_sub(spin_ns)) {
            // Woken for a deadline (or later): learn how late the timer fires.
            let woke = self.clock.now_ns();
            if woke >= wake_at {
                s.lead.observe(woke - wake_at);
            }
        }
    }

    /// When telemetry and input next need the thread ("about then"), and whether input is
    /// coalesced (the rx socket not watched).
    fn lazy_wake(&self, now: u64, got: usize, s: &mut Schedule) -> (u64, bool) {
        let mut lazy = if self.tele.has_clients() {
            s.next_status.min(s.next_modcod_check)
        } else {
            s.next_status
        };
        // While input flows, do not wake for every frame: frames carry their kernel receive time,
        // so reading them later changes nothing as long as they are read before the model moves
        // past them (every poll is preceded by a read) and before any outcome they cause is due
        // (the model's input slack: the one-way delay), up to a bound.
        if got > 0 {
            s.last_input = now;
        }
        // "Flows" = a frame was read within the last coalescing period, not "this loop read one":
        // the busy poll before a deadline reads the socket empty many times while input flows,
        // and flipping the epoll interest each time cost 10 % of the thread at 3.5 Gbit/s.
        let mut coalesce = self.rx_coalesce_ns > 0
            && s.last_input > 0
            && now.saturating_sub(s.last_input) < self.rx_coalesce_ns;
        if coalesce {
            let window = self
                .model
                .input_slack_ns()
                .min(RX_COALESCE_MAX_NS)
                .max(self.rx_coalesce_ns);
            lazy = lazy.min(now + window);
        }
        if now < self.rx_paused_until {
            coalesce = true; // input paused after an error: do not wake for it
            lazy = lazy.min(self.rx_paused_until);
        }
        (lazy, coalesce)
    }
}

/// A direction thread's timing state from one loop to the next.
struct Schedule {
    /// Saturation guard and the SCHED_FIFO priority to return to (real-time threads only).
    guard: Option<(RtGuard, i32)>,
    next_guard_sample: u64,
    /// Next periodic telemetry status, ns.
    next_status: u64,
    next_modcod_check: u64,
    last_modcod: Option<u32>,
    /// How long before a deadline the timer is armed (learnt lateness, or fixed).
    lead: WakeLead,
    /// Latest time the model was polled at (frames are never given an earlier time).
    last_poll: u64,
    /// Whether the rx socket is in the epoll set.
    rx_interest: bool,
    /// Last time a loop read input, ns (0: never).
    last_input: u64,
    overdue: Overdue,
}

/// The model asking again and again for a time already passed, without moving.
#[derive(Default)]
struct Overdue {
    /// Idle loops in a row that found the same past deadline.
    loops: u32,
    at: Option<u64>,
    warned: bool,
}

impl Overdue {
    fn reset(&mut self) {
        self.loops = 0;
    }

    /// An idle loop found the deadline `due` already passed: never spin on that at real-time
    /// priority; past 100 000 such loops, sleep 200 us each.
    fn idle(&mut self, due: Option<u64>, dir: Dir) {
        if due == self.at {
            self.loops += 1;
        } else {
            self.loops = 0;
            self.at = due;
        }
        if self.loops > 100_000 {
            if !self.warned {
                crate::log(&format!(
                    "{}: link model wake-up stays in the past; throttling",
                    dir.as_str()
                ));
                self.warned = true;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
}

/// Writes the Oracle ETEN notice an outcome calls for, if any, and counts it.
fn notify(oracle: &Oracle, o: &Outcome, stats: &PortStats, dir: Dir, error_logged: &mut bool) {
    let Some((key, code)) = oracle::notice_of(o) else {
        return;
    };
    match oracle.notify(&key, code) {
        Ok(()) => {
            stats.oracle_notices.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            stats.oracle_errors.fetch_add(1, Ordering::Relaxed);
            if !*error_logged {
                *error_logged = true;
                crate::log(&format!(
                    "{}: oracle ETEN notice not written: {e} (further failures are counted in oracle_errors_total)",
                    dir.as_str()
                ));
            }
        }
    }
}

fn take(pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    pool.pop()
        .unwrap_or_else(|| Vec::with_capacity(FRAME_CAPACITY))
}

fn recycle(pool: &mut Vec<Vec<u8>>, mut f: Vec<u8>) {
    if pool.len() < POOL_MAX && f.capacity() <= POOL_KEEP_MAX {
        f.clear();
        pool.push(f);
    }
}

fn with_vlan(out: &mut Vec<u8>, tag: Option<ethernet::VlanTag>) {
    if let Some(t) = tag {
        ethernet::insert_vlan_tag(out, t);
    }
}

struct RxTimes {
    clock: Clock,
    offset: i64,
    not_before: u64,
    now: u64,
}

impl RxTimes {
    fn of(&self, rx_realtime_ns: Option<u64>) -> u64 {
        match rx_realtime_ns {
            Some(r) => self
                .clock
                .run_ns_of_realtime(r, self.offset)
                .clamp(self.not_before, self.now),
            None => self.now,
        }
    }
}

/// What a direction thread's receive path writes to: the model frames are offered to, the
/// buffer pool, the port counters, and the st port's VLAN trunk when it is one.
struct Ingest<'a> {
    model: &'a mut Model,
    pool: &'a mut Vec<Vec<u8>>,
    stats: &'a PortStats,
    trunk: Option<&'a StVlans>,
}

impl Ingest<'_> {
    /// Turns frame `i` of the port's last batch into wire-sized, checksum-complete frames offered
    /// to the model; returns the time it was offered at.
    fn received(&mut self, rx: &mut RxPort, i: usize, times: &RxTimes) -> u64 {
        let Some(f) = rx.frame(i) else {
            self.stats.rx_invalid.fetch_add(1, Ordering::Relaxed);
            return times.not_before;
        };
        let now = times.of(f.rx_realtime_ns);
        self.frame(f, now);
        now
    }

    /// The port-independent part of [`Ingest::received`], in the order a frame meets them:
    /// counting, the VLAN trunk, then GSO segmentation or checksum completion.
    fn frame(&mut self, mut f: RxFrame<'_>, now: u64) {
        self.stats.rx_frames.fetch_add(1, Ordering::Relaxed);
        self.stats
            .rx_bytes
            .fetch_add(f.data.len() as u64, Ordering::Relaxed);
        if let Some(trunk) = self.trunk {
            if !untag(trunk, &mut f) {
                return;
            }
        }
        if f.vnet.is_gso() {
            self.segments(&f, now);
        } else if self.checksum_complete(&mut f) {
            let mut v = take(self.pool);
            match f.vlan {
                Some(t) => {
                    v.extend_from_slice(&f.data[..12]);
                    v.extend_from_slice(&t.tpid.to_be_bytes());
                    v.extend_from_slice(&t.tci().to_be_bytes());
                    v.extend_from_slice(&f.data[12..]);
                }
                None => v.extend_from_slice(f.data),
            }
            self.model.enqueue(now, v);
        }
    }

    /// Offers each wire-sized segment of a GSO super-packet (a malformed one is counted invalid).
    fn segments(&mut self, f: &RxFrame<'_>, now: u64) {
        let Ok(g) = Gso::new(f.data, &f.vnet) else {
            self.stats.rx_invalid.fetch_add(1, Ordering::Relaxed);
            return;
        };
        self.stats.gso_superpackets.fetch_add(1, Ordering::Relaxed);
        self.stats
            .gso_segments
            .fetch_add(g.count() as u64, Ordering::Relaxed);
        for s in 0..g.count() {
            let mut v = take(self.pool);
            g.write_segment(s, &mut v);
            with_vlan(&mut v, f.vlan);
            self.model.enqueue(now, v);
        }
    }

    /// Completes a checksum the sender left partial; false (counted invalid): drop the frame.
    fn checksum_complete(&mut self, f: &mut RxFrame<'_>) -> bool {
        if !f.vnet.needs_csum() {
            return true;
        }
        if offload::complete_if_partial(f.data, &f.vnet).is_ok() {
            self.stats.csum_completed.fetch_add(1, Ordering::Relaxed);
            true
        } else {
            self.stats.rx_invalid.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

/// Admits a frame received on the st port as a VLAN trunk and takes its tag off; false: its VID
/// is no terminal's, or it is untagged (dropped, counted by the trunk).
///
/// The terminal `admit` finds is not passed on: the return link is either one shared link, or a
/// DVB-RCS2 return beam (`return.dama`) that finds a frame's terminal by its source prefix
/// (`forward.beam.terminals[].prefixes`), so the VID only decides whether the frame is admitted
/// and which terminal's receive counter it adds to.
fn untag(trunk: &StVlans, f: &mut RxFrame<'_>) -> bool {
    let Some((_terminal, inline)) = trunk.admit(f.vlan, f.data) else {
        return false;
    };
    f.vlan = None;
    if inline {
        let data = std::mem::take(&mut f.data);
        let n = data.len() - ethernet::VLAN_TAG_LEN;
        f.data = &mut data[..n];
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkmodel::LinkConfig;
    use packet::ethernet::VlanTag;
    use packet::offload::{gso_type, VirtioNetHdr, VNET_HDR_F_NEEDS_CSUM};
    use packet::{checksum, ipv4, tcp};
    use std::net::Ipv4Addr;

    /// Ethernet + IPv4 10.0.0.1 -> 10.0.0.2 + TCP (20-byte header) + `payload` bytes, with the
    /// transport checksum left partial as veth leaves it.
    fn tcp_frame(payload: usize) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        let total = (20 + 20 + payload) as u16;
        f.extend_from_slice(&[
            0x45,
            0,
            (total >> 8) as u8,
            total as u8,
            0x12,
            0x34,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ]);
        f.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[
            0x9c, 0x40, 0x14, 0x51, 0, 0, 0x10, 0, 0, 0, 0, 1, 0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0,
        ]);
        f.extend((0..payload).map(|i| (i % 253) as u8));
        ipv4::Packet::new_unchecked(&mut f[14..]).fill_checksum();
        let pseudo = checksum::pseudo_header_v4(
            Ipv4Addr::new(10, 0, 0, 1),
            Ipv4Addr::new(10, 0, 0, 2),
            6,
            u32::from(total) - 20,
        );
        f[50..52].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
        f
    }

    fn model() -> Model {
        let cfg = LinkConfig::from_yaml_str(
            "forward: {delay_ms: 10, kind: fixed, rate_bps: 1.0e9, queue: {limit_packets: 1000, limit_bytes: 10000000}}",
        )
        .unwrap();
        Model::new(&cfg, Dir::Forward).unwrap()
    }

    fn drain(m: &mut Model) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        m.poll(1_000_000_000, &mut out);
        out.into_iter()
            .map(|o| match o {
                Outcome::Deliver {
                    frame,
                    corrupted: None,
                } => frame,
                other => panic!("unexpected outcome {other:?}"),
            })
            .collect()
    }

    /// Offers `f` (tagged `vlan` as received, no receive timestamp) to the model at time 0.
    fn ingest(
        f: &mut [u8],
        vnet: VirtioNetHdr,
        vlan: Option<VlanTag>,
        m: &mut Model,
        pool: &mut Vec<Vec<u8>>,
        stats: &PortStats,
    ) {
        let rx = RxFrame {
            data: f,
            vnet,
            vlan,
            rx_realtime_ns: None,
        };
        Ingest {
            model: m,
            pool,
            stats,
            trunk: None,
        }
        .frame(rx, 0);
    }

    fn check_tcp(frame: &[u8], vlan: bool) -> (u32, usize) {
        let eth = ethernet::Frame::new_checked(frame).unwrap();
        assert_eq!(eth.vlan().is_some(), vlan);
        let ip = ipv4::Packet::new_checked(eth.payload()).unwrap();
        assert!(ip.verify_checksum());
        let t = tcp::Packet::new_checked(ip.payload()).unwrap();
        assert!(t.verify_checksum(ip.src_addr().into(), ip.dst_addr().into()));
        (t.seq_number(), t.payload().len())
    }

    #[test]
    fn super_packet_is_segmented_with_complete_checksums_and_vlan_restored() {
        let mut m = model();
        let (mut pool, stats) = (Vec::new(), PortStats::default());
        let mut f = tcp_frame(4000);
        let vnet = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            gso_type: gso_type::TCPV4,
            hdr_len: 54,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let tag = VlanTag {
            tpid: 0x8100,
            pcp: 1,
            dei: false,
            vid: 77,
        };
        ingest(&mut f, vnet, Some(tag), &mut m, &mut pool, &stats);
        let out = drain(&mut m);
        assert_eq!(out.len(), 3);
        let segs: Vec<(u32, usize)> = out.iter().map(|f| check_tcp(f, true)).collect();
        assert_eq!(
            segs,
            vec![(0x1000, 1448), (0x1000 + 1448, 1448), (0x1000 + 2896, 1104)]
        );
        assert_eq!(stats.gso_superpackets.load(Ordering::Relaxed), 1);
        assert_eq!(stats.gso_segments.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn partial_checksum_is_completed_and_buffers_are_recycled() {
        let mut m = model();
        let (mut pool, stats) = (Vec::new(), PortStats::default());
        let mut f = tcp_frame(100);
        let vnet = VirtioNetHdr {
            flags: VNET_HDR_F_NEEDS_CSUM,
            csum_start: 34,
            csum_offset: 16,
            ..Default::default()
        };
        ingest(&mut f, vnet, None, &mut m, &mut pool, &stats);
        let out = drain(&mut m);
        assert_eq!(out.len(), 1);
        assert_eq!(check_tcp(&out[0], false), (0x1000, 100));
        assert_eq!(stats.csum_completed.load(Ordering::Relaxed), 1);
        for v in out {
            recycle(&mut pool, v);
        }
        assert_eq!(pool.len(), 1);
        assert!(pool[0].is_empty() && pool[0].capacity() >= FRAME_CAPACITY);
    }

    #[test]
    fn unsupported_offload_is_counted_not_forwarded() {
        let mut m = model();
        let (mut pool, stats) = (Vec::new(), PortStats::default());
        let mut f = tcp_frame(100);
        let vnet = VirtioNetHdr {
            gso_type: gso_type::UDP,
            gso_size: 8,
            ..Default::default()
        };
        ingest(&mut f, vnet, None, &mut m, &mut pool, &stats);
        assert!(drain(&mut m).is_empty());
        assert_eq!(stats.rx_invalid.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn receive_times_are_clamped_to_the_last_poll_and_now() {
        let clock = Clock::start();
        let offset = sys::realtime_offset_ns().0;
        let t = RxTimes {
            clock,
            offset,
            not_before: 5_000,
            now: 9_000,
        };
        assert_eq!(t.of(None), 9_000);
        assert_eq!(t.of(Some(0)), 5_000);
        let real_now = (clock.mono_ns_of(7_000) as i64 + offset) as u64;
        assert_eq!(t.of(Some(real_now)), 7_000);
    }
}
