//! The IP-ERN router on the egress (Lopez-Pacheco, Tran-Thai, Lochin, Arnal, "An IP-ERN
//! architecture to enable hybrid E2E/ERN protocol and application to satellite networking",
//! Computer Networks 56, 2012, §2.2.2 "At the router side"): a TCP segment whose port is an
//! ERN-over-TCP port and whose first option is the ERN option gets XCP feedback; everything else is
//! forwarded untouched. The feedback counts ERN traffic only (input bytes and the ERN queue, kept
//! apart from the E2E bytes in the one FIFO: the paper's Fig. 4), against the full output capacity.
//!
//! The control laws are XCP's (Katabi, Handley, Rohrs, "Congestion Control for High
//! Bandwidth-Delay Product Networks", SIGCOMM 2002, §3.5 "The XCP Router: The Control Laws"); the
//! formulas and their state are in `crate::xcp`. This stage feeds the controller at three points of
//! the egress round: each arriving packet ([`ErnRouter::on_packet`]), the queue after each
//! admission ([`ErnRouter::observe_queue`]), and the end of the round, after the queue was served
//! ([`ErnRouter::end_round`]).

use crate::aqm::Queue;
use crate::config::Ern;
use crate::process::{self, TcpLoc};
use crate::state::Shared;
use crate::xcp::{Controller, Params};
use std::sync::atomic::Ordering;

/// The IP-ERN router: the XCP controller and whether it runs (`ern.enabled`).
#[derive(Debug)]
pub struct ErnRouter {
    enabled: bool,
    xcp: Controller,
}

impl ErnRouter {
    /// A router with no history, from the `ern` section.
    pub fn new(c: &Ern) -> ErnRouter {
        ErnRouter {
            enabled: c.enabled,
            xcp: Controller::new(Params {
                alpha: c.alpha,
                beta: c.beta,
                gamma: c.gamma,
                initial_interval_s: c.initial_interval_ms * 1e-3,
                min_interval_s: c.min_interval_ms * 1e-3,
                max_interval_s: c.max_interval_ms * 1e-3,
            }),
        }
    }

    /// Whether the router runs.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Per packet, before CETEN and the AQM: recognises an ERN data segment (`ern.ports`, ERN option
    /// first), accounts it in the current control interval (size, H_cwnd, H_rtt) and lowers its
    /// H_feedback to the per-packet feedback when that is smaller (`H_feedback = min(H_feedback,
    /// computed)`; the TCP checksum is adjusted incrementally). Returns whether the packet is ERN
    /// traffic (the queue counts its bytes apart).
    ///
    /// Reads: the frame's TCP header and ERN option; `Shared::cfg.ern.ports`. Writes: the
    /// controller's interval sums; H_feedback; counters `ern_packets`, `ern_feedback_lowered`.
    pub fn on_packet(&mut self, sh: &Shared, f: &mut [u8], loc: &TcpLoc, now: u64) -> bool {
        if !self.enabled {
            return false;
        }
        let Some(seg) = process::ern_segment(f, loc, &sh.cfg.ern.ports) else {
            return false;
        };
        sh.c.ern_packets.fetch_add(1, Ordering::Relaxed);
        let fb = self.xcp.on_packet(
            now,
            seg.size as f64,
            f64::from(seg.cwnd),
            f64::from(seg.rtt_us) * 1e-6,
        );
        let fb = fb.clamp(f64::from(i32::MIN), f64::from(i32::MAX - 1)) as i32;
        if fb < seg.feedback {
            process::ern_set_feedback(f, loc, &seg, fb);
            sh.c.ern_feedback_lowered.fetch_add(1, Ordering::Relaxed);
        }
        true
    }

    /// After each admission to the egress queue: the ERN bytes queued, for the interval's persistent
    /// queue (XCP's Q, the minimum over the interval).
    ///
    /// Reads: `queue.ern_bytes()`. Writes: the controller's minimum queue.
    pub fn observe_queue(&mut self, queue: &Queue) {
        if self.enabled {
            self.xcp.observe_queue(queue.ern_bytes());
        }
    }

    /// Once per round, after the queue was served: observes the queue, and when the control interval
    /// is over, computes the next interval's coefficients (XCP's efficiency and fairness
    /// controllers) with capacity = `rate` (the pacing rate of this round, bit/s) x
    /// `ern.capacity_factor`, so an ACM change moves the feedback at the next interval end. Without
    /// a pacing rate (line rate) the capacity is unknown and the interval does not end.
    ///
    /// Reads: `queue.ern_bytes()`, `rate`. Writes: the controller; `Shared::xcp` (the last decision
    /// and the interval in force, for the endpoint); counter `ern_intervals`.
    pub fn end_round(&mut self, sh: &Shared, now: u64, rate: Option<f64>, queue: &Queue) {
        if !self.enabled {
            return;
        }
        self.xcp.observe_queue(queue.ern_bytes());
        let cap = rate.unwrap_or(f64::NAN) / 8.0 * sh.cfg.ern.capacity_factor;
        if cap.is_finite() && self.xcp.tick(now, cap, queue.ern_bytes()) {
            sh.c.ern_intervals.fetch_add(1, Ordering::Relaxed);
            *sh.xcp.lock().expect("xcp lock") = (self.xcp.last, self.xcp.interval_s());
        }
    }
}
