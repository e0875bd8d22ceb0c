//! What the I/O side runs for one direction: one [`Direction`] (one terminal, as every
//! configuration without `forward.beam`), a [`Beam`] of several terminals on the forward
//! carrier, or a [`ReturnBeam`] of the same terminals sharing the return link's DAMA pool (with
//! `return.dama`). All answer the same calls; this forwards them.

use crate::beam::Beam;
use crate::config::{ConfigError, LinkConfig};
use crate::control::ControlCommand;
use crate::direction::Direction;
use crate::return_beam::{self, ReturnBeam};
use crate::types::{Dir, DirectionStatus, Outcome};

/// One direction of the link as the emulator runs it (one per direction thread: the size
/// difference of the variants does not matter).
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Model {
    One(Direction),
    Beam(Beam),
    ReturnBeam(ReturnBeam),
}

/// `$m.$call` on whichever model it is.
macro_rules! each {
    ($m:expr, $x:ident => $call:expr) => {
        match $m {
            Model::One($x) => $call,
            Model::Beam($x) => $call,
            Model::ReturnBeam($x) => $call,
        }
    };
}

impl Model {
    /// Direction `dir` of a validated configuration: a beam for a forward link with
    /// `forward.beam`, a return beam for a return link with `return.dama` too, else one
    /// [`Direction`].
    pub fn new(cfg: &LinkConfig, dir: Dir) -> Result<Self, ConfigError> {
        match (&cfg.forward.beam, dir) {
            (Some(b), Dir::Forward) => Ok(Model::Beam(Beam::new(cfg, b)?)),
            (Some(b), Dir::Return) if return_beam::is_beam(cfg) => {
                Ok(Model::ReturnBeam(ReturnBeam::new(cfg, b)?))
            }
            _ => Ok(Model::One(Direction::new(cfg, dir)?)),
        }
    }

    pub fn enqueue(&mut self, now_ns: u64, frame: Vec<u8>) {
        each!(self, m => m.enqueue(now_ns, frame))
    }

    pub fn poll(&mut self, now_ns: u64, out: &mut Vec<Outcome>) {
        each!(self, m => m.poll(now_ns, out))
    }

    pub fn delivered_due_ns(&self) -> &[u64] {
        each!(self, m => m.delivered_due_ns())
    }

    pub fn next_wakeup_ns(&self) -> Option<u64> {
        each!(self, m => m.next_wakeup_ns())
    }

    pub fn next_due_ns(&self) -> Option<u64> {
        each!(self, m => m.next_due_ns())
    }

    pub fn input_slack_ns(&self) -> u64 {
        each!(self, m => m.input_slack_ns())
    }

    pub fn status(&self, now_ns: u64) -> DirectionStatus {
        each!(self, m => m.status(now_ns))
    }

    /// Live change at `now_ns`; one naming a terminal needs a beam.
    pub fn control(&mut self, now_ns: u64, cmd: &ControlCommand) -> Result<(), ConfigError> {
        match self {
            Model::One(_) if cmd.terminal.is_some() => Err(ConfigError::field(
                "terminal",
                "this direction has no terminals (forward.beam; on the return, forward.beam \
                 with return.dama): a request names no terminal",
            )),
            Model::One(m) => m.control(now_ns, cmd),
            Model::Beam(m) => m.control(now_ns, cmd),
            Model::ReturnBeam(m) => m.control(now_ns, cmd),
        }
    }

    pub fn link_totals(&self) -> (u64, u64) {
        each!(self, m => m.link_totals())
    }

    pub fn in_flight(&self) -> usize {
        each!(self, m => m.in_flight())
    }
}
