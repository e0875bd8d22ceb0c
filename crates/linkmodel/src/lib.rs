//! linkmodel: a pure, deterministic, time-driven model of one direction of a GEO satellite link.
//!
//! No I/O on the packet path, no threads, no clock reads: time is the `now_ns` the caller passes
//! (monotonic nanoseconds since the start of the run). One [`Direction`] is one pipeline:
//!
//! ```text
//! enqueue -> queue (drop-tail, or per-class queues)
//!         -> scheduler (BBFrames / RCS2 bursts, in DAMA-granted slots with `return.dama` /
//!            fixed rate; ACM)
//!         -> erasure (PER erasure of whole frames) -> bit errors (on surviving packets)
//!         -> reordering (optional) -> delay line (propagation delay) -> poll
//! ```
//!
//! Each stage is a module, listed below in packet order; `direction.rs` owns one of each and
//! calls them in that order. The channel (Es/N0 over time) and the propagation delay are the
//! conditions the stages read.
//!
//! The contract with the emulator binary is `docs/emulator-contract.md`; the configuration file is
//! documented in `emulator/CONFIG.md`.

// What the I/O side runs per direction (`model.rs`): one pipeline (`direction.rs`), or a forward
// beam of several terminals on one carrier, each a pipeline (`beam.rs`, `terminals.rs`).
pub mod beam;
pub mod direction;
pub mod model;
mod prefix_table;
// The return link of a beam: the terminals share the MF-TDMA pool through one DAMA controller.
mod dama_pool;
pub mod return_beam;
// What both beams do alike over their terminals' links.
mod terminal_links;
mod terminal_set;
pub mod terminals;
// The stages of a pipeline, in packet order.
// 1. queue (per-class queues: classes)
pub mod classes;
pub mod queue;
// 2. scheduler: frames on the air (ACM loop: acm, GSE packing: framing, its bytes: gse, RCS2
//    timeslots: dama)
pub mod acm;
mod dama;
pub mod framing;
pub mod gse;
// the PHY-in-the-loop hook: a frame's fate from a decoder (issue 21; not yet called by the
// forward direction)
pub mod frame_channel;
mod scheduler;
// 3. erasure of whole frames by the channel
mod erasure;
// 4. bit errors on the surviving packets (with the Oracle ETEN segment key)
pub mod bit_errors;
pub mod segment;
// 5. reordering
pub mod reorder;
// 6. delay line
pub mod delay_line;

// The conditions the stages read, as functions of time.
pub mod attenuation;
pub mod channel;
pub mod delay;
pub mod geometry;

// Tables, curves and random streams the stages are built from.
pub mod modcod;
pub mod per;
pub mod rng;

// The link's configuration: types, then loading and validation.
pub mod config;
pub mod load;
pub mod textfile;

// What the I/O side exchanges with the model.
pub mod control;
pub mod records;
mod types;

#[doc(hidden)]
pub mod testkit;

pub use config::{ConfigError, DirectionConfig, LinkConfig};
pub use control::{ControlCommand, ControlRequest, ControlTarget};
pub use direction::Direction;
pub use erasure::waterfall_fallback_note;
pub use model::Model;
pub use segment::SegmentKey;
pub use types::{
    ClassStatus, Counters, DamaStatus, Dir, DirectionStatus, Hit, HitRegion, LossCause,
    ModcodStatus, Outcome, TerminalStatus,
};
