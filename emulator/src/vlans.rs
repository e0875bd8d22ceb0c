//! The st port as a VLAN trunk (`forward.beam.terminals[].vlan`): a switch in front of the
//! terminals' LANs gives each terminal its own 802.1Q VLAN on the one port.
//!
//! Outbound (forward), the beam pushes each terminal's tag on its delivered frames
//! (`linkmodel::beam`). Inbound (return), this module attributes a frame to the terminal whose
//! VLAN ID it carries and the frame goes on untagged; a frame with another VLAN ID, or with none,
//! belongs to no terminal and is dropped, counted by reason (`satlab_emulator_rx_vlan_dropped_total`).

use std::sync::atomic::{AtomicU64, Ordering};

use linkmodel::LinkConfig;
use packet::ethernet::{self, VlanTag};

use binkit::prom;

/// Terminal by VLAN ID, and what arrived on each.
#[derive(Debug)]
pub struct StVlans {
    /// VLAN ID -> terminal index + 1 (0: no terminal), 4096 entries.
    by_vid: Vec<u16>,
    names: Vec<String>,
    /// Frames received from each terminal.
    rx_frames: Vec<AtomicU64>,
    /// Frames dropped: a VLAN ID no terminal has.
    unknown_vid: AtomicU64,
    /// Frames dropped: no VLAN tag.
    untagged: AtomicU64,
}

impl StVlans {
    /// The trunk of a validated link whose beam's terminals have VLANs; `None` otherwise (the
    /// st port carries every terminal on one untagged wire).
    pub fn of(link: &LinkConfig) -> Option<StVlans> {
        let beam = link.forward.beam.as_ref()?;
        let vids = beam.vlans()?;
        let mut by_vid = vec![0u16; 4096];
        for (k, &v) in vids.iter().enumerate() {
            // At most 1000 terminals (linkmodel::terminals::MAX_TERMINALS): k + 1 fits.
            by_vid[usize::from(v & 0x0fff)] = (k + 1) as u16;
        }
        Some(StVlans {
            by_vid,
            names: beam.terminals.iter().map(|t| t.name.clone()).collect(),
            rx_frames: vids.iter().map(|_| AtomicU64::new(0)).collect(),
            unknown_vid: AtomicU64::new(0),
            untagged: AtomicU64::new(0),
        })
    }

    /// The terminal of a received frame's tag (`tag`: the one the kernel took into metadata;
    /// none: the frame's own first tag, if any), counted; `None` (counted too): dropped.
    /// The frame's own tag, if it was read from it, is taken out of `frame` (its length - 4
    /// bytes are the frame then: the returned `bool`).
    pub fn admit(&self, tag: Option<VlanTag>, frame: &mut [u8]) -> Option<(usize, bool)> {
        let (vid, inline) = match tag {
            Some(t) => (t.vid, false),
            None => match ethernet::Frame::new_checked(&*frame)
                .ok()
                .and_then(|f| f.vlan())
            {
                Some(t) => (t.vid, true),
                None => {
                    self.untagged.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            },
        };
        let Some(k) = self.by_vid[usize::from(vid)].checked_sub(1) else {
            self.unknown_vid.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        self.rx_frames[usize::from(k)].fetch_add(1, Ordering::Relaxed);
        if inline {
            frame.copy_within(12 + ethernet::VLAN_TAG_LEN.., 12);
        }
        Some((usize::from(k), inline))
    }

    /// The trunk's Prometheus series: frames received per terminal, and drops by reason.
    pub fn metrics(&self, out: &mut String) {
        let name = "satlab_emulator_terminal_rx_frames_total";
        let help = "Frames received on the st port from the terminal (its VLAN ID).";
        prom::header(out, name, "counter", help);
        for (n, c) in self.names.iter().zip(&self.rx_frames) {
            let labels = format!("{{direction=\"return\",terminal=\"{n}\"}}");
            prom::sample(out, name, &labels, c.load(Ordering::Relaxed) as f64);
        }
        let name = "satlab_emulator_rx_vlan_dropped_total";
        let help = "Frames dropped on the st port: a VLAN ID no terminal has (unknown_vid), \
                    or no VLAN tag (untagged).";
        prom::header(out, name, "counter", help);
        for (reason, c) in [
            ("unknown_vid", &self.unknown_vid),
            ("untagged", &self.untagged),
        ] {
            let labels = format!("{{direction=\"return\",reason=\"{reason}\"}}");
            prom::sample(out, name, &labels, c.load(Ordering::Relaxed) as f64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trunk() -> StVlans {
        let cfg = LinkConfig::from_yaml_str(
            "forward: {beam: {terminals: [{name: a, vlan: 101}, {name: b, vlan: 102}]}}",
        )
        .unwrap();
        StVlans::of(&cfg).unwrap()
    }

    fn tag(vid: u16) -> Option<VlanTag> {
        Some(VlanTag::from_tci(0x8100, vid))
    }

    #[test]
    fn frames_go_to_the_terminal_of_their_vlan_and_others_are_dropped_by_reason() {
        let t = trunk();
        let mut f = vec![0u8; 60];
        assert_eq!(t.admit(tag(102), &mut f), Some((1, false)));
        assert_eq!(t.admit(tag(101), &mut f), Some((0, false)));
        assert_eq!(t.admit(tag(103), &mut f), None);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        assert_eq!(t.admit(None, &mut f), None);
        // A tag still in the frame (AF_XDP): read, then taken out.
        f[12..18].copy_from_slice(&[0x81, 0x00, 0x00, 102, 0x08, 0x00]);
        assert_eq!(t.admit(None, &mut f), Some((1, true)));
        assert_eq!(f[12..14], [0x08, 0x00]);
        let mut m = String::new();
        t.metrics(&mut m);
        for line in [
            "satlab_emulator_terminal_rx_frames_total{direction=\"return\",terminal=\"a\"} 1",
            "satlab_emulator_terminal_rx_frames_total{direction=\"return\",terminal=\"b\"} 2",
            "satlab_emulator_rx_vlan_dropped_total{direction=\"return\",reason=\"unknown_vid\"} 1",
            "satlab_emulator_rx_vlan_dropped_total{direction=\"return\",reason=\"untagged\"} 1",
        ] {
            assert!(m.contains(line), "{line} in\n{m}");
        }
    }

    #[test]
    fn a_link_without_vlans_has_no_trunk() {
        let cfg = LinkConfig::from_yaml_str("forward: {beam: {terminals: [{name: a}]}}").unwrap();
        assert!(StVlans::of(&cfg).is_none());
        assert!(StVlans::of(&LinkConfig::from_yaml_str("{}").unwrap()).is_none());
    }
}
