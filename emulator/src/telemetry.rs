//! The telemetry stream: a Unix stream socket at `telemetry.socket`; every client gets
//! newline-delimited JSON (docs/emulator-contract.md):
//!
//! ```text
//! {"type":"telemetry","t_ms":1200.0,"direction":"forward","modcod":{...},"esn0_db":..., ...DirectionStatus}
//! {"type":"event","t_ms":1234.567,"direction":"forward","kind":"corrupted","len":1514,
//!  "src":"10.0.1.1","dst":"10.0.2.1","proto":6,"sport":5201,"dport":40000,"seq":123456,"hit":"payload"}
//! ```
//!
//! The direction threads never block on telemetry: they hand small fixed-size messages to this
//! thread through a bounded channel (`try_send`; a full channel counts `dropped_events`), and each
//! client has a bounded output buffer (lines that do not fit are dropped for that client and
//! counted in `dropped_lines`). A client that stops reading loses lines, never slows the link.

pub use linkmodel::records::EventKind;
use linkmodel::{Dir, DirectionStatus, HitRegion};
use packet::FlowKey;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

/// Capacity of the channel from the direction threads.
pub const CHANNEL_CAPACITY: usize = 65536;
/// Bytes buffered per client before lines are dropped for it.
pub const CLIENT_BUFFER_BYTES: usize = 4 << 20;

/// One per-packet link event (fixed size, no allocation).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    /// Run time of the outcome, ns.
    pub t_ns: u64,
    /// Direction.
    pub dir: Dir,
    /// What happened.
    pub kind: EventKind,
    /// Frame length in bytes (Ethernet header included).
    pub len: u32,
    /// Flow, when the headers it comes from are intact.
    pub flow: Option<FlowKey>,
    /// Where bit errors fell, for corrupted packets.
    pub hit: Option<HitRegion>,
}

impl Event {
    /// Builds an event, identifying the flow from `frame` only where no bit error touched the
    /// headers: an IP-header hit gives no flow fields; a transport-header hit keeps the addresses
    /// and protocol but not the ports and sequence.
    pub fn from_frame(
        t_ns: u64,
        dir: Dir,
        kind: EventKind,
        frame: &[u8],
        hit: Option<HitRegion>,
    ) -> Event {
        let flow = match hit {
            Some(HitRegion::IpHeader) => None,
            Some(HitRegion::TransportHeader) => FlowKey::parse(frame).map(|k| FlowKey {
                sport: 0,
                dport: 0,
                seq: None,
                ..k
            }),
            _ => FlowKey::parse(frame),
        };
        Event {
            t_ns,
            dir,
            kind,
            len: frame.len() as u32,
            flow,
            hit,
        }
    }
}

/// A message from a direction thread.
#[derive(Debug)]
pub enum Msg {
    /// A status snapshot (periodic, or because the MODCOD changed).
    Status {
        t_ns: u64,
        status: Box<DirectionStatus>,
    },
    /// A per-packet event.
    Event(Event),
}

fn hit_str(h: HitRegion) -> &'static str {
    match h {
        HitRegion::IpHeader => "ip_header",
        HitRegion::TransportHeader => "transport_header",
        HitRegion::Payload => "payload",
    }
}

fn push_t_ms(out: &mut String, t_ns: u64) {
    // Milliseconds since the emulator started, microsecond resolution.
    let _ = write!(out, "{}.{:03}", t_ns / 1_000_000, (t_ns / 1_000) % 1_000);
}

/// Encodes a status line (with the trailing newline) into `out`.
pub fn encode_status(out: &mut String, t_ns: u64, status: &DirectionStatus) {
    out.push_str("{\"type\":\"telemetry\",\"t_ms\":");
    push_t_ms(out, t_ns);
    let body = serde_json::to_string(status).unwrap_or_else(|_| "{}".into());
    if body.len() > 2 {
        out.push(',');
        out.push_str(&body[1..]);
    } else {
        out.push('}');
    }
    out.push('\n');
}

/// Encodes an event line (with the trailing newline) into `out`.
pub fn encode_event(out: &mut String, e: &Event) {
    out.push_str("{\"type\":\"event\",\"t_ms\":");
    push_t_ms(out, e.t_ns);
    let _ = write!(
        out,
        ",\"direction\":\"{}\",\"kind\":\"{}\",\"len\":{}",
        e.dir.as_str(),
        e.kind.as_str(),
        e.len
    );
    if let Some(f) = &e.flow {
        let _ = write!(
            out,
            ",\"src\":\"{}\",\"dst\":\"{}\",\"proto\":{}",
            f.src, f.dst, f.proto
        );
        if f.sport != 0 || f.dport != 0 || f.seq.is_some() {
            let _ = write!(out, ",\"sport\":{},\"dport\":{}", f.sport, f.dport);
            match f.seq {
                Some(s) => {
                    let _ = write!(out, ",\"seq\":{s}");
                }
                None => out.push_str(",\"seq\":null"),
            }
        }
    }
    match e.hit {
        Some(h) => {
            let _ = write!(out, ",\"hit\":\"{}\"", hit_str(h));
        }
        None => out.push_str(",\"hit\":null"),
    }
    out.push_str("}\n");
}

/// Counters shared with the control endpoint.
#[derive(Debug, Default)]
pub struct TelemetryStats {
    /// Connected clients.
    pub clients: AtomicUsize,
    /// Messages the direction threads could not queue (channel full).
    pub dropped_events: AtomicU64,
    /// Lines dropped for a slow client (its buffer full), summed over clients.
    pub dropped_lines: AtomicU64,
    /// Lines written to clients.
    pub lines_sent: AtomicU64,
}

/// The direction threads' side: never blocks.
#[derive(Clone)]
pub struct Sender {
    tx: SyncSender<Msg>,
    /// Shared counters.
    pub stats: Arc<TelemetryStats>,
}

impl Sender {
    /// Whether anyone listens (messages are not even built when not).
    pub fn has_clients(&self) -> bool {
        self.stats.clients.load(Ordering::Relaxed) > 0
    }

    /// Queues a message; counts it as dropped if the channel is full.
    pub fn send(&self, m: Msg) {
        match self.tx.try_send(m) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                self.stats.dropped_events.fetch_add(1, Ordering::Relaxed);
            }
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

struct Client {
    stream: UnixStream,
    buf: Vec<u8>,
    sent: usize,
}

impl Client {
    /// Appends a line unless the buffer is full; returns false when dropped.
    fn push(&mut self, line: &[u8]) -> bool {
        if self.buf.len() - self.sent + line.len() > CLIENT_BUFFER_BYTES {
            return false;
        }
        if self.sent > 0 && self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        }
        self.buf.extend_from_slice(line);
        true
    }

    /// Writes what the socket accepts without blocking; Err when the client is gone.
    fn flush(&mut self) -> io::Result<()> {
        while self.sent < self.buf.len() {
            match self.stream.write(&self.buf[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.sent == self.buf.len() {
            self.buf.clear();
            self.sent = 0;
        } else if self.sent > CLIENT_BUFFER_BYTES / 2 {
            self.buf.drain(..self.sent);
            self.sent = 0;
        }
        Ok(())
    }
}

/// The telemetry server (runs on its own thread).
pub struct Server {
    listener: UnixListener,
    path: PathBuf,
    rx: Receiver<Msg>,
    stats: Arc<TelemetryStats>,
    clients: Vec<Client>,
    line: String,
}

/// Binds the socket (replacing a stale socket file) and returns the server and the sender.
pub fn bind(path: &Path) -> io::Result<(Server, Sender)> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("telemetry.socket: cannot create {}: {e}", dir.display()),
                )
            })?;
        }
    }
    if path.exists() {
        if UnixStream::connect(path).is_ok() {
            return Err(io::Error::new(
                io::ErrorKind::AddrInUse,
                format!(
                    "telemetry.socket: {} is in use by another process",
                    path.display()
                ),
            ));
        }
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("telemetry.socket: cannot bind {}: {e}", path.display()),
        )
    })?;
    listener.set_nonblocking(true)?;
    let (tx, rx) = std::sync::mpsc::sync_channel(CHANNEL_CAPACITY);
    let stats = Arc::new(TelemetryStats::default());
    Ok((
        Server {
            listener,
            path: path.to_path_buf(),
            rx,
            stats: stats.clone(),
            clients: Vec::new(),
            line: String::new(),
        },
        Sender { tx, stats },
    ))
}

impl Server {
    /// Serves until `stop()` returns true; removes the socket file on return.
    pub fn run(mut self, stop: impl Fn() -> bool) {
        while !stop() {
            self.accept();
            match self.rx.recv_timeout(Duration::from_millis(20)) {
                Ok(m) => {
                    self.deliver(&m);
                    // Drain what is queued, bounded so accept/flush still happen.
                    for _ in 0..4096 {
                        match self.rx.try_recv() {
                            Ok(m) => self.deliver(&m),
                            Err(_) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.flush();
        }
        let _ = std::fs::remove_file(&self.path);
    }

    fn accept(&mut self) {
        while let Ok((stream, _)) = self.listener.accept() {
            if stream.set_nonblocking(true).is_ok() {
                let _ = stream.shutdown(std::net::Shutdown::Read);
                self.clients.push(Client {
                    stream,
                    buf: Vec::new(),
                    sent: 0,
                });
                self.stats
                    .clients
                    .store(self.clients.len(), Ordering::Relaxed);
            }
        }
    }

    fn deliver(&mut self, m: &Msg) {
        if self.clients.is_empty() {
            return;
        }
        self.line.clear();
        match m {
            Msg::Status { t_ns, status } => encode_status(&mut self.line, *t_ns, status),
            Msg::Event(e) => encode_event(&mut self.line, e),
        }
        for c in &mut self.clients {
            if c.push(self.line.as_bytes()) {
                self.stats.lines_sent.fetch_add(1, Ordering::Relaxed);
            } else {
                self.stats.dropped_lines.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn flush(&mut self) {
        let before = self.clients.len();
        self.clients.retain_mut(|c| c.flush().is_ok());
        if self.clients.len() != before {
            self.stats
                .clients
                .store(self.clients.len(), Ordering::Relaxed);
        }
    }
}

/// Removes the socket file (used on shutdown paths that do not run the server loop to its end).
pub fn remove_socket(path: &Path) {
    let _ = std::fs::remove_file(path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkmodel::{Counters, DamaStatus, ModcodStatus, TerminalStatus};
    use std::io::{BufRead, BufReader};
    use std::net::{IpAddr, Ipv4Addr};

    fn status() -> DirectionStatus {
        DirectionStatus {
            direction: Dir::Forward,
            modcod: Some(ModcodStatus {
                id: 27,
                name: "32APSK 9/10".into(),
                efficiency: 4.45,
                required_esn0_db: 16.05,
            }),
            esn0_db: 17.5,
            attenuation_db: 0.5,
            useful_rate_bps: 171e6,
            delay_ms: 135.0,
            ber: 0.0,
            queue_packets: 3,
            queue_bytes: 4500,
            counters: Counters {
                offered_packets: 10,
                ..Default::default()
            },
            classes: Vec::new(),
            dama: None,
            terminals: Vec::new(),
            carrier_useful_rate_bps: None,
        }
    }

    #[test]
    fn status_line_is_contract_json() {
        let mut s = String::new();
        encode_status(&mut s, 1_200_000_000, &status());
        assert!(s.ends_with('\n') && !s[..s.len() - 1].contains('\n'));
        assert!(
            s.starts_with("{\"type\":\"telemetry\",\"t_ms\":1200.000,\"direction\":\"forward\"")
        );
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["type"], "telemetry");
        assert_eq!(v["t_ms"], 1200.0);
        assert_eq!(v["modcod"]["id"], 27);
        assert_eq!(v["esn0_db"], 17.5);
        assert_eq!(v["queue_packets"], 3);
        assert_eq!(v["counters"]["offered_packets"], 10);
        for k in [
            "useful_rate_bps",
            "delay_ms",
            "ber",
            "queue_bytes",
            "attenuation_db",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
    }

    /// Every line the fast encoder writes is a linkmodel::records::TelemetryLine, field for field.
    fn assert_is_record(line: &str) {
        let raw: serde_json::Value = serde_json::from_str(line).unwrap();
        let rec: linkmodel::records::TelemetryLine = serde_json::from_str(line).unwrap();
        assert_eq!(serde_json::to_value(&rec).unwrap(), raw, "{line}");
    }

    #[test]
    fn every_line_is_a_telemetry_record() {
        let mut s = String::new();
        encode_status(&mut s, 1_200_000_000, &status());
        assert_is_record(&s);
        let mut udp = tcp_frame();
        udp[14 + 9] = 17;
        for (frame, hit) in [
            (tcp_frame(), None),
            (tcp_frame(), Some(HitRegion::Payload)),
            (tcp_frame(), Some(HitRegion::TransportHeader)),
            (tcp_frame(), Some(HitRegion::IpHeader)),
            (udp, None),
        ] {
            let mut s = String::new();
            let e = Event::from_frame(7, Dir::Forward, EventKind::Corrupted, &frame, hit);
            encode_event(&mut s, &e);
            assert_is_record(&s);
        }
    }

    /// A return beam's status: two terminals, each with its own queue and DAMA grant.
    fn return_beam_status() -> DirectionStatus {
        let terminal = |name: &str, queue_packets: u64, granted_kbps: f64| TerminalStatus {
            name: name.into(),
            modcod: None,
            esn0_db: 8.0,
            attenuation_db: 0.0,
            useful_rate_bps: 3.2e6,
            queue_packets,
            queue_bytes: queue_packets * 1500,
            frames: 12,
            sent_bytes: 9000,
            counters: Counters::default(),
            dama: Some(Box::new(DamaStatus {
                superframe: 40,
                request_delay_superframes: 20,
                slot_bytes: 107,
                requested_rbdc_kbps: 2048.0,
                requested_vbdc_bytes: 0,
                granted_slots: 5,
                granted_kbps,
                cra_kbps: 64.6,
                rbdc_kbps: granted_kbps - 64.6,
                vbdc_kbps: 0.0,
                fca_kbps: 0.0,
                contention_attempts: 0,
                contention_collisions: 0,
                contention_beam_collisions: 0,
            })),
        };
        DirectionStatus {
            direction: Dir::Return,
            terminals: vec![terminal("clear", 0, 1291.7), terminal("rainy", 14, 322.9)],
            ..status()
        }
    }

    /// The run view's per-terminal table and grant chart read these from the stored stream.
    #[test]
    fn status_line_carries_each_terminals_queue_and_grant() {
        let mut s = String::new();
        encode_status(&mut s, 2_000_000_000, &return_beam_status());
        assert_is_record(&s);
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let names: Vec<&str> = v["terminals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["clear", "rainy"]);
        assert_eq!(v["terminals"][1]["queue_packets"], 14);
        assert_eq!(v["terminals"][1]["dama"]["granted_kbps"], 322.9);
        assert_eq!(v["terminals"][0]["dama"]["requested_rbdc_kbps"], 2048.0);
    }

    fn tcp_frame() -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
        f.extend_from_slice(&[
            0x45, 0x00, 0x00, 0x2b, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x97, 0x0a, 0x00,
            0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x14, 0x51, 0x01, 0x02, 0x03, 0x04,
            0x0a, 0x0b, 0x0c, 0x0d, 0x50, 0x18, 0xfa, 0xf0, 0x4c, 0xbd, 0x00, 0x00, 0x68, 0x69,
            0x21,
        ]);
        f
    }

    #[test]
    fn event_line_with_flow() {
        let e = Event::from_frame(
            1_234_567_890,
            Dir::Return,
            EventKind::Corrupted,
            &tcp_frame(),
            Some(HitRegion::Payload),
        );
        let mut s = String::new();
        encode_event(&mut s, &e);
        assert_eq!(
            s,
            "{\"type\":\"event\",\"t_ms\":1234.567,\"direction\":\"return\",\"kind\":\"corrupted\",\"len\":57,\
             \"src\":\"10.0.0.1\",\"dst\":\"10.0.0.2\",\"proto\":6,\"sport\":40000,\"dport\":5201,\"seq\":16909060,\
             \"hit\":\"payload\"}\n"
        );
        serde_json::from_str::<serde_json::Value>(&s).unwrap();
    }

    /// `e` as its stream line, parsed back.
    fn encoded(e: &Event) -> serde_json::Value {
        let mut s = String::new();
        encode_event(&mut s, e);
        serde_json::from_str(&s).unwrap()
    }

    #[test]
    fn event_flow_fields_only_when_headers_intact() {
        let f = tcp_frame();
        let forward =
            |t_ns, kind, hit| encoded(&Event::from_frame(t_ns, Dir::Forward, kind, &f, hit));

        let v = forward(0, EventKind::Corrupted, Some(HitRegion::IpHeader));
        assert!(v.get("src").is_none() && v.get("sport").is_none());
        assert_eq!(v["hit"], "ip_header");

        let v = forward(0, EventKind::Corrupted, Some(HitRegion::TransportHeader));
        assert_eq!(v["src"], "10.0.0.1");
        assert!(v.get("sport").is_none() && v.get("seq").is_none());

        let v = forward(5_000, EventKind::QueueDrop, None);
        assert_eq!(v["kind"], "queue_drop");
        assert_eq!(v["t_ms"], 0.005);
        assert_eq!(v["seq"], 16909060);
        assert!(v["hit"].is_null());

        let udp = Event {
            t_ns: 0,
            dir: Dir::Forward,
            kind: EventKind::Delivered,
            len: 60,
            flow: Some(FlowKey {
                src: IpAddr::V4(Ipv4Addr::LOCALHOST),
                dst: IpAddr::V4(Ipv4Addr::LOCALHOST),
                proto: 17,
                sport: 1,
                dport: 2,
                seq: None,
            }),
            hit: None,
        };
        let v = encoded(&udp);
        assert!(v["seq"].is_null());
        assert_eq!(v["dport"], 2);
    }

    #[test]
    fn slow_client_is_bounded_and_fast_client_gets_lines() {
        let dir = std::env::temp_dir().join(format!("satlab-tele-test-{}", std::process::id()));
        let path = dir.join("t.sock");
        let (mut server, sender) = bind(&path).unwrap();
        let slow = UnixStream::connect(&path).unwrap(); // never reads
        let fast = UnixStream::connect(&path).unwrap();
        server.accept();
        assert_eq!(sender.stats.clients.load(Ordering::Relaxed), 2);
        let ev = Event::from_frame(1, Dir::Forward, EventKind::Erased, &tcp_frame(), None);
        let mut reader = BufReader::new(fast.try_clone().unwrap());
        let mut got = 0;
        let mut line = String::new();
        // Far more than the slow client's buffer plus the socket buffer can hold.
        for round in 0..200 {
            for _ in 0..1000 {
                server.deliver(&Msg::Event(ev));
            }
            server.flush();
            if round == 0 {
                reader.read_line(&mut line).unwrap();
                got += 1;
            }
            // Keep the fast client drained.
            fast.set_nonblocking(true).unwrap();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(n) if n > 0 => got += 1,
                    _ => break,
                }
            }
        }
        assert!(got > 100_000, "fast client got {got}");
        assert!(sender.stats.dropped_lines.load(Ordering::Relaxed) > 0);
        drop(slow);
        drop(server);
        let _ = std::fs::remove_dir_all(dir);
    }
}
