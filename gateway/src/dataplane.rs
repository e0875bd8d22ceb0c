//! The two forwarding threads. Each runs the named stages of `crate::stage` in the order a packet
//! meets them (the table of stages, with what each reads and writes, is in `stage/mod.rs`); this
//! file holds the threads' loops and what is not a mechanism: reading and sending batches, and the
//! buffer pool.
//!
//! - **egress** (inside -> outside, toward the satellite): read batches (receive ring), complete partial
//!   checksums and cut GSO super-packets, then per packet: IP-ERN (count, lower H_feedback), CETEN
//!   (multiply forward congestion survival, reflect reverse fields), AQM admission (drop-tail / RED /
//!   RED+ECN) into the egress queue; ETEN notices join the same queue. The queue drains at the
//!   pacing rate (slightly below the link's current useful rate), so the bottleneck queue is here,
//!   where the AQM acts. Sends in batches (sendmmsg); sleeps on epoll with a timerfd at the next
//!   departure.
//! - **ingress** (outside -> inside): only frames to the local router or to group addresses (a
//!   kernel socket filter on the outside port, `macfilter`, once the egress saw the router's MAC),
//!   then CETEN (multiply forward corruption survival by the incoming link's estimate, remember it
//!   for reflection), then straight out (no queue).

use crate::aqm::Queue;
use crate::macfilter::RouterFilter;
use crate::process;
use crate::stage::eten::{self, MacLearner};
use crate::stage::pacing::Pacer;
use crate::stage::{admission, ceten, ern::ErnRouter};
use crate::state::Shared;
use netio::port::{RxPort, TxPort};
use netio::sys::Waiter;
use packet::ethernet;
use packet::offload::{self, Gso};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const TOKEN_RX: u64 = 1;
/// Batches read per loop before the queue is served.
const RX_BATCHES_PER_LOOP: usize = 8;

fn take(pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    pool.pop().unwrap_or_else(|| Vec::with_capacity(1536))
}

fn recycle(pool: &mut Vec<Vec<u8>>, mut f: Vec<u8>) {
    if pool.len() < 4096 && f.capacity() <= 16384 {
        f.clear();
        pool.push(f);
    }
}

/// Reads every waiting frame of `rx` (up to a few batches) as complete wire-sized frames.
fn read_frames(
    rx: &mut RxPort,
    pool: &mut Vec<Vec<u8>>,
    out: &mut Vec<Vec<u8>>,
    sh: &Shared,
) -> std::io::Result<()> {
    for _ in 0..RX_BATCHES_PER_LOOP {
        let n = rx.recv_batch()?;
        if n == 0 {
            break;
        }
        for i in 0..n {
            let Some(f) = rx.frame(i) else { continue };
            if f.vnet.is_gso() {
                if let Ok(g) = Gso::new(f.data, &f.vnet) {
                    sh.c.gso_segments
                        .fetch_add(g.count() as u64, Ordering::Relaxed);
                    for s in 0..g.count() {
                        let mut v = take(pool);
                        g.write_segment(s, &mut v);
                        if let Some(t) = f.vlan {
                            ethernet::insert_vlan_tag(&mut v, t);
                        }
                        out.push(v);
                    }
                }
                continue;
            }
            let _ = offload::complete_if_partial(f.data, &f.vnet);
            let mut v = take(pool);
            v.extend_from_slice(f.data);
            if let Some(t) = f.vlan {
                ethernet::insert_vlan_tag(&mut v, t);
            }
            out.push(v);
        }
        if n < netio::port::BATCH {
            break;
        }
    }
    Ok(())
}

/// [`read_frames`]; a read error is reported and the thread pauses 10 ms (a port that keeps
/// failing must not spin a core).
fn read_or_pause(
    thread: &str,
    rx: &mut RxPort,
    pool: &mut Vec<Vec<u8>>,
    out: &mut Vec<Vec<u8>>,
    sh: &Shared,
) {
    if let Err(e) = read_frames(rx, pool, out, sh) {
        eprintln!("satlab-gateway: {thread}: read: {e}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The counters of one direction's sending side.
struct TxCounters<'a> {
    frames: &'a AtomicU64,
    failed: &'a AtomicU64,
    bytes: &'a AtomicU64,
}

/// Sends `frames` in one batch (sendmmsg), counts them, and returns their buffers to the pool.
fn send(tx: &mut TxPort, frames: &mut Vec<Vec<u8>>, pool: &mut Vec<Vec<u8>>, c: TxCounters) {
    if frames.is_empty() {
        return;
    }
    let bytes: usize = frames.iter().map(Vec::len).sum();
    let (sent, failed) = tx.send_batch(frames);
    c.frames.fetch_add(sent as u64, Ordering::Relaxed);
    c.failed.fetch_add(failed as u64, Ordering::Relaxed);
    c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    for f in frames.drain(..) {
        recycle(pool, f);
    }
}

/// An epoll waiter on `rx`, or None (reported) when it cannot be had.
fn waiter_on(thread: &str, rx: &RxPort) -> Option<Waiter> {
    let waiter = match Waiter::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("satlab-gateway: {thread}: epoll: {e}");
            return None;
        }
    };
    if let Err(e) = waiter.add(rx.fd(), TOKEN_RX) {
        eprintln!("satlab-gateway: {thread}: epoll add: {e}");
        return None;
    }
    Some(waiter)
}

/// The egress stages' state: the queue, and the stages that keep state of their own.
struct EgressStages {
    routers: RouterFilter,
    macs: MacLearner,
    ern: ErnRouter,
    queue: Queue,
    pacer: Pacer,
}

impl EgressStages {
    fn new(sh: &Shared, routers: RouterFilter) -> EgressStages {
        let cfg = &sh.cfg;
        EgressStages {
            routers,
            macs: MacLearner::new(true),
            ern: ErnRouter::new(&cfg.ern),
            queue: Queue::new(&cfg.egress.aqm, cfg.seed),
            pacer: Pacer::new(&cfg.egress),
        }
    }

    /// One packet through the per-packet stages (2-6 in `stage/mod.rs`), in order: MAC learning
    /// (with the router's MAC for the outside port's filter, `macfilter`), IP-ERN, CETEN, AQM
    /// admission, the ERN queue observation. Returns the frame when the AQM dropped it.
    fn packet(&mut self, sh: &Shared, mut f: Vec<u8>, now: u64) -> Option<Vec<u8>> {
        sh.c.egress_rx_frames.fetch_add(1, Ordering::Relaxed);
        sh.c.egress_rx_bytes
            .fetch_add(f.len() as u64, Ordering::Relaxed);
        self.routers.observe(&f);
        self.macs.observe(sh, &f);
        let mut is_ern = false;
        if let Some(loc) = process::locate_tcp(&f) {
            is_ern = self.ern.on_packet(sh, &mut f, &loc, now);
            ceten::egress(sh, &mut f, &loc);
        }
        let dropped = admission::admit(sh, &mut self.queue, f, is_ern, now);
        self.ern.observe_queue(&self.queue);
        dropped
    }
}

/// The egress thread. Per round (the stage numbers of `stage/mod.rs`): read (0), the round's pacing
/// rate (1), the per-packet stages (2-6, [`EgressStages::packet`]), the notices (7), serve the queue
/// at the pacing rate (8), end the XCP interval when due (9), send (10), publish (11), sleep (12).
pub fn egress(sh: Arc<Shared>, mut rx: RxPort, mut tx: TxPort, routers: RouterFilter) {
    let Some(mut waiter) = waiter_on("egress", &rx) else {
        return;
    };
    if let Ok(n) = waiter.notifier() {
        *sh.egress_wake.lock().expect("wake lock") = Some(n);
    }
    let mut st = EgressStages::new(&sh, routers);
    // The XCP controller needs regular ticks even when the link is idle.
    let idle_ms = if st.ern.enabled() { 5 } else { 100 };
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut inbox: Vec<Vec<u8>> = Vec::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    while !sh.stop.load(Ordering::Relaxed) {
        read_or_pause("egress", &mut rx, &mut pool, &mut inbox, &sh);
        let now = sh.clock.now_ns();
        let rate = st.pacer.refresh(&sh);
        admission::follow_rate(&mut st.queue, rate);
        for f in inbox.drain(..) {
            if let Some(dropped) = st.packet(&sh, f, now) {
                recycle(&mut pool, dropped);
            }
        }
        eten::enqueue_notices(&sh, &mut st.queue, now);
        let now = sh.clock.now_ns();
        st.pacer.serve(&mut st.queue, now, &mut out);
        st.ern.end_round(&sh, now, rate, &st.queue);
        let c = TxCounters {
            frames: &sh.c.egress_tx_frames,
            failed: &sh.c.egress_tx_failed,
            bytes: &sh.c.egress_tx_bytes,
        };
        send(&mut tx, &mut out, &mut pool, c);
        admission::publish(&sh, &st.queue);
        st.pacer.sleep(&mut waiter, &sh, &st.queue, idle_ms);
    }
}

/// The ingress thread: per packet, MAC learning and CETEN, then the batch goes straight out.
pub fn ingress(sh: Arc<Shared>, mut rx: RxPort, mut tx: TxPort) {
    let Some(mut waiter) = waiter_on("ingress", &rx) else {
        return;
    };
    let mut macs = MacLearner::new(false);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut inbox: Vec<Vec<u8>> = Vec::new();
    while !sh.stop.load(Ordering::Relaxed) {
        read_or_pause("ingress", &mut rx, &mut pool, &mut inbox, &sh);
        if inbox.is_empty() {
            waiter.wait(100);
            continue;
        }
        for f in inbox.iter_mut() {
            sh.c.ingress_rx_frames.fetch_add(1, Ordering::Relaxed);
            macs.observe(&sh, f);
            ceten::ingress(&sh, f);
        }
        let c = TxCounters {
            frames: &sh.c.ingress_tx_frames,
            failed: &sh.c.ingress_tx_failed,
            bytes: &sh.c.ingress_tx_bytes,
        };
        send(&mut tx, &mut inbox, &mut pool, c);
    }
}
