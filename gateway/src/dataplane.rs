//! The two forwarding threads.
//!
//! - **egress** (inside -> outside, toward the satellite): read batches (receive ring), complete partial
//!   checksums and cut GSO super-packets, then per packet: IP-ERN (count, lower H_feedback), CETEN
//!   (multiply forward congestion survival, reflect reverse fields), AQM admission (drop-tail / RED /
//!   RED+ECN) into the egress queue; ETEN notices join the same queue. The queue drains at the
//!   pacing rate (slightly below the link's current useful rate), so the bottleneck queue is here,
//!   where the AQM acts. Sends in batches (sendmmsg); sleeps on epoll with a timerfd at the next
//!   departure.
//! - **ingress** (outside -> inside): CETEN (multiply forward corruption survival by the incoming
//!   link's estimate, remember it for reflection), then straight out (no queue).

use crate::aqm::{Queue, Verdict};
use crate::process::{self, Reflected};
use crate::state::Shared;
use crate::xcp::{Controller, Params};
use netio::port::{RxPort, TxPort};
use netio::sys::Waiter;
use packet::ethernet;
use packet::offload::{self, Gso};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const TOKEN_RX: u64 = 1;
/// Batches read per loop before the queue is served.
const RX_BATCHES_PER_LOOP: usize = 8;
/// A departure this close to now goes out in the current batch, ns (fewer wake-ups at high rates;
/// the average rate stays exact, bursts stay within 100 µs of link time).
const SLACK_NS: u64 = 100_000;
/// How far a busy link's schedule may fall behind before the lost time is given up, ns.
const MAX_LAG_NS: u64 = 5_000_000;

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

/// Learns the (local, remote) MAC pair notices are sent with from a unicast IPv4 frame; returns
/// whether the frame was one. Each thread learns from every frame until it has a pair, then from
/// every 64th (a pair that changes, e.g. a re-cabled edge, is still picked up): before the first
/// pair, notices would go out broadcast and the next router would not forward them.
fn learn_macs(sh: &Shared, frame: &[u8], egress: bool) -> bool {
    if frame.len() < 14 || frame[0] & 1 != 0 || process::ipv4_at(frame).is_none() {
        return false;
    }
    let mut dst = [0u8; 6];
    let mut src = [0u8; 6];
    dst.copy_from_slice(&frame[0..6]);
    src.copy_from_slice(&frame[6..12]);
    let pair = if egress { (src, dst) } else { (dst, src) };
    let mut m = sh.macs.lock().expect("macs lock");
    if *m != Some(pair) {
        *m = Some(pair);
    }
    true
}

/// The egress thread.
pub fn egress(sh: Arc<Shared>, mut rx: RxPort, mut tx: TxPort) {
    let mut waiter = match Waiter::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("satlab-gateway: egress: epoll: {e}");
            return;
        }
    };
    if let Err(e) = waiter.add(rx.fd(), TOKEN_RX) {
        eprintln!("satlab-gateway: egress: epoll add: {e}");
        return;
    }
    if let Ok(n) = waiter.notifier() {
        *sh.egress_wake.lock().expect("wake lock") = Some(n);
    }
    let cfg = &sh.cfg;
    let mut queue = Queue::new(&cfg.egress.aqm, cfg.seed);
    let mut xcp = Controller::new(Params {
        alpha: cfg.ern.alpha,
        beta: cfg.ern.beta,
        gamma: cfg.ern.gamma,
        initial_interval_s: cfg.ern.initial_interval_ms * 1e-3,
        min_interval_s: cfg.ern.min_interval_ms * 1e-3,
        max_interval_s: cfg.ern.max_interval_ms * 1e-3,
    });
    let overhead = f64::from(cfg.egress.overhead_bytes);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut inbox: Vec<Vec<u8>> = Vec::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut next_tx_ns: u64 = 0;
    let mut busy = false;
    let mut learn_tick: u32 = 0;
    let mut learned = false;
    while !sh.stop.load(Ordering::Relaxed) {
        if let Err(e) = read_frames(&mut rx, &mut pool, &mut inbox, &sh) {
            eprintln!("satlab-gateway: egress: read: {e}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let now = sh.clock.now_ns();
        let rate = sh.pacing_rate_bps();
        sh.pace_bps.set(rate.unwrap_or(f64::NAN));
        if let Some(r) = rate {
            if let Some(red) = queue.red.as_mut() {
                red.pkt_time_ns = 1500.0 * 8.0 / r * 1e9;
            }
        }
        for mut f in inbox.drain(..) {
            sh.c.egress_rx_frames.fetch_add(1, Ordering::Relaxed);
            sh.c.egress_rx_bytes
                .fetch_add(f.len() as u64, Ordering::Relaxed);
            learn_tick = learn_tick.wrapping_add(1);
            if !learned || learn_tick % 64 == 1 {
                learned |= learn_macs(&sh, &f, true);
            }
            let mut is_ern = false;
            if let Some(loc) = process::locate_tcp(&f) {
                if cfg.ern.enabled {
                    if let Some(seg) = process::ern_segment(&f, &loc, &cfg.ern.ports) {
                        is_ern = true;
                        sh.c.ern_packets.fetch_add(1, Ordering::Relaxed);
                        let fb = xcp.on_packet(
                            now,
                            seg.size as f64,
                            f64::from(seg.cwnd),
                            f64::from(seg.rtt_us) * 1e-6,
                        );
                        let fb = fb.clamp(f64::from(i32::MIN), f64::from(i32::MAX - 1)) as i32;
                        if fb < seg.feedback {
                            process::ern_set_feedback(&mut f, &loc, &seg, fb);
                            sh.c.ern_feedback_lowered.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                if cfg.ceten.enabled {
                    let cong = sh.congestion_q16.load(Ordering::Relaxed) as u16;
                    if process::ceten_stamp(&mut f, &loc, None, Some(cong)).is_some() {
                        sh.c.ceten_stamped.fetch_add(1, Ordering::Relaxed);
                    }
                    if cfg.ceten.reflect {
                        let (s, d, sp, dp) = process::flow_of(&f, &loc);
                        let rev = sh
                            .reflect
                            .lock()
                            .expect("reflect lock")
                            .get(&(d, s, dp, sp))
                            .copied();
                        if let Some(rev) = rev {
                            match process::ceten_reflect(&mut f, &loc, rev, true) {
                                Reflected::No => {}
                                Reflected::Written => {
                                    sh.c.ceten_reflected.fetch_add(1, Ordering::Relaxed);
                                }
                                Reflected::Inserted => {
                                    sh.c.ceten_reflected.fetch_add(1, Ordering::Relaxed);
                                    sh.c.ceten_inserted.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        }
                    }
                }
            }
            let ect = process::is_ect(&f);
            let v = queue.admit(f.len(), ect, now);
            match v {
                Verdict::Enqueue | Verdict::Mark => {
                    if v == Verdict::Mark && process::set_ce(&mut f) {
                        sh.c.aqm_marked.fetch_add(1, Ordering::Relaxed);
                    }
                    sh.c.aqm_enqueued.fetch_add(1, Ordering::Relaxed);
                    queue.push(f, is_ern);
                    sh.congestion_sample(true);
                }
                _ => {
                    match v {
                        Verdict::EarlyDrop => &sh.c.aqm_early_drops,
                        Verdict::ForcedDrop => &sh.c.aqm_forced_drops,
                        _ => &sh.c.aqm_tail_drops,
                    }
                    .fetch_add(1, Ordering::Relaxed);
                    sh.congestion_sample(false);
                    recycle(&mut pool, f);
                }
            }
            if cfg.ern.enabled {
                xcp.observe_queue(queue.ern_bytes());
            }
        }
        // ETEN notices: into the same queue (they travel the return path like any packet).
        let notices: Vec<Vec<u8>> = std::mem::take(&mut *sh.notices.lock().expect("notices lock"));
        for f in notices {
            match queue.admit(f.len(), false, now) {
                Verdict::Enqueue | Verdict::Mark => queue.push(f, false),
                _ => {
                    sh.c.aqm_tail_drops.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        // Serve the queue.
        let now = sh.clock.now_ns();
        match rate {
            None => {
                while let Some(p) = queue.pop(now) {
                    out.push(p.frame);
                }
            }
            Some(r) => {
                // An idle link gives no credit; a busy one keeps the time a late wake-up lost
                // (up to MAX_LAG_NS), so the average rate is the configured one.
                next_tx_ns = if busy {
                    next_tx_ns.max(now.saturating_sub(MAX_LAG_NS))
                } else {
                    next_tx_ns.max(now)
                };
                while let Some(len) = queue.head_len() {
                    if next_tx_ns > now + SLACK_NS {
                        break;
                    }
                    let p = queue.pop(now).expect("head exists");
                    next_tx_ns += ((len as f64 + overhead) * 8.0 / r * 1e9) as u64;
                    out.push(p.frame);
                }
            }
        }
        busy = !queue.is_empty();
        if cfg.ern.enabled {
            xcp.observe_queue(queue.ern_bytes());
            let cap = rate.unwrap_or(f64::NAN) / 8.0 * cfg.ern.capacity_factor;
            if cap.is_finite() && xcp.tick(now, cap, queue.ern_bytes()) {
                sh.c.ern_intervals.fetch_add(1, Ordering::Relaxed);
                *sh.xcp.lock().expect("xcp lock") = (xcp.last, xcp.interval_s());
            }
        }
        if !out.is_empty() {
            let bytes: usize = out.iter().map(Vec::len).sum();
            let (sent, failed) = tx.send_batch(&out);
            sh.c.egress_tx_frames
                .fetch_add(sent as u64, Ordering::Relaxed);
            sh.c.egress_tx_failed
                .fetch_add(failed as u64, Ordering::Relaxed);
            sh.c.egress_tx_bytes
                .fetch_add(bytes as u64, Ordering::Relaxed);
            for f in out.drain(..) {
                recycle(&mut pool, f);
            }
        }
        sh.queue_packets
            .store(queue.len() as u64, Ordering::Relaxed);
        sh.queue_bytes
            .store(queue.bytes() as u64, Ordering::Relaxed);
        sh.queue_ern_bytes
            .store(queue.ern_bytes() as u64, Ordering::Relaxed);
        if let Some(red) = &queue.red {
            sh.red_avg.set(red.avg);
        }
        // Sleep until input, a notice, or the next departure.
        if !queue.is_empty() && rate.is_some() {
            waiter.arm(sh.clock.mono_ns_of(next_tx_ns.saturating_sub(SLACK_NS / 2)));
            waiter.wait(100);
        } else {
            waiter.arm(0);
            waiter.wait(if cfg.ern.enabled { 5 } else { 100 });
        }
    }
}

/// The ingress thread.
pub fn ingress(sh: Arc<Shared>, mut rx: RxPort, mut tx: TxPort) {
    let mut waiter = match Waiter::new() {
        Ok(w) => w,
        Err(e) => {
            eprintln!("satlab-gateway: ingress: epoll: {e}");
            return;
        }
    };
    if let Err(e) = waiter.add(rx.fd(), TOKEN_RX) {
        eprintln!("satlab-gateway: ingress: epoll add: {e}");
        return;
    }
    let cfg = &sh.cfg;
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut inbox: Vec<Vec<u8>> = Vec::new();
    let mut learn_tick: u32 = 0;
    let mut learned = false;
    while !sh.stop.load(Ordering::Relaxed) {
        if let Err(e) = read_frames(&mut rx, &mut pool, &mut inbox, &sh) {
            eprintln!("satlab-gateway: ingress: read: {e}");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if inbox.is_empty() {
            waiter.wait(100);
            continue;
        }
        for f in inbox.iter_mut() {
            sh.c.ingress_rx_frames.fetch_add(1, Ordering::Relaxed);
            learn_tick = learn_tick.wrapping_add(1);
            if !learned || learn_tick % 64 == 1 {
                learned |= learn_macs(&sh, f, false);
            }
            if !cfg.ceten.enabled {
                continue;
            }
            let Some(loc) = process::locate_tcp(f) else {
                continue;
            };
            let corr = sh.corruption_q16.load(Ordering::Relaxed) as u16;
            if let Some(fwd) = process::ceten_stamp(f, &loc, Some(corr), None) {
                sh.c.ceten_stamped.fetch_add(1, Ordering::Relaxed);
                if cfg.ceten.reflect {
                    let id = process::flow_of(f, &loc);
                    let mut m = sh.reflect.lock().expect("reflect lock");
                    if m.len() >= cfg.ceten.max_flows && !m.contains_key(&id) {
                        m.clear();
                    }
                    m.insert(id, fwd);
                }
            }
        }
        let bytes: usize = inbox.iter().map(Vec::len).sum();
        let (sent, failed) = tx.send_batch(&inbox);
        sh.c.ingress_tx_frames
            .fetch_add(sent as u64, Ordering::Relaxed);
        sh.c.ingress_tx_failed
            .fetch_add(failed as u64, Ordering::Relaxed);
        sh.c.ingress_tx_bytes
            .fetch_add(bytes as u64, Ordering::Relaxed);
        for f in inbox.drain(..) {
            recycle(&mut pool, f);
        }
    }
}
