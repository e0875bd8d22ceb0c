//! CETEN stamping (Krishnan, Allman, Partridge, Sterbenz, "Explicit Transport Error Notification
//! (ETEN) for Error-Prone Wireless and Satellite Networks", BBN TR 8333, 2002, §2.2 "Cumulative
//! ETEN" and §4.1 "Transporting corruption survival probability estimates"): each router multiplies
//! the forward survival fields by its estimate for a link, so the receiver sees the product along
//! the path; the receiver copies what it saw into the reverse fields of its ACKs.
//!
//! The estimates (per-link EWMA, §4.2, `crate::ewma`) live in `Shared`: corruption survival of the
//! incoming link (from its link events, telemetry thread), congestion survival of the egress link
//! (from the AQM's verdicts, `super::admission`). Option layout: `crates/packet/src/ceten.rs`;
//! rewrites: `crate::process` (incremental TCP checksum, RFC 1624, so a corrupted packet stays
//! detectably corrupt).

use crate::process::{self, Reflected, TcpLoc};
use crate::state::Shared;
use std::sync::atomic::Ordering;

/// Egress stage, per TCP packet, after IP-ERN and before the AQM (when `ceten.enabled`): multiplies
/// the forward congestion field by the egress link's congestion survival; with `ceten.reflect`,
/// plays the receiver's part for a local host without CETEN support by writing the forward values
/// last seen on the opposite flow (ingress) into the reverse fields of this packet (the host's
/// ACK), inserting the option into a pure ACK with room.
///
/// Reads: `Shared::congestion_q16`, `Shared::reflect`. Writes: the CETEN option (and, when
/// inserted, the IPv4 total length and the TCP header length); counters `ceten_stamped`,
/// `ceten_reflected`, `ceten_inserted`.
pub fn egress(sh: &Shared, f: &mut Vec<u8>, loc: &TcpLoc) {
    let cfg = &sh.cfg.ceten;
    if !cfg.enabled {
        return;
    }
    let cong = sh.congestion_q16.load(Ordering::Relaxed) as u16;
    if process::ceten_stamp(f, loc, None, Some(cong)).is_some() {
        sh.c.ceten_stamped.fetch_add(1, Ordering::Relaxed);
    }
    if cfg.reflect {
        reflect(sh, f, loc);
    }
}

/// The reflection half of [`egress`].
fn reflect(sh: &Shared, f: &mut Vec<u8>, loc: &TcpLoc) {
    let (s, d, sp, dp) = process::flow_of(f, loc);
    let rev = sh
        .reflect
        .lock()
        .expect("reflect lock")
        .get(&(d, s, dp, sp))
        .copied();
    let Some(rev) = rev else {
        return;
    };
    match process::ceten_reflect(f, loc, rev, true) {
        Reflected::No => {}
        Reflected::Written => {
            sh.c.ceten_reflected.fetch_add(1, Ordering::Relaxed);
        }
        Reflected::Inserted => {
            sh.c.ceten_reflected.fetch_add(1, Ordering::Relaxed);
            sh.c.ceten_inserted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Ingress stage, per packet (when `ceten.enabled`): on an IPv4/TCP packet with the CETEN option,
/// multiplies the forward corruption field by the incoming link's corruption survival; with
/// `ceten.reflect`, remembers the resulting forward fields per flow for [`egress`] (the table is
/// emptied when it would exceed `ceten.max_flows`).
///
/// Reads: `Shared::corruption_q16`. Writes: the CETEN option; `Shared::reflect`; counter
/// `ceten_stamped`.
pub fn ingress(sh: &Shared, f: &mut [u8]) {
    let cfg = &sh.cfg.ceten;
    if !cfg.enabled {
        return;
    }
    let Some(loc) = process::locate_tcp(f) else {
        return;
    };
    let corr = sh.corruption_q16.load(Ordering::Relaxed) as u16;
    if let Some(fwd) = process::ceten_stamp(f, &loc, Some(corr), None) {
        sh.c.ceten_stamped.fetch_add(1, Ordering::Relaxed);
        if cfg.reflect {
            let id = process::flow_of(f, &loc);
            let mut m = sh.reflect.lock().expect("reflect lock");
            if m.len() >= cfg.max_flows && !m.contains_key(&id) {
                m.clear();
            }
            m.insert(id, fwd);
        }
    }
}
