//! Plumbing the satlab binaries share (issue 17, "Named stages in the data planes"): the stop
//! flag set by SIGTERM/SIGINT, the one-request-per-connection HTTP/1.0 endpoint the gateway and
//! the PEP serve, and the Prometheus text writer. Argument parsing is clap (derive) in each binary.

pub mod http;
pub mod prom;
pub mod signals;
