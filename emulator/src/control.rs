//! Control HTTP endpoint (HTTP/1.1, one small thread, no async runtime):
//!
//! - `GET /status`   -> `{"uptime_s":..,"forward":DirectionStatus,"return":DirectionStatus}`
//! - `POST /control` -> body `{"direction":"forward"|"return"|"both", "attenuation_db":..,
//!   "resume_trace":..,"ber":..,"delay_ms":.., "terminal":..}`; 200 with the new status (same
//!   document as GET /status), or 400 `{"error":"<field>: <reason and limit>"}`. `direction`
//!   defaults to `both`; `terminal` (a forward beam's terminal) limits it to that terminal.
//! - `GET /metrics`  -> Prometheus text exposition format 0.0.4.
//!
//! Commands reach the direction threads through a channel each thread checks every loop (an
//! eventfd wakes it when it sleeps); the HTTP thread waits for the answer.

use crate::dataplane::{Cmd, DirHandle, PortStats};
use crate::release::PROM_BOUNDS_US;
use crate::telemetry::TelemetryStats;
use binkit::prom;
use linkmodel::records::{EmulatorStatus, ReleaseErrors};
use linkmodel::{ClassStatus, ControlCommand, ControlRequest, ControlTarget, Dir, DirectionStatus};
use serde_json::{json, Map, Value};
use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024;

const FIELDS: &str = "direction, attenuation_db, resume_trace, ber, delay_ms, terminal";

/// A 400 answer's message, `<field>: <reason>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRequest(pub String);

/// A number field's value (its range is checked by the request's own rules).
fn number(obj: &Map<String, Value>, key: &str) -> Result<Option<f64>, BadRequest> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .map(Some)
            .ok_or_else(|| BadRequest(format!("{key}: not a number"))),
        Some(other) => Err(BadRequest(format!(
            "{key}: expected a number, got {}",
            type_name(other)
        ))),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Parses and validates a POST /control body: its shape here (field names and JSON types, with
/// messages naming the field), its rules in linkmodel::control (bounds, conflicts), which also
/// print its JSON Schema.
pub fn parse_control(body: &[u8]) -> Result<(ControlTarget, ControlCommand), BadRequest> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| BadRequest(format!("body: invalid JSON ({e})")))?;
    let Value::Object(obj) = v else {
        return Err(BadRequest(format!(
            "body: expected a JSON object with fields {FIELDS}"
        )));
    };
    let mut unknown: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !FIELDS.split(", ").any(|f| f == *k))
        .collect();
    if !unknown.is_empty() {
        unknown.sort_unstable();
        return Err(BadRequest(format!(
            "{}: unknown field (allowed: {FIELDS})",
            unknown.join(", ")
        )));
    }
    let direction = match obj.get("direction") {
        None | Some(Value::Null) => ControlTarget::Both,
        Some(Value::String(s)) => match s.as_str() {
            "forward" => ControlTarget::Forward,
            "return" => ControlTarget::Return,
            "both" => ControlTarget::Both,
            _ => {
                return Err(BadRequest(format!(
                    "direction: {s:?} is not one of forward, return, both"
                )))
            }
        },
        Some(other) => {
            return Err(BadRequest(format!(
                "direction: expected \"forward\", \"return\" or \"both\", got {}",
                type_name(other)
            )))
        }
    };
    let resume_trace = match obj.get("resume_trace") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(other) => {
            return Err(BadRequest(format!(
                "resume_trace: expected a boolean, got {}",
                type_name(other)
            )))
        }
    };
    let terminal = match obj.get("terminal") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(BadRequest(format!(
                "terminal: expected a terminal's name (a string), got {}",
                type_name(other)
            )))
        }
    };
    let request = ControlRequest {
        direction,
        attenuation_db: number(&obj, "attenuation_db")?,
        resume_trace,
        ber: number(&obj, "ber")?,
        delay_ms: number(&obj, "delay_ms")?,
        terminal,
    };
    request
        .into_command()
        .map_err(|e| BadRequest(e.to_string()))
}

/// The /status document: each direction's model status, and how late the data plane released
/// delivered packets against the model's delivery times (`release_error`, µs quantiles).
pub fn status_doc(
    uptime_s: f64,
    fwd: &DirectionStatus,
    ret: &DirectionStatus,
    ports: [&PortStats; 2],
) -> EmulatorStatus {
    EmulatorStatus {
        uptime_s,
        forward: fwd.clone(),
        return_: ret.clone(),
        release_error: ReleaseErrors {
            forward: ports[0].release.summary(),
            return_: ports[1].release.summary(),
        },
    }
}

/// One parsed HTTP request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Method (GET, POST, ...).
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// Body bytes.
    pub body: Vec<u8>,
}

/// Reads one request (request line, headers, Content-Length body).
pub fn read_request<R: BufRead>(r: &mut R) -> io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "bad request line",
        ));
    };
    let method = method.to_string();
    let path = target.split('?').next().unwrap_or("/").to_string();
    let mut content_length = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            break;
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                content_length = v.trim().parse().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidData, "bad Content-Length")
                })?;
            }
        }
    }
    if content_length > MAX_BODY {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "body too large"));
    }
    let mut body = vec![0u8; content_length];
    r.read_exact(&mut body)?;
    Ok(Some(Request { method, path, body }))
}

/// An HTTP response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// Status code.
    pub code: u16,
    /// Content type.
    pub content_type: &'static str,
    /// Body.
    pub body: String,
}

impl Response {
    fn json(code: u16, v: &impl serde::Serialize) -> Response {
        Response {
            code,
            content_type: "application/json",
            body: serde_json::to_string(v).expect("a record serializes") + "\n",
        }
    }

    fn error(code: u16, msg: &str) -> Response {
        Response::json(code, &json!({ "error": msg }))
    }

    fn write_to<W: Write>(&self, w: &mut W) -> io::Result<()> {
        let reason = match self.code {
            200 => "OK",
            400 => "Bad Request",
            404 => "Not Found",
            405 => "Method Not Allowed",
            500 => "Internal Server Error",
            503 => "Service Unavailable",
            _ => "",
        };
        write!(
            w,
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
            self.code,
            reason,
            self.content_type,
            self.body.len(),
            self.body
        )?;
        w.flush()
    }
}

/// The control server's view of the emulator.
pub struct Controller {
    /// Handles of the forward and return threads.
    pub dirs: [DirHandle; 2],
    /// Per-direction port counters.
    pub port_stats: [Arc<PortStats>; 2],
    /// Telemetry counters.
    pub telemetry: Arc<TelemetryStats>,
    /// The st port as a VLAN trunk (a beam's terminals with VLANs): its counters.
    pub trunk: Option<Arc<crate::vlans::StVlans>>,
    /// Run clock.
    pub clock: netio::sys::Clock,
}

impl Controller {
    fn handle(&self, d: Dir) -> &DirHandle {
        match d {
            Dir::Forward => &self.dirs[0],
            Dir::Return => &self.dirs[1],
        }
    }

    fn status_of(&self, d: Dir) -> Option<DirectionStatus> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.handle(d).send(Cmd::Status(tx));
        rx.recv_timeout(Duration::from_secs(2)).ok()
    }

    fn statuses(&self) -> Option<(DirectionStatus, DirectionStatus)> {
        Some((self.status_of(Dir::Forward)?, self.status_of(Dir::Return)?))
    }

    fn status_doc(&self, f: &DirectionStatus, r: &DirectionStatus) -> EmulatorStatus {
        let ports = [&*self.port_stats[0], &*self.port_stats[1]];
        status_doc(self.uptime_s(), f, r, ports)
    }

    fn uptime_s(&self) -> f64 {
        self.clock.now_ns() as f64 / 1e9
    }

    /// Routes one request.
    pub fn respond(&self, req: &Request) -> Response {
        match (req.method.as_str(), req.path.as_str()) {
            ("GET", "/status") => match self.statuses() {
                Some((f, r)) => Response::json(200, &self.status_doc(&f, &r)),
                None => Response::error(503, "status: data plane did not answer"),
            },
            ("POST", "/control") => {
                let (target, cmd) = match parse_control(&req.body) {
                    Ok(x) => x,
                    Err(BadRequest(m)) => return Response::error(400, &m),
                };
                for &d in target.dirs() {
                    let (tx, rx) = std::sync::mpsc::sync_channel(1);
                    self.handle(d).send(Cmd::Control(cmd.clone(), tx));
                    match rx.recv_timeout(Duration::from_secs(2)) {
                        Ok(Ok(())) => {}
                        Ok(Err(m)) => return Response::error(400, &m),
                        Err(_) => {
                            return Response::error(503, "control: data plane did not answer")
                        }
                    }
                }
                crate::log(&format!(
                    "control: {} {:?}",
                    String::from_utf8_lossy(&req.body).trim(),
                    target
                ));
                match self.statuses() {
                    Some((f, r)) => Response::json(200, &self.status_doc(&f, &r)),
                    None => Response::error(503, "status: data plane did not answer"),
                }
            }
            ("GET", "/metrics") => match self.statuses() {
                Some((f, r)) => Response {
                    code: 200,
                    content_type: "text/plain; version=0.0.4",
                    body: {
                        let mut m = metrics_text(
                            self.uptime_s(),
                            [&f, &r],
                            [&self.port_stats[0], &self.port_stats[1]],
                            &self.telemetry,
                        );
                        if let Some(t) = &self.trunk {
                            t.metrics(&mut m);
                        }
                        m
                    },
                },
                None => Response::error(503, "metrics: data plane did not answer"),
            },
            (_, "/status") | (_, "/control") | (_, "/metrics") => Response::error(
                405,
                &format!("{}: method not allowed on {}", req.method, req.path),
            ),
            _ => Response::error(
                404,
                &format!(
                    "{}: not found (GET /status, POST /control, GET /metrics)",
                    req.path
                ),
            ),
        }
    }

    /// Serves connections until `stop()` (checked every 20 ms), each on its own short-lived
    /// thread (at most 16 at once), so a slow client does not hold up the others.
    pub fn serve(self: &Arc<Self>, listener: TcpListener, stop: impl Fn() -> bool) {
        let _ = listener.set_nonblocking(true);
        let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        while !stop() {
            match listener.accept() {
                Ok((stream, _)) => {
                    if active.load(Ordering::Relaxed) >= 16 {
                        let mut s = stream;
                        let _ =
                            Response::error(503, "control: too many connections").write_to(&mut s);
                        continue;
                    }
                    active.fetch_add(1, Ordering::Relaxed);
                    let (me, act) = (self.clone(), active.clone());
                    let spawned = std::thread::Builder::new()
                        .name("control-conn".into())
                        .spawn(move || {
                            me.connection(stream);
                            act.fetch_sub(1, Ordering::Relaxed);
                        });
                    if spawned.is_err() {
                        active.fetch_sub(1, Ordering::Relaxed);
                    }
                }
                Err(_) => std::thread::sleep(Duration::from_millis(20)),
            }
        }
    }

    fn connection(&self, stream: TcpStream) {
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let Ok(mut w) = stream.try_clone() else {
            return;
        };
        let mut r = BufReader::new(stream);
        let resp = match read_request(&mut r) {
            Ok(Some(req)) => self.respond(&req),
            Ok(None) => return,
            Err(e) => Response::error(400, &format!("request: {e}")),
        };
        let _ = resp.write_to(&mut w);
    }
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, values: &[(&str, f64)]) {
    let name = format!("satlab_emulator_{name}");
    prom::header(out, &name, kind, help);
    for (dir, v) in values {
        prom::sample(out, &name, &format!("{{direction=\"{dir}\"}}"), v);
    }
}

/// The release error of each direction as a Prometheus histogram (seconds).
fn release_histogram(out: &mut String, dirs: &[&str; 2], ports: [&PortStats; 2]) {
    let name = "satlab_emulator_release_error_seconds";
    let help =
        "How late delivered packets left the output port, against the model's delivery time.";
    prom::header(out, name, "histogram", help);
    for (dir, p) in dirs.iter().zip(ports) {
        let (cum, total) = p.release.cumulative(&PROM_BOUNDS_US);
        for (le, n) in PROM_BOUNDS_US.iter().zip(cum) {
            let le_s = *le as f64 / 1e6;
            let _ = writeln!(
                out,
                "{name}_bucket{{direction=\"{dir}\",le=\"{le_s}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "{name}_bucket{{direction=\"{dir}\",le=\"+Inf\"}} {total}"
        );
        let _ = writeln!(
            out,
            "{name}_sum{{direction=\"{dir}\"}} {}",
            p.release.sum_s()
        );
        let _ = writeln!(out, "{name}_count{{direction=\"{dir}\"}} {total}");
    }
}

/// The per-class queue metrics (`queue.classes`), labelled `direction` and `class`; nothing for a
/// direction without classes.
fn class_metrics(out: &mut String, st: [&DirectionStatus; 2]) {
    let defs: [ItemDef<ClassStatus>; 9] = [
        ("class_queue_packets", "gauge", "Packets of the class in the queue.", |c| {
            c.queue_packets as f64
        }),
        ("class_queue_bytes", "gauge", "Bytes of the class in the queue.", |c| {
            c.queue_bytes as f64
        }),
        (
            "class_enqueued_packets_total",
            "counter",
            "Packets queued in the class.",
            |c| c.enqueued_packets as f64,
        ),
        (
            "class_dropped_packets_total",
            "counter",
            "Packets dropped on arrival by the class's or the queue's limit.",
            |c| c.dropped_packets as f64,
        ),
        (
            "class_dropped_bytes_total",
            "counter",
            "Bytes dropped on arrival by the class's or the queue's limit.",
            |c| c.dropped_bytes as f64,
        ),
        (
            "class_sent_packets_total",
            "counter",
            "Packets of the class taken into frames.",
            |c| c.sent_packets as f64,
        ),
        (
            "class_sent_bytes_total",
            "counter",
            "Bytes of the class taken into frames.",
            |c| c.sent_bytes as f64,
        ),
        (
            "class_queue_delay_seconds_total",
            "counter",
            "Sum of the queueing delays of the class's sent packets (mean: divide by class_sent_packets_total).",
            |c| c.queue_delay_sum_ms / 1e3,
        ),
        (
            "class_queue_delay_max_seconds",
            "gauge",
            "Largest queueing delay of a sent packet of the class.",
            |c| c.queue_delay_max_ms / 1e3,
        ),
    ];
    item_metrics(out, st, "class", &defs, |s| &s.classes, |c| &c.name);
}

/// A series per item of a direction (a class, a terminal): metric name, kind, help, how to read it.
pub type ItemDef<T> = (&'static str, &'static str, &'static str, fn(&T) -> f64);

/// One family per definition with a sample per item of each direction, labelled `direction` and
/// `<label>="<item name>"`; nothing when no direction has items.
pub fn item_metrics<T>(
    out: &mut String,
    st: [&DirectionStatus; 2],
    label: &str,
    defs: &[ItemDef<T>],
    items: fn(&DirectionStatus) -> &[T],
    name_of: fn(&T) -> &str,
) {
    if st.iter().all(|s| items(s).is_empty()) {
        return;
    }
    for (name, kind, help, f) in defs {
        let name = format!("satlab_emulator_{name}");
        prom::header(out, &name, kind, help);
        for s in st {
            for c in items(s) {
                let labels = format!(
                    "{{direction=\"{}\",{label}=\"{}\"}}",
                    s.direction.as_str(),
                    name_of(c)
                );
                prom::sample(out, &name, &labels, f(c));
            }
        }
    }
}

/// A link model counter: metric name, help text, how to read it.
type CounterDef = (&'static str, &'static str, fn(&linkmodel::Counters) -> u64);

/// A port counter: metric name, help text, and the `PortStats` atomic it reads.
type PortCounterDef = (&'static str, &'static str, fn(&PortStats) -> &AtomicU64);

/// A gauge of a direction's status: metric name, help text, how to read it.
type GaugeDef = (&'static str, &'static str, fn(&DirectionStatus) -> f64);

const DIRS: [&str; 2] = ["forward", "return"];

/// The Prometheus text of GET /metrics.
pub fn metrics_text(
    uptime_s: f64,
    st: [&DirectionStatus; 2],
    ports: [&PortStats; 2],
    tele: &TelemetryStats,
) -> String {
    let mut o = String::new();
    let help = "Seconds since the emulator started.";
    prom::family(
        &mut o,
        "satlab_emulator_uptime_seconds",
        "gauge",
        help,
        "",
        uptime_s,
    );
    direction_metrics(&mut o, st);
    class_metrics(&mut o, st);
    crate::terminal_metrics::append(&mut o, st);
    port_metrics(&mut o, ports);
    release_histogram(&mut o, &DIRS, ports);
    telemetry_metrics(&mut o, tele);
    o
}

/// One value per direction, labelled by it.
fn per_direction(
    st: [&DirectionStatus; 2],
    f: impl Fn(&DirectionStatus) -> f64,
) -> Vec<(&str, f64)> {
    st.iter().map(|s| (s.direction.as_str(), f(s))).collect()
}

/// The link model's counters (`Counters`), one series per direction.
const DIRECTION_COUNTERS: [CounterDef; 8] = [
    (
        "offered_packets_total",
        "Packets offered to the link (after segmentation).",
        |c| c.offered_packets,
    ),
    (
        "delivered_packets_total",
        "Packets delivered to the far port.",
        |c| c.delivered_packets,
    ),
    (
        "delivered_bytes_total",
        "Bytes delivered to the far port.",
        |c| c.delivered_bytes,
    ),
    (
        "queue_drops_total",
        "Packets dropped by the full queue.",
        |c| c.queue_drops,
    ),
    ("frame_erasures_total", "BBFrames / bursts erased.", |c| {
        c.frame_erasures
    }),
    (
        "erased_packets_total",
        "Packets lost with erased frames.",
        |c| c.erased_packets,
    ),
    (
        "corrupted_packets_total",
        "Packets hit by bit errors.",
        |c| c.corrupted_packets,
    ),
    (
        "reordered_packets_total",
        "Packets that overtook or were overtaken.",
        |c| c.reordered_packets,
    ),
];

/// The link's state, one gauge per direction.
const DIRECTION_GAUGES: [GaugeDef; 8] = [
    ("esn0_db", "Es/N0 at the receiver, dB.", |s| s.esn0_db),
    ("attenuation_db", "Total attenuation, dB.", |s| {
        s.attenuation_db
    }),
    (
        "modcod_id",
        "MODCOD in use (0 for a fixed-rate link).",
        |s| s.modcod.as_ref().map_or(0.0, |m| f64::from(m.id)),
    ),
    (
        "useful_rate_bps",
        "Useful bit rate of the link, bit/s.",
        |s| s.useful_rate_bps,
    ),
    ("delay_ms", "One-way propagation delay, ms.", |s| s.delay_ms),
    ("ber", "Average bit error rate of the error model.", |s| {
        s.ber
    }),
    ("queue_packets", "Packets in the queue.", |s| {
        s.queue_packets as f64
    }),
    ("queue_bytes", "Bytes in the queue.", |s| {
        s.queue_bytes as f64
    }),
];

/// The link model's counters and gauges, per direction.
fn direction_metrics(o: &mut String, st: [&DirectionStatus; 2]) {
    for (name, help, f) in DIRECTION_COUNTERS {
        metric(
            o,
            name,
            "counter",
            help,
            &per_direction(st, |s| f(&s.counters) as f64),
        );
    }
    for (name, help, f) in DIRECTION_GAUGES {
        metric(o, name, "gauge", help, &per_direction(st, f));
    }
}

/// The ports' and the direction threads' counters, per direction.
fn port_metrics(o: &mut String, ports: [&PortStats; 2]) {
    // Each row names the counter's atomic; the loop below reads them all the same way.
    let port_counters: [PortCounterDef; 12] = [
        (
            "rx_frames_total",
            "Frames read from the input port (super-packets count once).",
            |p| &p.rx_frames,
        ),
        ("rx_bytes_total", "Bytes read from the input port.", |p| {
            &p.rx_bytes
        }),
        (
            "gso_superpackets_total",
            "GSO super-packets segmented.",
            |p| &p.gso_superpackets,
        ),
        (
            "gso_segments_total",
            "Segments cut from GSO super-packets.",
            |p| &p.gso_segments,
        ),
        (
            "checksums_completed_total",
            "Partial checksums completed.",
            |p| &p.csum_completed,
        ),
        (
            "rx_invalid_total",
            "Frames dropped at input (truncated, unsupported offload).",
            |p| &p.rx_invalid,
        ),
        (
            "rx_kernel_drops_total",
            "Frames the kernel dropped before the emulator read them (socket buffer full).",
            |p| &p.rx_kernel_drops,
        ),
        (
            "tx_frames_total",
            "Frames written to the output port.",
            |p| &p.tx_frames,
        ),
        ("tx_errors_total", "Frames the output port refused.", |p| {
            &p.tx_errors
        }),
        (
            "oracle_notices_total",
            "Oracle ETEN notices written to the sender host's map (corrupted or erased TCP data).",
            |p| &p.oracle_notices,
        ),
        (
            "oracle_errors_total",
            "Oracle ETEN notices the map refused.",
            |p| &p.oracle_errors,
        ),
        (
            "realtime_stepdowns_total",
            "Times the direction thread, saturated, stepped down from SCHED_FIFO to nice -10.",
            |p| &p.rt_stepdowns,
        ),
    ];
    for (name, help, f) in port_counters {
        let vals: Vec<(&str, f64)> = DIRS
            .iter()
            .zip(ports.iter())
            .map(|(d, p)| (*d, f(p).load(Ordering::Relaxed) as f64))
            .collect();
        metric(o, name, "counter", help, &vals);
    }
}

/// The telemetry socket's clients and what it dropped.
fn telemetry_metrics(o: &mut String, tele: &TelemetryStats) {
    let clients = tele.clients.load(Ordering::Relaxed);
    let help = "Connected telemetry clients.";
    prom::family(
        o,
        "satlab_emulator_telemetry_clients",
        "gauge",
        help,
        "",
        clients,
    );
    let dropped = "satlab_emulator_telemetry_dropped_total";
    let help = "Telemetry messages dropped (channel full or slow client).";
    prom::header(o, dropped, "counter", help);
    let full = tele.dropped_events.load(Ordering::Relaxed);
    prom::sample(o, dropped, "{reason=\"channel_full\"}", full);
    let slow = tele.dropped_lines.load(Ordering::Relaxed);
    prom::sample(o, dropped, "{reason=\"slow_client\"}", slow);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_command() {
        let (t, c) = parse_control(
            br#"{"direction":"forward","attenuation_db":6.5,"ber":1e-6,"delay_ms":135}"#,
        )
        .unwrap();
        assert_eq!(t, ControlTarget::Forward);
        assert_eq!(
            c,
            ControlCommand {
                attenuation_db: Some(6.5),
                resume_trace: false,
                ber: Some(1e-6),
                delay_ms: Some(135.0),
                terminal: None
            }
        );
        let (t, c) = parse_control(br#"{"terminal":"t1","attenuation_db":3}"#).unwrap();
        assert_eq!(t, ControlTarget::Forward);
        assert_eq!(c.terminal.as_deref(), Some("t1"));
        let (t, c) = parse_control(br#"{"resume_trace":true}"#).unwrap();
        assert_eq!(t, ControlTarget::Both);
        assert!(c.resume_trace);
        assert_eq!(
            parse_control(br#"{"direction":"return","delay_ms":0}"#)
                .unwrap()
                .0,
            ControlTarget::Return
        );
    }

    #[test]
    fn rejects_unknown_fields_naming_them() {
        let e = parse_control(br#"{"direction":"forward","attenuation":3,"zz":1}"#).unwrap_err();
        assert_eq!(e.0, "attenuation, zz: unknown field (allowed: direction, attenuation_db, resume_trace, ber, delay_ms, terminal)");
    }

    #[test]
    fn range_and_type_errors_name_field_and_limit() {
        let e = parse_control(br#"{"ber":0.9}"#).unwrap_err();
        assert_eq!(e.0, "ber: value 0.9 is outside the allowed range [0, 0.5]");
        let e = parse_control(br#"{"attenuation_db":-1}"#).unwrap_err();
        assert_eq!(
            e.0,
            "attenuation_db: value -1 is outside the allowed range [0, 100] dB"
        );
        let e = parse_control(br#"{"delay_ms":"fast"}"#).unwrap_err();
        assert_eq!(e.0, "delay_ms: expected a number, got a string");
        let e = parse_control(br#"{"direction":"up","ber":0}"#).unwrap_err();
        assert!(e.0.starts_with("direction: \"up\" is not one of"));
        let e = parse_control(br#"{"resume_trace":1}"#).unwrap_err();
        assert!(e.0.starts_with("resume_trace: expected a boolean"));
        let e = parse_control(br#"{"terminal":3,"ber":0}"#).unwrap_err();
        assert!(e.0.starts_with("terminal: expected a terminal's name"));
        let e = parse_control(br#"{"resume_trace":true,"attenuation_db":1}"#).unwrap_err();
        assert!(e.0.starts_with("resume_trace:"));
    }

    #[test]
    fn rejects_bad_bodies() {
        assert!(parse_control(b"not json")
            .unwrap_err()
            .0
            .starts_with("body: invalid JSON"));
        assert!(parse_control(b"[1,2]")
            .unwrap_err()
            .0
            .starts_with("body: expected a JSON object"));
        assert!(parse_control(br#"{"direction":"both"}"#)
            .unwrap_err()
            .0
            .starts_with("body: no setting"));
    }

    #[test]
    fn reads_http_requests() {
        let raw =
            b"POST /control?x=1 HTTP/1.1\r\nHost: a\r\ncontent-length: 13\r\n\r\n{\"ber\":1e-7}X";
        let req = read_request(&mut &raw[..]).unwrap().unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/control");
        assert_eq!(req.body, b"{\"ber\":1e-7}X"[..13].to_vec());
        let raw = b"GET /status HTTP/1.1\r\n\r\n";
        let req = read_request(&mut &raw[..]).unwrap().unwrap();
        assert_eq!(
            (req.method.as_str(), req.path.as_str(), req.body.len()),
            ("GET", "/status", 0)
        );
        assert!(read_request(&mut &b""[..]).unwrap().is_none());
        assert!(read_request(
            &mut &b"POST /control HTTP/1.1\r\nContent-Length: 999999\r\n\r\n"[..]
        )
        .is_err());
    }

    #[test]
    fn response_is_http11_with_length() {
        let mut out = Vec::new();
        Response::error(400, "ber: bad").write_to(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(s.contains("Content-Length: 21\r\n"));
        assert!(s.ends_with("{\"error\":\"ber: bad\"}\n"));
    }

    #[test]
    fn metrics_have_each_direction() {
        let s = DirectionStatus {
            direction: Dir::Forward,
            modcod: None,
            esn0_db: 12.5,
            attenuation_db: 1.0,
            useful_rate_bps: 1e8,
            delay_ms: 135.0,
            ber: 0.0,
            queue_packets: 4,
            queue_bytes: 6000,
            counters: Default::default(),
            classes: Vec::new(),
            dama: None,
            terminals: Vec::new(),
            carrier_useful_rate_bps: None,
        };
        let mut r = s.clone();
        r.direction = Dir::Return;
        let p = PortStats::default();
        p.release.record(30_000);
        p.release.record(150_000);
        let text = metrics_text(1.5, [&s, &r], [&p, &p], &TelemetryStats::default());
        assert!(text.contains(
            "satlab_emulator_release_error_seconds_bucket{direction=\"forward\",le=\"0.0001\"} 1\n"
        ));
        assert!(
            text.contains("satlab_emulator_release_error_seconds_count{direction=\"return\"} 2\n")
        );
        assert!(text.contains("satlab_emulator_esn0_db{direction=\"forward\"} 12.5\n"));
        assert!(text.contains("satlab_emulator_queue_packets{direction=\"return\"} 4\n"));
        assert!(text.contains("satlab_emulator_modcod_id{direction=\"forward\"} 0\n"));
        assert!(text.contains("# TYPE satlab_emulator_delivered_packets_total counter\n"));
        assert!(text.contains("satlab_emulator_useful_rate_bps{direction=\"return\"} 100000000\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, v) = line.rsplit_once(' ').unwrap();
            v.parse::<f64>().unwrap();
        }
        assert!(
            !text.contains("satlab_emulator_class_"),
            "no classes, no class metrics"
        );
        assert!(
            !text.contains("satlab_emulator_terminal_"),
            "no beam, no terminal metrics"
        );
        let mut beam = s.clone();
        beam.terminals = ["a", "b"]
            .map(|name| linkmodel::TerminalStatus {
                name: name.into(),
                modcod: None,
                esn0_db: 9.0,
                attenuation_db: 0.0,
                useful_rate_bps: 1e6,
                queue_packets: 1,
                queue_bytes: 1514,
                frames: 7,
                sent_bytes: 9000,
                counters: Default::default(),
                dama: None,
            })
            .to_vec();
        let text = metrics_text(1.5, [&beam, &r], [&p, &p], &TelemetryStats::default());
        assert!(text.contains(
            "satlab_emulator_terminal_frames_total{direction=\"forward\",terminal=\"b\"} 7\n"
        ));
        assert!(text.contains("satlab_emulator_esn0_db{direction=\"forward\"} 12.5\n"));
    }

    #[test]
    fn class_metrics_are_labelled_by_direction_and_class() {
        let class = |name: &str, sent: u64, delay_sum_ms: f64| ClassStatus {
            name: name.into(),
            priority: 0,
            weight: 1,
            queue_packets: 2,
            queue_bytes: 3000,
            enqueued_packets: sent + 2,
            enqueued_bytes: 0,
            dropped_packets: 1,
            dropped_bytes: 1514,
            sent_packets: sent,
            sent_bytes: sent * 1514,
            queue_delay_sum_ms: delay_sum_ms,
            queue_delay_max_ms: 250.0,
        };
        let s = DirectionStatus {
            direction: Dir::Forward,
            modcod: None,
            esn0_db: 12.5,
            attenuation_db: 0.0,
            useful_rate_bps: 1e7,
            delay_ms: 250.0,
            ber: 0.0,
            queue_packets: 4,
            queue_bytes: 6000,
            counters: Default::default(),
            classes: vec![class("ef", 10, 5.0), class("bulk", 100, 25000.0)],
            dama: None,
            terminals: Vec::new(),
            carrier_useful_rate_bps: None,
        };
        let mut r = s.clone();
        r.direction = Dir::Return;
        r.classes.clear();
        let p = PortStats::default();
        let text = metrics_text(1.0, [&s, &r], [&p, &p], &TelemetryStats::default());
        assert!(text.contains(
            "satlab_emulator_class_sent_packets_total{direction=\"forward\",class=\"bulk\"} 100\n"
        ));
        assert!(text.contains(
            "satlab_emulator_class_queue_delay_seconds_total{direction=\"forward\",class=\"bulk\"} 25\n"
        ));
        assert!(text.contains(
            "satlab_emulator_class_queue_delay_max_seconds{direction=\"forward\",class=\"ef\"} 0.25\n"
        ));
        assert!(text.contains("# TYPE satlab_emulator_class_dropped_packets_total counter\n"));
        assert!(!text.contains("direction=\"return\",class="));
    }
}
