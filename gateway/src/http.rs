//! A small HTTP/1.0 endpoint on its own thread: `GET /metrics` (Prometheus text format) and
//! `GET /status` (JSON). One request per connection; not on the data path.

use crate::state::Shared;
use binkit::{counters, http, prom};
use serde_json::json;
use std::net::TcpListener;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Serves until stop.
pub fn serve(sh: Arc<Shared>, listener: TcpListener) {
    http::serve(listener, &sh.stop, &["/status", "/metrics"], |path| {
        if path == "/metrics" {
            (prom::CONTENT_TYPE, metrics(&sh))
        } else {
            (http::JSON, status(&sh).to_string())
        }
    });
}

fn num(v: f64) -> serde_json::Value {
    if v.is_finite() {
        json!(v)
    } else {
        serde_json::Value::Null
    }
}

/// The JSON status document (gateway/README.md lists the fields).
pub fn status(sh: &Shared) -> serde_json::Value {
    let corruption = sh.corruption.lock().expect("lock").clone();
    let congestion = sh.congestion.lock().expect("lock").clone();
    let (xcp, interval) = *sh.xcp.lock().expect("lock");
    let links = sh.link_status.lock().expect("lock").clone();
    let macs = *sh.macs.lock().expect("lock");
    let mac = |m: [u8; 6]| {
        m.iter()
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(":")
    };
    json!({
        "role": sh.cfg.role.as_str(),
        "uptime_s": sh.clock.now_ns() as f64 * 1e-9,
        "telemetry_connected": sh.telemetry_connected.load(Ordering::Relaxed),
        "egress": {
            "direction": sh.cfg.role.egress_direction(),
            "useful_rate_bps": num(sh.egress_useful_bps.get()),
            "useful_rate_changed_s": sh.egress_rate_changed_ns.load(Ordering::Relaxed) as f64 * 1e-9,
            "pace_rate_bps": num(sh.pace_bps.get()),
            "aqm": format!("{:?}", sh.cfg.egress.aqm.kind).to_lowercase(),
            "queue_packets": sh.queue_packets.load(Ordering::Relaxed),
            "queue_bytes": sh.queue_bytes.load(Ordering::Relaxed),
            "queue_ern_bytes": sh.queue_ern_bytes.load(Ordering::Relaxed),
            "red_avg_packets": sh.red_avg.get(),
            "link": links.0,
        },
        "ingress": {
            "direction": sh.cfg.role.ingress_direction(),
            "useful_rate_bps": num(sh.ingress_useful_bps.get()),
            "link": links.1,
        },
        "ceten": {
            "corruption": {
                "estimate": corruption.estimate,
                "mean_estimate": corruption.mean_estimate(),
                "samples": corruption.samples,
                "survived": corruption.survived,
            },
            "congestion": {
                "estimate": congestion.estimate,
                "mean_estimate": congestion.mean_estimate(),
                "samples": congestion.samples,
                "survived": congestion.survived,
            },
        },
        "ern": {
            "enabled": sh.cfg.ern.enabled,
            "interval_s": num(interval),
            "last": xcp,
        },
        "macs": macs.map(|(l, r)| json!({"local": mac(l), "remote": mac(r)})),
        "counters": counters::json(&sh.c.list()),
    })
}

/// Prometheus text exposition.
pub fn metrics(sh: &Shared) -> String {
    let mut o = String::new();
    counters::prometheus(&mut o, "satlab_gateway", "", &sh.c.list());
    let corruption = sh.corruption.lock().expect("lock").estimate;
    let congestion = sh.congestion.lock().expect("lock").estimate;
    let (xcp, _) = *sh.xcp.lock().expect("lock");
    let gauges: [(&str, &str, f64); 10] = [
        (
            "queue_packets",
            "egress queue length, packets",
            sh.queue_packets.load(Ordering::Relaxed) as f64,
        ),
        (
            "queue_bytes",
            "egress queue length, bytes",
            sh.queue_bytes.load(Ordering::Relaxed) as f64,
        ),
        (
            "queue_ern_bytes",
            "ERN bytes in the egress queue",
            sh.queue_ern_bytes.load(Ordering::Relaxed) as f64,
        ),
        (
            "red_avg_packets",
            "RED average queue, packets",
            sh.red_avg.get(),
        ),
        (
            "pace_rate_bps",
            "egress pacing rate, bit/s (NaN: line rate)",
            sh.pace_bps.get(),
        ),
        (
            "useful_rate_bps",
            "egress link useful rate from telemetry, bit/s",
            sh.egress_useful_bps.get(),
        ),
        (
            "ceten_corruption_survival",
            "incoming link corruption survival (EWMA)",
            corruption,
        ),
        (
            "ceten_congestion_survival",
            "egress link congestion survival (EWMA)",
            congestion,
        ),
        (
            "ern_phi_bytes",
            "last XCP aggregate feedback, bytes",
            xcp.phi,
        ),
        (
            "ern_input_bytes_per_s",
            "last XCP ERN input rate, bytes/s",
            xcp.input_bytes_per_s,
        ),
    ];
    for (name, help, v) in gauges {
        prom::family(
            &mut o,
            &format!("satlab_gateway_{name}"),
            "gauge",
            help,
            "",
            v,
        );
    }
    o
}
