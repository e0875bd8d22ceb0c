//! Prometheus series of a forward beam's terminals (`forward.beam`), labelled `direction` and
//! `terminal`: `satlab_emulator_terminal_*`. Nothing without a beam, so a one-terminal link's
//! /metrics is as before (the link's own series are not labelled by terminal).

use crate::control::{item_metrics, ItemDef};
use linkmodel::{DirectionStatus, TerminalStatus};

const DEFS: [ItemDef<TerminalStatus>; 8] = [
    (
        "terminal_modcod_id",
        "gauge",
        "MODCOD of the terminal's next frame.",
        |t| t.modcod.as_ref().map_or(0.0, |m| f64::from(m.id)),
    ),
    (
        "terminal_esn0_db",
        "gauge",
        "Es/N0 at the terminal, dB.",
        |t| t.esn0_db,
    ),
    (
        "terminal_useful_rate_bps",
        "gauge",
        "Useful bit rate at the terminal's MODCOD, bit/s.",
        |t| t.useful_rate_bps,
    ),
    (
        "terminal_queue_packets",
        "gauge",
        "Packets in the terminal's queue.",
        |t| t.queue_packets as f64,
    ),
    (
        "terminal_queue_bytes",
        "gauge",
        "Bytes in the terminal's queue.",
        |t| t.queue_bytes as f64,
    ),
    (
        "terminal_frames_total",
        "counter",
        "BBFRAMEs sent to the terminal.",
        |t| t.frames as f64,
    ),
    (
        "terminal_sent_bytes_total",
        "counter",
        "GSE bytes sent to the terminal.",
        |t| t.sent_bytes as f64,
    ),
    (
        "terminal_delivered_bytes_total",
        "counter",
        "Bytes delivered to the terminal's side.",
        |t| t.counters.delivered_bytes as f64,
    ),
];

/// Appends the per-terminal series of every direction with terminals.
pub fn append(out: &mut String, st: [&DirectionStatus; 2]) {
    item_metrics(out, st, "terminal", &DEFS, |s| &s.terminals, |t| &t.name);
}
