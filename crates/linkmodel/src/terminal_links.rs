//! What a forward beam (`beam.rs`) and a return beam (`return_beam.rs`) do alike over their
//! terminals' links (one [`Direction`] each): status, the terminal a control request names, and
//! the totals over the links.

use crate::config::ConfigError;
use crate::control::ControlCommand;
use crate::direction::Direction;
use crate::types::{DamaStatus, DirectionStatus, TerminalStatus};

/// One terminal as status reads it: its name, its link and the frames counted for it.
pub(crate) type TerminalView<'a> = (&'a str, &'a Direction, u64);

/// A beam's status: the first terminal's link, the queues, counters and DAMA requests and grants
/// summed over the terminals (`superframe`, `request_delay_superframes` and `slot_bytes` the
/// first one's), and each terminal's own record.
pub(crate) fn status<'a>(
    now_ns: u64,
    mut terms: impl Iterator<Item = TerminalView<'a>>,
) -> DirectionStatus {
    let Some(first) = terms.next() else {
        unreachable!("a beam has a terminal");
    };
    let mut st = first.1.status(now_ns);
    st.queue_packets = 0;
    st.queue_bytes = 0;
    st.counters = Default::default();
    st.dama = None;
    for (name, link, frames) in std::iter::once(first).chain(terms) {
        let s = link.status(now_ns);
        st.queue_packets += s.queue_packets;
        st.queue_bytes += s.queue_bytes;
        st.counters.add(&s.counters);
        if let Some(d) = &s.dama {
            match st.dama.as_mut() {
                None => st.dama = Some(d.clone()),
                Some(sum) => add_dama(sum, d),
            }
        }
        st.terminals.push(TerminalStatus {
            name: name.to_string(),
            modcod: s.modcod,
            esn0_db: s.esn0_db,
            attenuation_db: s.attenuation_db,
            useful_rate_bps: s.useful_rate_bps,
            queue_packets: s.queue_packets,
            queue_bytes: s.queue_bytes,
            frames,
            sent_bytes: link.link_totals().0,
            counters: s.counters,
            dama: s.dama,
        });
    }
    st
}

/// Adds terminal DAMA status `d` to the beam's sum `a` (requests, grants, contention counts).
fn add_dama(a: &mut DamaStatus, d: &DamaStatus) {
    a.requested_rbdc_kbps += d.requested_rbdc_kbps;
    a.requested_vbdc_bytes += d.requested_vbdc_bytes;
    a.granted_slots += d.granted_slots;
    a.granted_kbps += d.granted_kbps;
    a.cra_kbps += d.cra_kbps;
    a.rbdc_kbps += d.rbdc_kbps;
    a.vbdc_kbps += d.vbdc_kbps;
    a.fca_kbps += d.fca_kbps;
    a.contention_attempts += d.contention_attempts;
    a.contention_collisions += d.contention_collisions;
    a.contention_beam_collisions += d.contention_beam_collisions;
}

/// Checks `cmd` and finds the index of the terminal `cmd.terminal` names among `names`, or
/// `None` (every terminal), before anything changes.
pub(crate) fn control_target<'a>(
    mut names: impl Iterator<Item = &'a str>,
    cmd: &ControlCommand,
) -> Result<Option<usize>, ConfigError> {
    cmd.validate()?;
    let Some(name) = &cmd.terminal else {
        return Ok(None);
    };
    names.position(|n| n == name).map(Some).ok_or_else(|| {
        ConfigError::field(
            "terminal",
            format!("no terminal of forward.beam is named {name:?}"),
        )
    })
}

/// Applies `cmd` at `now_ns` to link `only` of `links`, or to every one.
pub(crate) fn apply_control<'a>(
    links: impl Iterator<Item = &'a mut Direction>,
    only: Option<usize>,
    now_ns: u64,
    cmd: &ControlCommand,
) -> Result<(), ConfigError> {
    for (k, link) in links.enumerate() {
        if only.is_none_or(|o| o == k) {
            link.control(now_ns, cmd)?;
        }
    }
    Ok(())
}

/// GSE bytes and frames sent so far over `links`.
pub(crate) fn totals<'a>(links: impl Iterator<Item = &'a Direction>) -> (u64, u64) {
    links.fold((0, 0), |(b, f), l| {
        let (lb, lf) = l.link_totals();
        (b + lb, f + lf)
    })
}

/// Packets in the delay lines of `links`.
pub(crate) fn in_flight<'a>(links: impl Iterator<Item = &'a Direction>) -> usize {
    links.map(Direction::in_flight).sum()
}

/// The least input slack of `links`.
pub(crate) fn least_input_slack_ns<'a>(links: impl Iterator<Item = &'a Direction>) -> u64 {
    links.map(Direction::input_slack_ns).min().unwrap_or(0)
}
