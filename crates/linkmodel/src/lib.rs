//! linkmodel: a pure, deterministic, time-driven model of one direction of a GEO satellite link.
//!
//! No I/O on the packet path, no threads, no clock reads: time is the `now_ns` the caller passes
//! (monotonic nanoseconds since the start of the run). One [`Direction`] is one pipeline:
//!
//! ```text
//! enqueue -> queue (drop-tail) -> link scheduler (BBFrames / RCS2 bursts / fixed rate)
//!         -> channel (PER erasure of whole frames, bit errors on delivered packets)
//!         -> delay line (propagation delay, optional reordering) -> poll
//! ```
//!
//! The contract with the emulator binary is `docs/emulator-contract.md`; the configuration file is
//! documented in `emulator/CONFIG.md`.

pub mod acm;
pub mod attenuation;
pub mod cn;
pub mod config;
pub mod control;
pub mod delay;
pub mod delay_line;
pub mod direction;
pub mod errors;
pub mod framing;
pub mod geometry;
pub mod modcod;
pub mod per;
pub mod queue;
pub mod records;
pub mod reorder;
pub mod rng;
pub mod segment;
pub mod textfile;

mod types;

pub use config::{
    ConfigError, ControlConfig, DirectionConfig, EmulatorConfig, PortConfig, TelemetryConfig,
};
pub use control::{ControlCommand, ControlRequest, ControlTarget};
pub use direction::Direction;
pub use segment::SegmentKey;
pub use types::{Counters, Dir, DirectionStatus, Hit, HitRegion, LossCause, ModcodStatus, Outcome};
