//! Prometheus series of a beam's terminals (`forward.beam`; on the return link too with
//! `return.dama`), labelled `direction` and `terminal`: `satlab_emulator_terminal_*`, and the
//! DAMA requests and grants of the return link's terminals. Nothing without a beam, so a
//! one-terminal link's /metrics is as before (the link's own series are not labelled by terminal).

use crate::control::{item_metrics, ItemDef};
use linkmodel::{DamaStatus, DirectionStatus, TerminalStatus};

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
        "Frames of the terminal: BBFRAMEs sent to it (forward), RCS2 bursts it sent (return).",
        |t| t.frames as f64,
    ),
    (
        "terminal_sent_bytes_total",
        "counter",
        "GSE bytes sent to (forward) or by (return) the terminal.",
        |t| t.sent_bytes as f64,
    ),
    (
        "terminal_delivered_bytes_total",
        "counter",
        "Bytes of the terminal delivered at the far side.",
        |t| t.counters.delivered_bytes as f64,
    ),
];

/// A terminal's DAMA status as read by a series (terminals with DAMA only).
fn dama(t: &TerminalStatus) -> &DamaStatus {
    t.dama.as_deref().expect("terminal with dama")
}

const DAMA_DEFS: [ItemDef<TerminalStatus>; 8] = [
    (
        "terminal_requested_rbdc_kbps",
        "gauge",
        "RBDC rate the terminal requested in this superframe, kbit/s.",
        |t| dama(t).requested_rbdc_kbps,
    ),
    (
        "terminal_requested_vbdc_bytes",
        "gauge",
        "VBDC volume the terminal requested in this superframe, bytes.",
        |t| dama(t).requested_vbdc_bytes as f64,
    ),
    (
        "terminal_granted_kbps",
        "gauge",
        "Return capacity granted to the terminal in this superframe (all categories), kbit/s.",
        |t| dama(t).granted_kbps,
    ),
    (
        "terminal_granted_slots",
        "gauge",
        "Timeslots granted to the terminal in this superframe.",
        |t| f64::from(dama(t).granted_slots),
    ),
    // Contention access (`return.dama.contention`): every try ends in the superframe it was
    // sent in, so tries = successes + beam collisions + background collisions at any scrape.
    (
        "terminal_contention_tries_total",
        "counter",
        "Capacity requests the terminal sent in contention slots.",
        |t| dama(t).contention_attempts as f64,
    ),
    (
        "terminal_contention_successes_total",
        "counter",
        "Of the terminal's contention requests, those that reached the gateway.",
        |t| (dama(t).contention_attempts - dama(t).contention_collisions) as f64,
    ),
    (
        "terminal_contention_beam_collisions_total",
        "counter",
        "Of the terminal's contention requests, those lost sharing their slot with another \
         terminal of the beam.",
        |t| dama(t).contention_beam_collisions as f64,
    ),
    (
        "terminal_contention_background_collisions_total",
        "counter",
        "Of the terminal's contention requests, those lost to the background load only.",
        |t| (dama(t).contention_collisions - dama(t).contention_beam_collisions) as f64,
    ),
];

/// The terminals of a direction whose terminals have DAMA (a return beam), else none.
fn dama_terminals(s: &DirectionStatus) -> &[TerminalStatus] {
    match s.terminals.first() {
        Some(t) if t.dama.is_some() => &s.terminals,
        _ => &[],
    }
}

/// Appends the per-terminal series of every direction with terminals.
pub fn append(out: &mut String, st: [&DirectionStatus; 2]) {
    item_metrics(out, st, "terminal", &DEFS, |s| &s.terminals, |t| &t.name);
    item_metrics(out, st, "terminal", &DAMA_DEFS, dama_terminals, |t| &t.name);
}

#[cfg(test)]
mod tests {
    use super::*;

    const COUNTERS: &str = r#"{"offered_packets":0,"delivered_packets":0,"delivered_bytes":0,
        "queue_drops":0,"frame_erasures":0,"erased_packets":0,"corrupted_packets":0,
        "reordered_packets":0}"#;

    /// A direction's status with `terminals` (JSON list), the rest zero.
    fn status(direction: &str, terminals: &str) -> DirectionStatus {
        serde_json::from_str(&format!(
            r#"{{"direction":"{direction}","modcod":null,"esn0_db":0,"attenuation_db":0,
            "useful_rate_bps":0,"delay_ms":0,"ber":0,"queue_packets":0,"queue_bytes":0,
            "counters":{COUNTERS},"terminals":{terminals}}}"#
        ))
        .unwrap()
    }

    fn terminal(name: &str, dama: &str) -> String {
        format!(
            r#"{{"name":"{name}","modcod":null,"esn0_db":0,"attenuation_db":0,
            "useful_rate_bps":0,"queue_packets":0,"queue_bytes":0,"frames":0,"sent_bytes":0,
            "counters":{COUNTERS}{dama}}}"#
        )
    }

    #[test]
    fn return_terminals_have_dama_series_and_forward_ones_do_not() {
        let dama = r#","dama":{"superframe":4,"request_delay_superframes":3,"slot_bytes":107,
            "requested_rbdc_kbps":512,"requested_vbdc_bytes":0,"granted_slots":8,
            "granted_kbps":258.4,"cra_kbps":258.4,"rbdc_kbps":0,"vbdc_kbps":0,"fca_kbps":0,
            "contention_attempts":9,"contention_collisions":4,
            "contention_beam_collisions":3}"#;
        let fwd = status("forward", &format!("[{}]", terminal("a", "")));
        let ret = status(
            "return",
            &format!("[{}, {}]", terminal("a", dama), terminal("b", dama)),
        );
        let mut text = String::new();
        append(&mut text, [&fwd, &ret]);
        for row in [
            "satlab_emulator_terminal_granted_kbps{direction=\"return\",terminal=\"b\"} 258.4\n",
            "satlab_emulator_terminal_requested_rbdc_kbps{direction=\"return\",terminal=\"a\"} 512\n",
            "satlab_emulator_terminal_queue_packets{direction=\"return\",terminal=\"a\"} 0\n",
            "satlab_emulator_terminal_queue_packets{direction=\"forward\",terminal=\"a\"} 0\n",
            "satlab_emulator_terminal_contention_tries_total{direction=\"return\",terminal=\"a\"} 9\n",
            "satlab_emulator_terminal_contention_successes_total{direction=\"return\",terminal=\"a\"} 5\n",
            "satlab_emulator_terminal_contention_beam_collisions_total{direction=\"return\",terminal=\"b\"} 3\n",
            "satlab_emulator_terminal_contention_background_collisions_total{direction=\"return\",terminal=\"b\"} 1\n",
        ] {
            assert!(text.contains(row), "{row} missing from\n{text}");
        }
        assert!(!text.contains("granted_kbps{direction=\"forward\""));
        let mut text = String::new();
        append(&mut text, [&fwd, &status("return", "[]")]);
        assert!(!text.contains("terminal_granted_kbps"));
    }
}
