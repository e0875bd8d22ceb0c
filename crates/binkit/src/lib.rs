//! Plumbing the satlab binaries share (issue 17, "Named stages in the data planes"): the stop
//! flag set by SIGTERM/SIGINT, the one-request-per-connection HTTP/1.0 endpoint the gateway and
//! the PEP serve and its `http` settings section, the Prometheus text writer and the counters it
//! lists, the configuration files' bounds check and `--print-schema`, and the exit on an error.
//! Argument parsing is clap (derive) in each binary.

pub mod bounds;
pub mod cli;
pub mod counters;
pub mod exit;
pub mod http;
pub mod prom;
pub mod schema;
pub mod signals;
