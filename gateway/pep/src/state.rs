//! What the PEP counts: counters, the connections in progress, and a bounded log of finished ones.

use crate::config::Config;
use binkit::{counters, prom};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// How a relayed connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum End {
    /// Both directions finished with a FIN.
    Closed,
    /// The client's leg was reset; the server's leg was reset in turn.
    ResetByClient,
    /// The server's leg was reset (or its write failed); the client's leg was reset in turn.
    ResetByServer,
    /// No byte in either direction for idle_timeout_s: both legs reset.
    IdleTimeout,
    /// The outgoing leg's handshake failed (refused, unreachable, timed out): client leg reset.
    ConnectFailed,
    /// The PEP could not relay it (a pipe or thread could not be created; `error` says which).
    Stopped,
}

/// One finished connection (GET /connections, the final record).
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    pub id: u64,
    /// `terrestrial` if the connection was intercepted arriving from the terrestrial side.
    pub accepted_from: &'static str,
    pub client: String,
    pub server: String,
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub bytes_client_to_server: u64,
    pub bytes_server_to_client: u64,
    pub end: End,
    /// The error that ended it, if any (e.g. "Connection refused (os error 111)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

binkit::counters! {
    /// What the PEP counts (Prometheus `satlab_pep_<counter>_total`, `satlab_pep_<gauge>`).
    pub struct Counters {
        accepted: "Connections intercepted and accepted.",
        active: gauge "Connections open now.",
        peak_active: gauge "Most connections open at once.",
        refused_cap: "Connections refused at max_connections.",
        closed: "Connections that ended with a close.",
        reset_by_client: "Connections reset by the client.",
        reset_by_server: "Connections reset by the server.",
        idle_timeout: "Connections closed idle.",
        connect_failed: "Onward connects that failed.",
        bytes_client_to_server: "Bytes relayed client to server.",
        bytes_server_to_client: "Bytes relayed server to client.",
    }
}

impl Counters {
    pub fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub fn ended(&self, e: End) {
        let c = match e {
            End::Closed => &self.closed,
            End::ResetByClient => &self.reset_by_client,
            End::ResetByServer => &self.reset_by_server,
            End::IdleTimeout => &self.idle_timeout,
            End::ConnectFailed => &self.connect_failed,
            End::Stopped => return,
        };
        Counters::add(c, 1);
    }
}

pub struct Shared {
    pub cfg: Config,
    pub c: Counters,
    pub log: Mutex<VecDeque<Record>>,
    pub next_id: AtomicU64,
    pub stop: AtomicBool,
    pub started: Instant,
}

impl Shared {
    pub fn new(cfg: Config) -> Shared {
        Shared {
            cfg,
            c: Counters::default(),
            log: Mutex::new(VecDeque::new()),
            next_id: AtomicU64::new(1),
            stop: AtomicBool::new(false),
            started: Instant::now(),
        }
    }

    pub fn push_record(&self, r: Record) {
        let mut log = self.log.lock().expect("log lock");
        if self.cfg.connection_log == 0 {
            return;
        }
        if log.len() == self.cfg.connection_log {
            log.pop_front();
        }
        log.push_back(r);
    }

    /// The Prometheus text (format 0.0.4): `satlab_pep_<counter>_total`, `satlab_pep_<gauge>`
    /// and the uptime, each labelled with the edge.
    pub fn metrics(&self) -> String {
        let labels = format!("{{edge=\"{}\"}}", self.cfg.edge.as_str());
        let mut o = String::new();
        counters::prometheus(&mut o, "satlab_pep", &labels, &self.c.list());
        let uptime = format!("{:.3}", self.started.elapsed().as_secs_f64());
        let help = "Seconds since the PEP started.";
        prom::family(
            &mut o,
            "satlab_pep_uptime_seconds",
            "gauge",
            help,
            &labels,
            uptime,
        );
        o
    }

    /// The JSON status document (pep/README.md lists the fields).
    pub fn status(&self) -> serde_json::Value {
        let s = &self.cfg.settings;
        serde_json::json!({
            "edge": self.cfg.edge.as_str(),
            "uptime_s": self.started.elapsed().as_secs_f64(),
            "satellite": {
                "interface": self.cfg.intercept.satellite_interface,
                "congestion_control": s.congestion_control,
                "buffer_bytes": s.buffer_bytes,
                "initial_window_packets": s.initial_window_packets,
            },
            "max_connections": self.cfg.settings.max_connections,
            "idle_timeout_s": self.cfg.settings.idle_timeout_s,
            "counters": counters::json(&self.c.list()),
        })
    }

    pub fn records(&self) -> Vec<Record> {
        self.log.lock().expect("log lock").iter().cloned().collect()
    }
}

pub fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn metrics_list_every_counter_once_with_the_edge() {
        let sh = Shared::new(Config::from_yaml_str("edge: gw").unwrap());
        Counters::add(&sh.c.accepted, 3);
        Counters::add(&sh.c.bytes_client_to_server, 1500);
        sh.c.ended(End::ResetByServer);
        let text = sh.metrics();
        assert!(text.contains("# TYPE satlab_pep_accepted_total counter\n"));
        assert!(text.contains("satlab_pep_accepted_total{edge=\"gw\"} 3\n"));
        assert!(text.contains("satlab_pep_bytes_client_to_server_total{edge=\"gw\"} 1500\n"));
        assert!(text.contains("satlab_pep_reset_by_server_total{edge=\"gw\"} 1\n"));
        assert!(text.contains("# TYPE satlab_pep_active gauge\n"));
        // one HELP and one TYPE line per family, every counter of the JSON status among them
        let families = text.lines().filter(|l| l.starts_with("# TYPE")).count();
        assert_eq!(families, sh.c.list().len() + 1); // + uptime
        assert_eq!(counters::json(&sh.c.list())["accepted"], 3);
    }
}
