//! A small HTTP/1.0 endpoint on its own thread: `GET /status` (counters, JSON),
//! `GET /connections` (finished connections, JSON) and `GET /metrics` (the counters as
//! Prometheus text). One request per connection.

use crate::state::Shared;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

/// Serves forever (the process exits on stop).
pub fn serve(sh: Arc<Shared>, listener: TcpListener) {
    for s in listener.incoming().flatten() {
        let _ = handle(&sh, s);
    }
}

fn handle(sh: &Shared, mut s: TcpStream) -> std::io::Result<()> {
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut buf = [0u8; 4096];
    let mut n = 0;
    while n < buf.len() {
        let k = s.read(&mut buf[n..])?;
        if k == 0 {
            break;
        }
        n += k;
        if buf[..n].windows(4).any(|w| w == b"\r\n\r\n")
            || buf[..n].windows(2).any(|w| w == b"\n\n")
        {
            break;
        }
    }
    let req = String::from_utf8_lossy(&buf[..n]);
    let mut parts = req.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    const JSON: &str = "application/json";
    let (code, reason, ctype, body) = match (method, path) {
        ("GET", "/status") => (200, "OK", JSON, sh.status().to_string()),
        ("GET", "/connections") => (
            200,
            "OK",
            JSON,
            serde_json::json!({ "connections": sh.records() }).to_string(),
        ),
        ("GET", "/metrics") => (200, "OK", "text/plain; version=0.0.4", sh.metrics()),
        ("GET", _) => (
            404,
            "Not Found",
            JSON,
            r#"{"error":"not found: /status, /connections, /metrics"}"#.into(),
        ),
        _ => (
            405,
            "Method Not Allowed",
            JSON,
            r#"{"error":"method not allowed"}"#.into(),
        ),
    };
    write!(
        s,
        "HTTP/1.0 {code} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    s.flush()
}
