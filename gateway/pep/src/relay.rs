//! One relayed connection: two threads, one per direction, each moving bytes socket -> pipe ->
//! socket with splice(2) (no copy through user space), with half-close and reset carried across.
//!
//! Threads, not async: splice on blocking sockets is the whole data path, the kernel does the
//! waiting, and a direction's state is its stack (EOF, drain, wait for the peer's close). Two
//! threads of 128 KiB stack per connection keep 4096 connections near 1 GiB of address space but
//! a few MiB of touched memory; set-up cost is one thread spawn per leg (measured by make bench-pep).
//!
//! Rules (pep/README.md):
//! - FIN on one leg (splice returns 0) -> shutdown(SHUT_WR) on the other leg; the connection ends
//!   when both directions have seen their FIN.
//! - RST on one leg (ECONNRESET/EPIPE/ETIMEDOUT reading it or writing to it) -> SO_LINGER {1, 0}
//!   on the other leg and close, so its peer sees a reset too. After its FIN a direction keeps
//!   watching its source for an error (poll POLLERR), so a reset after a half-close crosses too.
//! - Nothing moved either way for idle_timeout_s -> both legs reset.

use crate::sock::{self, Pipe};
use crate::state::{unix_now, Counters, End, Record, Shared};
use std::io;
use std::net::SocketAddrV4;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const STACK_BYTES: usize = 128 << 10;

/// The two legs of one intercepted connection.
pub struct Conn {
    sh: Arc<Shared>,
    id: u64,
    accepted_from: &'static str,
    client: SocketAddrV4,
    server: SocketAddrV4,
    start_unix_s: f64,
    t0: Instant,
    /// Leg 0: the client's (accepted); leg 1: the server's (outgoing).
    legs: [OwnedFd; 2],
    /// Bytes relayed: [client -> server, server -> client].
    bytes: [AtomicU64; 2],
    last_activity_ns: AtomicU64,
    aborted: AtomicBool,
    end: Mutex<Option<(End, Option<String>)>>,
}

/// Who is at the far end of leg `i`.
fn reset_by(leg: usize) -> End {
    if leg == 0 {
        End::ResetByClient
    } else {
        End::ResetByServer
    }
}

impl Conn {
    fn touch(&self) {
        self.last_activity_ns
            .store(self.t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    fn set_end(&self, e: End, err: Option<String>) {
        let mut end = self.end.lock().expect("end lock");
        if end.is_none() {
            *end = Some((e, err));
        }
    }

    /// Ends the connection: `victims` get an abortive close (a reset to their peer), and every
    /// thread blocked reading either leg wakes up (shutdown SHUT_RD sends nothing on the wire).
    fn abort(&self, victims: &[usize], e: End, err: Option<String>) {
        self.set_end(e, err);
        self.aborted.store(true, Ordering::SeqCst);
        for &v in victims {
            sock::set_abortive_close(self.legs[v].as_raw_fd());
        }
        for leg in &self.legs {
            sock::shutdown(leg.as_raw_fd(), libc::SHUT_RD);
        }
    }

    fn aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
    }

    /// True (and both legs reset) if nothing moved for idle_timeout_s.
    fn idle_expired(&self) -> bool {
        // saturating: another direction may have touched the clock after `now` was read
        let now = self.t0.elapsed().as_nanos() as u64;
        let idle = now.saturating_sub(self.last_activity_ns.load(Ordering::Relaxed));
        if idle as f64 * 1e-9 >= self.sh.cfg.settings.idle_timeout_s {
            self.abort(&[0, 1], End::IdleTimeout, None);
            return true;
        }
        false
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let (end, error) = self
            .end
            .lock()
            .expect("end lock")
            .take()
            .unwrap_or((End::Closed, None));
        self.sh.c.ended(end);
        self.sh.c.active.fetch_sub(1, Ordering::Relaxed);
        self.sh.push_record(Record {
            id: self.id,
            accepted_from: self.accepted_from,
            client: self.client.to_string(),
            server: self.server.to_string(),
            start_unix_s: self.start_unix_s,
            end_unix_s: unix_now(),
            bytes_client_to_server: self.bytes[0].load(Ordering::Relaxed),
            bytes_server_to_client: self.bytes[1].load(Ordering::Relaxed),
            end,
            error,
        });
        // legs close here; a victim's SO_LINGER {1, 0} makes its close a reset
    }
}

fn is_timeout(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
}

/// Moves leg `src` -> the other leg until FIN, reset, idle timeout or abort.
fn pump(c: Arc<Conn>, src: usize) {
    let dst = 1 - src;
    let (s, d): (RawFd, RawFd) = (c.legs[src].as_raw_fd(), c.legs[dst].as_raw_fd());
    let counter = if src == 0 {
        &c.sh.c.bytes_client_to_server
    } else {
        &c.sh.c.bytes_server_to_client
    };
    let pipe = match Pipe::new(c.sh.cfg.pipe_bytes) {
        Ok(p) => p,
        Err(e) => return c.abort(&[0, 1], End::Stopped, Some(format!("pipe: {e}"))),
    };
    let chunk = c.sh.cfg.pipe_bytes as usize;
    loop {
        if c.aborted() {
            return;
        }
        match sock::splice(s, pipe.w.as_raw_fd(), chunk) {
            Ok(0) => break,
            Ok(n) => {
                if !drain(&c, &pipe, d, n, src, counter) {
                    return;
                }
            }
            // reading failed: src's peer reset (or the leg timed out)
            Err(e) => {
                if !retry_after(&c, &e, dst, src) {
                    return;
                }
            }
        }
    }
    if c.aborted() {
        return; // the EOF was our own SHUT_RD
    }
    sock::shutdown(d, libc::SHUT_WR);
    watch_half_closed(&c, s, src);
}

/// Moves the `n` bytes just read into the pipe on to leg `d`; false when the direction ends.
fn drain(c: &Conn, pipe: &Pipe, d: RawFd, n: usize, src: usize, counter: &AtomicU64) -> bool {
    let mut left = n;
    while left > 0 {
        match sock::splice(pipe.r.as_raw_fd(), d, left) {
            Ok(k) => {
                left -= k;
                c.bytes[src].fetch_add(k as u64, Ordering::Relaxed);
                Counters::add(counter, k as u64);
                c.touch();
            }
            // writing failed: dst's peer reset (or the leg timed out)
            Err(e) => {
                if !retry_after(c, &e, src, 1 - src) {
                    return false;
                }
            }
        }
    }
    true
}

/// After a failed splice: true to try again (interrupted, or blocked and neither aborted nor
/// idle too long); otherwise false, and a real error aborts leg `victim` as reset by `by`'s peer.
fn retry_after(c: &Conn, e: &io::Error, victim: usize, by: usize) -> bool {
    if e.kind() == io::ErrorKind::Interrupted {
        return true;
    }
    if is_timeout(e) {
        return !(c.aborted() || c.idle_expired());
    }
    if !c.aborted() {
        c.abort(&[victim], reset_by(by), Some(e.to_string()));
    }
    false
}

/// Half-closed: the source can still be reset. POLLHUP comes once the other direction has shut
/// the source for writing too (or the source closed); POLLERR with a reset.
fn watch_half_closed(c: &Conn, s: RawFd, src: usize) {
    let tick = Duration::from_millis(200);
    loop {
        if c.aborted() {
            return;
        }
        let rev = sock::poll_one(s, 0, tick);
        let err = sock::take_error(s);
        if err != 0 || rev & libc::POLLERR != 0 {
            c.abort(
                &[1 - src],
                reset_by(src),
                Some(io::Error::from_raw_os_error(err).to_string()),
            );
            return;
        }
        if rev & libc::POLLHUP != 0 || c.idle_expired() {
            return;
        }
    }
}

/// How often a blocked direction wakes to check the idle clock and an abort by the other one.
fn tick(sh: &Shared) -> Duration {
    Duration::from_secs_f64((sh.cfg.settings.idle_timeout_s / 4.0).clamp(0.05, 1.0))
}

/// Serves one accepted connection: opens the server leg from the client's own address (original
/// addresses preserved), then relays. `active` was already counted by the acceptor.
pub fn serve(
    sh: Arc<Shared>,
    a: OwnedFd,
    client: SocketAddrV4,
    server: SocketAddrV4,
    from_satellite: bool,
) {
    let start_unix_s = unix_now();
    let id = sh.next_id.fetch_add(1, Ordering::Relaxed);
    let accepted_from = if from_satellite {
        "satellite"
    } else {
        "terrestrial"
    };
    let b = match open_server_leg(&sh, &a, client, server, from_satellite) {
        Ok(b) => b,
        Err(e) => {
            sock::set_abortive_close(a.as_raw_fd());
            drop(a);
            sh.c.ended(End::ConnectFailed);
            sh.c.active.fetch_sub(1, Ordering::Relaxed);
            sh.push_record(Record {
                id,
                accepted_from,
                client: client.to_string(),
                server: server.to_string(),
                start_unix_s,
                end_unix_s: unix_now(),
                bytes_client_to_server: 0,
                bytes_server_to_client: 0,
                end: End::ConnectFailed,
                error: Some(e.to_string()),
            });
            return;
        }
    };
    let t = tick(&sh);
    for leg in [&a, &b] {
        let _ = sock::set_timeouts(leg, t);
    }
    let c = Arc::new(Conn {
        sh,
        id,
        accepted_from,
        client,
        server,
        start_unix_s,
        t0: Instant::now(),
        legs: [a, b],
        bytes: [AtomicU64::new(0), AtomicU64::new(0)],
        last_activity_ns: AtomicU64::new(0),
        aborted: AtomicBool::new(false),
        end: Mutex::new(None),
    });
    let c2 = c.clone();
    if let Err(e) = std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(move || pump(c2, 1))
    {
        c.abort(&[0, 1], End::Stopped, Some(format!("thread: {e}")));
        return;
    }
    pump(c, 0);
}

fn open_server_leg(
    sh: &Shared,
    a: &OwnedFd,
    client: SocketAddrV4,
    server: SocketAddrV4,
    from_satellite: bool,
) -> io::Result<OwnedFd> {
    let s = &sh.cfg.settings;
    let b = sock::transparent_tcp()?;
    let sat = if from_satellite { a } else { &b };
    if s.buffer_bytes > 0 && !from_satellite {
        sock::set_buffers(&b, s.buffer_bytes)?; // the accepted leg inherits the listener's
    }
    sock::set_congestion(sat, &s.congestion_control)?;
    // The client's own address and port; if that port is taken here (a TIME_WAIT of an earlier
    // connection with the same ports), the client's address with a free port.
    if let Err(e) = sock::bind(&b, client) {
        if e.raw_os_error() != Some(libc::EADDRINUSE) {
            return Err(e);
        }
        sock::bind(&b, SocketAddrV4::new(*client.ip(), 0))?;
    }
    sock::set_timeouts(&b, Duration::from_secs_f64(sh.cfg.connect_timeout_s))?;
    sock::connect(&b, server)
        .map_err(|e| io::Error::new(e.kind(), format!("connect {server}: {e}")))?;
    Ok(b)
}

/// Accepts on one TPROXY listener forever: the cap is enforced here (one over it: reset, counted).
pub fn accept_loop(sh: Arc<Shared>, listener: OwnedFd, from_satellite: bool) {
    loop {
        let (a, client, server) = match sock::accept(&listener) {
            Ok(x) => x,
            Err(e)
                if e.raw_os_error() == Some(libc::EMFILE)
                    || e.raw_os_error() == Some(libc::ENFILE) =>
            {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(_) => {
                // ECONNABORTED and the like: that client is gone; anything persistent must not spin
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        };
        Counters::add(&sh.c.accepted, 1);
        let active = sh.c.active.fetch_add(1, Ordering::Relaxed) + 1;
        if active > sh.cfg.settings.max_connections as u64 {
            sh.c.active.fetch_sub(1, Ordering::Relaxed);
            Counters::add(&sh.c.refused_cap, 1);
            sock::set_abortive_close(a.as_raw_fd());
            continue; // dropped: the client gets a reset
        }
        sh.c.peak_active.fetch_max(active, Ordering::Relaxed);
        let s = sh.clone();
        let spawned = std::thread::Builder::new()
            .stack_size(STACK_BYTES)
            .spawn(move || serve(s, a, client, server, from_satellite));
        if spawned.is_err() {
            sh.c.active.fetch_sub(1, Ordering::Relaxed);
            Counters::add(&sh.c.refused_cap, 1);
        }
    }
}

/// A TPROXY listener on 0.0.0.0:port; the satellite-side one carries the satellite leg's
/// buffers (set before listen so the window scale covers them) and congestion control.
pub fn listener(sh: &Shared, port: u16, from_satellite: bool) -> io::Result<OwnedFd> {
    let l = sock::transparent_tcp()?;
    if from_satellite {
        if sh.cfg.settings.buffer_bytes > 0 {
            sock::set_buffers(&l, sh.cfg.settings.buffer_bytes)?;
        }
        sock::set_congestion(&l, &sh.cfg.settings.congestion_control)?;
    }
    sock::bind(&l, SocketAddrV4::new([0, 0, 0, 0].into(), port))
        .map_err(|e| io::Error::new(e.kind(), format!("listen port {port}: {e}")))?;
    sock::listen(&l, 4096)?;
    Ok(l)
}
