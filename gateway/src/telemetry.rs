//! The link telemetry client: reads the emulator's telemetry stream (docs/emulator-contract.md:
//! newline-delimited JSON on a Unix stream socket) and feeds
//! - the egress pacing rate and the IP-ERN capacity (status records of the egress direction:
//!   `useful_rate_bps`; facing a beam, the carrier's `carrier_useful_rate_bps`: the gateway
//!   feeds the whole carrier, whose terminals' queues and scheduler are the emulator's),
//! - CETEN corruption survival of the incoming link (events of the incoming direction: `delivered`
//!   = survived, `corrupted`/`erased` = not; needs `telemetry.events: all` on the emulator),
//! - CETEN congestion survival of the egress link (`queue_drop` events of the egress direction),
//! - the ETEN notifier (`corrupted`/`erased` events of the incoming direction with an intact flow).
//!
//! Reconnects forever (every `telemetry.reconnect_ms`) until the gateway stops.

use crate::notifier::{LinkEvent, Notifier};
use crate::state::Shared;
use linkmodel::records::{EventKind, EventLine, TelemetryLine};
use linkmodel::Dir;
use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Runs the client until stop.
pub fn run(sh: Arc<Shared>) {
    let Some(path) = sh.cfg.telemetry.socket.clone() else {
        return;
    };
    let mut notifier = Notifier::new(&sh.cfg.eten);
    let retry = Duration::from_millis(sh.cfg.telemetry.reconnect_ms);
    while !sh.stop.load(Ordering::Relaxed) {
        let stream = match UnixStream::connect(&path) {
            Ok(s) => s,
            Err(_) => {
                std::thread::sleep(retry);
                continue;
            }
        };
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        sh.telemetry_connected.store(true, Ordering::Relaxed);
        sh.c.telemetry_connects.fetch_add(1, Ordering::Relaxed);
        let mut r = BufReader::new(stream);
        let mut line = String::new();
        loop {
            if sh.stop.load(Ordering::Relaxed) {
                return;
            }
            match r.read_line(&mut line) {
                Ok(0) => break,
                Ok(_) => {
                    if line.ends_with('\n') {
                        handle_line(&sh, &mut notifier, line.trim_end());
                        line.clear();
                    }
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut
                        || e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        sh.telemetry_connected.store(false, Ordering::Relaxed);
        std::thread::sleep(retry);
    }
}

/// Handles one telemetry line (a linkmodel::records::TelemetryLine).
pub fn handle_line(sh: &Shared, notifier: &mut Notifier, line: &str) {
    sh.c.telemetry_lines.fetch_add(1, Ordering::Relaxed);
    let Ok(rec) = serde_json::from_str::<TelemetryLine>(line) else {
        sh.c.telemetry_errors.fetch_add(1, Ordering::Relaxed);
        return;
    };
    match rec {
        TelemetryLine::Telemetry(ref s) => link_status(sh, s.status.direction, &rec),
        TelemetryLine::Event(e) => link_event(sh, notifier, &e),
    }
}

/// A status line: the pacing and IP-ERN rates, and the link status the gateway reports.
fn link_status(sh: &Shared, dir: Dir, rec: &TelemetryLine) {
    let TelemetryLine::Telemetry(s) = rec else {
        return;
    };
    let rate = s
        .status
        .carrier_useful_rate_bps
        .unwrap_or(s.status.useful_rate_bps);
    let mut st = sh.link_status.lock().expect("status lock");
    if dir.as_str() == sh.cfg.role.egress_direction() {
        let old = sh.egress_useful_bps.get();
        if !(old == rate || (old.is_nan() && rate.is_nan())) {
            sh.egress_rate_changed_ns
                .store(sh.clock.now_ns(), Ordering::Relaxed);
        }
        sh.egress_useful_bps.set(rate);
        st.0 = serde_json::to_value(rec).unwrap_or_default();
    } else if dir.as_str() == sh.cfg.role.ingress_direction() {
        sh.ingress_useful_bps.set(rate);
        st.1 = serde_json::to_value(rec).unwrap_or_default();
    }
}

/// An event line: CETEN samples of both links, ETEN notices for the incoming one.
fn link_event(sh: &Shared, notifier: &mut Notifier, e: &EventLine) {
    if e.direction.as_str() == sh.cfg.role.egress_direction() {
        if e.kind == EventKind::QueueDrop {
            sh.congestion_sample(false);
        }
        return;
    }
    if e.direction.as_str() != sh.cfg.role.ingress_direction() {
        return;
    }
    match e.kind {
        EventKind::Delivered => sh.corruption_sample(true),
        EventKind::Corrupted | EventKind::Erased => {
            sh.corruption_sample(false);
            notify(sh, notifier, e, e.kind == EventKind::Erased);
        }
        EventKind::QueueDrop => {}
    }
}

/// The flow an event identifies; None where the headers it comes from were hit.
fn event_of(e: &EventLine, erased: bool) -> Option<LinkEvent> {
    let proto = e.proto?;
    let seq = match proto {
        packet::ip_proto::TCP => e.seq.flatten()?,
        _ => 0,
    };
    Some(LinkEvent {
        erased,
        len: e.len,
        src: e.src?,
        dst: e.dst?,
        proto,
        sport: e.sport?,
        dport: e.dport?,
        seq,
    })
}

fn notify(sh: &Shared, n: &mut Notifier, e: &EventLine, erased: bool) {
    if !sh.cfg.eten.enabled || (erased && !n.notify_erased) {
        return;
    }
    sh.c.eten_events.fetch_add(1, Ordering::Relaxed);
    let Some(ev) = event_of(e, erased) else {
        sh.c.eten_unidentified.fetch_add(1, Ordering::Relaxed);
        return;
    };
    let learned = *sh.macs.lock().expect("macs lock");
    let (src_mac, dst_mac) = match (n.mac_override, learned) {
        ((Some(s), Some(d)), _) => (s, d),
        ((s, d), Some((ls, ld))) => (s.unwrap_or(ls), d.unwrap_or(ld)),
        ((s, d), None) => (s.unwrap_or([0; 6]), d.unwrap_or([0xff; 6])),
    };
    if !n.allow(sh.clock.now_ns()) {
        sh.c.eten_rate_limited.fetch_add(1, Ordering::Relaxed);
        return;
    }
    let f = n.build(&ev, src_mac, dst_mac);
    sh.c.eten_notices.fetch_add(1, Ordering::Relaxed);
    sh.push_notice(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// A status line as the emulator writes it.
    fn status_line(direction: Dir, useful_rate_bps: f64) -> String {
        let status = linkmodel::DirectionStatus {
            direction,
            modcod: None,
            esn0_db: 12.0,
            attenuation_db: 0.0,
            useful_rate_bps,
            delay_ms: 260.0,
            ber: 0.0,
            queue_packets: 0,
            queue_bytes: 0,
            counters: Default::default(),
            classes: Vec::new(),
            dama: None,
            terminals: Vec::new(),
            carrier_useful_rate_bps: None,
        };
        let line = TelemetryLine::Telemetry(Box::new(linkmodel::records::StatusLine {
            t_ms: 1.0,
            status,
        }));
        serde_json::to_string(&line).unwrap()
    }

    #[test]
    fn lines_drive_rate_estimates_and_notices() {
        let cfg = Config::from_yaml_str(
            "role: st\nports: {inside: a, outside: b}\n\
             eten: {enabled: true, source_ip: 10.0.0.2, src_mac: '02:00:00:00:00:02', dst_mac: '02:00:00:00:00:01'}\n",
        )
        .unwrap();
        let sh = Shared::new(cfg);
        let mut n = Notifier::new(&sh.cfg.eten);
        handle_line(&sh, &mut n, &status_line(Dir::Return, 2e6));
        assert_eq!(sh.egress_useful_bps.get(), 2e6);
        assert!((sh.pacing_rate_bps().unwrap() - 2e6 * 0.97).abs() < 1e-6);
        handle_line(
            &sh,
            &mut n,
            r#"{"type":"event","t_ms":2.0,"direction":"forward","kind":"delivered","len":1514,"src":"10.0.1.1","dst":"10.0.2.1","proto":6,"sport":1,"dport":2,"seq":5,"hit":null}"#,
        );
        handle_line(
            &sh,
            &mut n,
            r#"{"type":"event","t_ms":3.0,"direction":"forward","kind":"corrupted","len":1514,"src":"10.0.1.1","dst":"10.0.2.1","proto":6,"sport":5201,"dport":40000,"seq":77,"hit":"payload"}"#,
        );
        handle_line(
            &sh,
            &mut n,
            r#"{"type":"event","t_ms":3.0,"direction":"forward","kind":"corrupted","len":1514,"hit":"ip_header"}"#,
        );
        assert_eq!(sh.corruption.lock().unwrap().samples, 3);
        assert!((sh.corruption.lock().unwrap().estimate - 0.25).abs() < 1e-12);
        let q = sh.notices.lock().unwrap();
        assert_eq!(q.len(), 1);
        let p = packet::eten::Packet::new_checked(&q[0][34..]).unwrap();
        assert_eq!(p.quoted_seq(), 77);
        assert_eq!(p.quoted_src_port(), 5201);
        assert_eq!(sh.c.eten_unidentified.load(Ordering::Relaxed), 1);
        handle_line(
            &sh,
            &mut n,
            r#"{"type":"event","t_ms":3.0,"direction":"return","kind":"queue_drop","len":60,"hit":null}"#,
        );
        assert_eq!(sh.congestion.lock().unwrap().estimate, 0.5);
        handle_line(&sh, &mut n, "not json");
        assert_eq!(sh.c.telemetry_errors.load(Ordering::Relaxed), 1);
    }

    /// Facing a beam the gateway feeds the whole carrier: it paces to the carrier's rate, not to
    /// the first terminal's (which the status's top-level `useful_rate_bps` is).
    #[test]
    fn a_beam_is_paced_at_its_carrier_rate() {
        let cfg = Config::from_yaml_str("role: gw\nports: {inside: a, outside: b}\n").unwrap();
        let sh = Shared::new(cfg);
        let mut n = Notifier::new(&sh.cfg.eten);
        let mut line: serde_json::Value =
            serde_json::from_str(&status_line(Dir::Forward, 15e6)).unwrap();
        line["carrier_useful_rate_bps"] = 21e6.into();
        handle_line(&sh, &mut n, &line.to_string());
        assert_eq!(sh.egress_useful_bps.get(), 21e6);
        assert!((sh.pacing_rate_bps().unwrap() - 21e6 * 0.97).abs() < 1e-6);
    }
}
