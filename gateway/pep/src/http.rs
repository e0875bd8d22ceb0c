//! The HTTP endpoint (binkit::http) on its own thread: `GET /status` (counters, JSON),
//! `GET /connections` (finished connections, JSON) and `GET /metrics` (the counters as
//! Prometheus text).

use crate::state::Shared;
use binkit::{http, prom};
use std::net::TcpListener;
use std::sync::Arc;

/// Serves until stop.
pub fn serve(sh: Arc<Shared>, listener: TcpListener) {
    let paths = ["/status", "/connections", "/metrics"];
    http::serve(listener, &sh.stop, &paths, |path| match path {
        "/metrics" => (prom::CONTENT_TYPE, sh.metrics()),
        "/connections" => (
            http::JSON,
            serde_json::json!({ "connections": sh.records() }).to_string(),
        ),
        _ => (http::JSON, sh.status().to_string()),
    });
}
