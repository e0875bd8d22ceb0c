//! A small HTTP/1.0 endpoint on its own thread: GET only, one request per connection, not on the
//! data path. The caller names its paths and answers each with a content type and a body.

use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub const JSON: &str = "application/json";

/// A binary's default HTTP port, on loopback (a marker type per binary, see [`Http`]).
pub trait DefaultPort {
    const PORT: u16;
}

// One type for every binary that serves an endpoint (the gateway, the PEP); `P` gives the
// binary's default port where the binary names the type (`Http<HttpPort>`), so each published
// schema keeps its own default. A marker type rather than a const generic: serde's derive does
// not take const generics.
/// The HTTP endpoint (GET only), off the data path.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default, bound = "")]
#[schemars(rename = "Http", bound = "")]
pub struct Http<P: DefaultPort> {
    /// Listen address (inside the edge's namespace); None = no endpoint.
    pub listen: Option<SocketAddr>,
    #[serde(skip)]
    #[schemars(skip)]
    port: PhantomData<P>,
}

impl<P: DefaultPort> Default for Http<P> {
    fn default() -> Self {
        Http {
            listen: Some(SocketAddr::from((Ipv4Addr::LOCALHOST, P::PORT))),
            port: PhantomData,
        }
    }
}

impl<P: DefaultPort> Clone for Http<P> {
    fn clone(&self) -> Self {
        Http {
            listen: self.listen,
            port: PhantomData,
        }
    }
}

impl<P: DefaultPort> std::fmt::Debug for Http<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http")
            .field("listen", &self.listen)
            .finish()
    }
}

/// The endpoint's listener, bound to `http.listen` of a configuration (None: no endpoint). The
/// error names the field and the address.
pub fn bind(listen: Option<SocketAddr>) -> std::io::Result<Option<TcpListener>> {
    let bind = |a| {
        TcpListener::bind(a)
            .map_err(|e| std::io::Error::new(e.kind(), format!("http.listen {a}: {e}")))
    };
    listen.map(bind).transpose()
}

/// Serves until `stop`: `answer(path)` for a GET of one of `paths` returns (content type, body);
/// any other GET is 404 naming the paths, any other method 405.
pub fn serve<F>(listener: TcpListener, stop: &AtomicBool, paths: &[&str], answer: F)
where
    F: Fn(&str) -> (&'static str, String),
{
    // Non-blocking accept so the thread sees the stop flag.
    let _ = listener.set_nonblocking(true);
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                let _ = handle(s, paths, &answer);
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

fn handle<F>(mut s: TcpStream, paths: &[&str], answer: &F) -> std::io::Result<()>
where
    F: Fn(&str) -> (&'static str, String),
{
    s.set_nonblocking(false)?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    let (method, path) = request_line(&mut s)?;
    let (code, reason, ctype, body) = match method.as_str() {
        "GET" if paths.contains(&path.as_str()) => {
            let (ctype, body) = answer(&path);
            (200, "OK", ctype, body)
        }
        "GET" => (
            404,
            "Not Found",
            JSON,
            format!(r#"{{"error":"not found: {}"}}"#, paths.join(", ")),
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

/// Reads the request head (up to 4 KiB or its blank line) and returns its method and path.
fn request_line(s: &mut TcpStream) -> std::io::Result<(String, String)> {
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
    let method = parts.next().unwrap_or("").to_string();
    Ok((method, parts.next().unwrap_or("").to_string()))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};

    fn get(addr: std::net::SocketAddr, req: &str) -> String {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn answers_named_paths_and_refuses_the_rest() {
        static STOP: AtomicBool = AtomicBool::new(false);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            super::serve(l, &STOP, &["/status", "/metrics"], |p| {
                (super::JSON, format!("{{\"path\":\"{p}\"}}"))
            })
        });
        let ok = get(addr, "GET /status HTTP/1.0\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.0 200 OK\r\n"), "{ok}");
        assert!(ok.ends_with("{\"path\":\"/status\"}"));
        let missing = get(addr, "GET /x HTTP/1.0\r\n\r\n");
        assert!(missing.starts_with("HTTP/1.0 404 Not Found\r\n"));
        assert!(missing.ends_with(r#"{"error":"not found: /status, /metrics"}"#));
        let post = get(addr, "POST /status HTTP/1.0\r\n\r\n");
        assert!(post.starts_with("HTTP/1.0 405 Method Not Allowed\r\n"));
        STOP.store(true, Ordering::Relaxed);
        t.join().unwrap();
    }

    #[test]
    fn settings_default_to_the_binarys_port_and_the_schema_says_so() {
        struct Test;
        impl super::DefaultPort for Test {
            const PORT: u16 = 8799;
        }
        type Http = super::Http<Test>;
        let absent: Http = serde_json::from_str("{}").unwrap();
        assert_eq!(absent.listen, Some("127.0.0.1:8799".parse().unwrap()));
        let off: Http = serde_json::from_str(r#"{"listen": null}"#).unwrap();
        assert_eq!(off.listen, None);
        let e = serde_json::from_str::<Http>(r#"{"port": 1}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `port`"), "{e}");
        let s: serde_json::Value = serde_json::from_str(&crate::schema::pretty::<Http>()).unwrap();
        assert_eq!(s["title"], "Http");
        assert_eq!(s["properties"]["listen"]["default"], "127.0.0.1:8799");
    }
}
