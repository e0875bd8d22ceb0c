//! The terminals of a forward beam (`forward.beam`): their configuration, its validation, and the
//! per-terminal link each one is built from (`beam.rs` runs them on one carrier).
//!
//! A terminal's link is the forward direction's configuration with the terminal's own settings
//! in place: downlink clear-sky C/N and attenuation source (or another terminal's, shifted in
//! time: a rain cell), ACM refresh and feedback delay (the return delay its Es/N0 reports take),
//! queue limits. Everything else (symbol rate, MODCOD table, PER, bit errors, reordering, the
//! propagation delay) is the beam's.
//!
//! Packets go to a terminal by destination IPv4 prefix (longest match over every terminal's
//! `prefixes`; the addresses behind a terminal are its LAN; an ARP packet goes by the address it
//! asks or answers for). A packet no prefix matches (IPv6, other destinations) goes to the first
//! terminal, so a beam whose first terminal is the default one carries everything a one-terminal
//! link carries.
//!
//! Terminals reach the emulator on its one st port, either all on the same wire or each on its
//! own 802.1Q VLAN (`vlan`: a switch in front of the terminals' LANs). With VLANs, a terminal's
//! frames leave tagged with its VLAN ID and a frame arriving with a VLAN ID is that terminal's.

use std::net::Ipv4Addr;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::config::{
    check_range, AcmMode, AttenuationConfig, ConfigError, LinkConfig, QueueConfig,
};
use crate::load::check_label;

/// Most terminals of a beam (classification is a prefix table and the scheduler walks only the
/// terminals with data, so the bound is about status size and start-up time, not packet cost).
pub const MAX_TERMINALS: usize = 1000;
/// Most prefixes behind one terminal.
pub const MAX_PREFIXES: usize = 16;

/// Which terminal the next BBFRAME serves (EN 302 307-1 section 5 leaves the choice to the
/// gateway; OpenSAND's forward scheduling serves its per-terminal FIFOs in turn, one frame at a
/// time, each frame at the MODCOD of the terminal it carries).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BeamPolicy {
    /// One frame per terminal with data, in turn: equal frame counts, so each terminal's rate is
    /// in proportion to its MODCOD's efficiency.
    RoundRobin,
    /// Weighted proportional fair (Jalali, Padovani, Pankaj, "Data throughput of CDMA-HDR",
    /// VTC 2000, section 3): the terminal with data that maximises weight x rate(MODCOD now) /
    /// its average served rate (an exponential time average with time constant
    /// `fairness_window_ms`, idle terminals decaying too). With steady MODCODs this gives each backlogged terminal a
    /// share of airtime in proportion to its weight; a terminal whose MODCOD is better than
    /// usual is served first.
    ProportionalFair,
}

/// A forward beam: several terminals on one carrier (`forward.beam`; absent: one terminal, the
/// link as configured).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BeamConfig {
    #[serde(default = "default_policy")]
    pub scheduler: BeamPolicy,
    /// `proportional_fair`: time constant of the average served rates, ms (a few frames to
    /// many: shorter follows fades faster, longer evens shares over longer).
    #[serde(default = "default_window")]
    #[schemars(range(min = 1.0, max = 100000.0), extend("x-unit" = "ms"))]
    pub fairness_window_ms: f64,
    /// Room a frame's terminal leaves (padding) goes to the packets of other terminals whose
    /// MODCOD needs at least the frame's Es/N0 (they decode it too), in scheduler order.
    #[serde(default)]
    pub mixed_frames: bool,
    /// The terminals (1 to 1000), each with the IPv4 prefixes behind it.
    #[serde(default)]
    #[schemars(length(min = 1, max = 1000))]
    pub terminals: Vec<TerminalConfig>,
}

fn default_policy() -> BeamPolicy {
    BeamPolicy::RoundRobin
}

fn default_window() -> f64 {
    100.0
}

/// One terminal of the beam. Fields left out take the forward direction's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalConfig {
    /// Name (status, telemetry and metric label): 1-32 characters of a-z, 0-9, `_`, `-`; unique.
    #[schemars(length(min = 1, max = 32), regex(pattern = r"^[a-z0-9_-]+$"))]
    pub name: String,
    /// IPv4 prefixes behind the terminal (`10.0.2.0/24`; a bare address is a /32).
    #[serde(default)]
    #[schemars(length(max = 16))]
    pub prefixes: Vec<String>,
    /// `proportional_fair`: share of airtime relative to the other terminals.
    #[serde(default = "default_weight")]
    #[schemars(range(min = 0.001, max = 1000.0))]
    pub weight: f64,
    /// Downlink C/N without attenuation, dB (default: `forward.downlink.clear_sky_db`).
    #[serde(default)]
    #[schemars(range(min = -20.0, max = 60.0), extend("x-unit" = "dB"))]
    pub clear_sky_db: Option<f64>,
    /// Downlink attenuation source (default: `forward.downlink.attenuation`).
    #[serde(default)]
    pub attenuation: Option<AttenuationConfig>,
    /// Take another terminal's downlink attenuation, later by an offset (exclusive with
    /// `attenuation`).
    #[serde(default)]
    pub rain_cell: Option<RainCellConfig>,
    /// ACM report period, ms (default: `forward.acm.refresh_ms`).
    #[serde(default)]
    #[schemars(range(min = 1, max = 600000), extend("x-unit" = "ms"))]
    pub acm_refresh_ms: Option<u64>,
    /// Delay of the terminal's Es/N0 reports to the gateway, ms (default: the return delay).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 10000.0), extend("x-unit" = "ms"))]
    pub feedback_delay_ms: Option<f64>,
    /// The terminal's queue at the gateway (default: `forward.queue`).
    #[serde(default)]
    pub queue: Option<QueueConfig>,
    /// 802.1Q VLAN ID of the terminal on the st port (1-4094, unique; every terminal has one or
    /// none has): its frames leave the st port tagged with it, and frames arriving there with it
    /// are the terminal's (untagged on the way in; any other VLAN ID is dropped and counted).
    #[serde(default)]
    #[schemars(range(min = 1, max = 4094))]
    pub vlan: Option<u16>,
    /// The terminal's own return link on a return beam (`return.dama`); absent: the return
    /// direction's settings, as every terminal had before.
    #[serde(default, rename = "return")]
    pub return_: Option<TerminalReturnConfig>,
}

/// A terminal's own return link (`forward.beam.terminals[].return`, with `return.dama`): its
/// MODCOD on the return direction's RCS2 table, fixed or chosen by the return direction's ACM
/// loop from the terminal's own uplink (terminal -> satellite) C/N and attenuation. The
/// satellite -> gateway downlink is the gateway's, shared by every terminal. A timeslot carries
/// one burst at the terminal's MODCOD, so a terminal at a more robust MODCOD gets fewer bytes
/// per granted slot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TerminalReturnConfig {
    /// A fixed MODCOD id of the return table (`return.modcod_table`, default the embedded RCS2
    /// table, ids 3-12): the terminal's bursts always use it (CCM), whatever its C/N.
    #[serde(default)]
    pub modcod: Option<u32>,
    /// Uplink C/N without attenuation, dB (default: `return.uplink.clear_sky_db`).
    #[serde(default)]
    #[schemars(range(min = -20.0, max = 60.0), extend("x-unit" = "dB"))]
    pub clear_sky_db: Option<f64>,
    /// Uplink attenuation source (default: `return.uplink.attenuation`).
    #[serde(default)]
    pub attenuation: Option<AttenuationConfig>,
}

fn default_weight() -> f64 {
    1.0
}

/// A rain cell moving over several terminals: this terminal sees terminal `follow`'s downlink
/// attenuation `offset_s` later (its value at t - offset; before the run started, its first
/// value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RainCellConfig {
    /// The terminal whose attenuation this one takes (it must have its own, not a rain cell).
    pub follow: String,
    /// How much later the cell reaches this terminal, s.
    #[schemars(range(min = 0.0, max = 86400.0), extend("x-unit" = "s"))]
    pub offset_s: f64,
}

/// An IPv4 prefix as (network, mask).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub(crate) net: u32,
    pub(crate) mask: u32,
    pub(crate) len: u8,
}

impl Prefix {
    pub(crate) fn parse(s: &str, field: &str) -> Result<Self, ConfigError> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, l.parse::<u8>().ok().filter(|&l| l <= 32)),
            None => (s, Some(32)),
        };
        let (Ok(addr), Some(len)) = (addr.parse::<Ipv4Addr>(), len) else {
            return Err(ConfigError::field(
                field,
                format!("{s:?} is not an IPv4 prefix (a.b.c.d/0-32)"),
            ));
        };
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        Ok(Prefix {
            net: u32::from(addr) & mask,
            mask,
            len,
        })
    }
}

impl BeamConfig {
    /// Fills the attenuation ticks (default: the terminal's ACM refresh, as a direction's) and
    /// joins relative trace paths to `base`.
    pub(crate) fn resolve(&mut self, refresh_ms: u64, base: &Path) {
        for t in &mut self.terminals {
            if let Some(a) = t.attenuation.as_mut() {
                a.tick_ms
                    .get_or_insert(t.acm_refresh_ms.unwrap_or(refresh_ms));
                join_file(a, base);
            }
            // Its tick defaults to the return ACM refresh (`return_terminal_link`).
            if let Some(a) = t.return_.as_mut().and_then(|r| r.attenuation.as_mut()) {
                join_file(a, base);
            }
        }
    }

    /// Checks the section at `p` field by field; the terminals' links are built (files loaded)
    /// by the caller.
    pub(crate) fn validate(&self, p: &str) -> Result<(), ConfigError> {
        check_range(
            &format!("{p}.fairness_window_ms"),
            self.fairness_window_ms,
            1.0,
            100_000.0,
            " ms",
        )?;
        let n = self.terminals.len();
        if n == 0 || n > MAX_TERMINALS {
            return Err(ConfigError::field(
                format!("{p}.terminals"),
                format!("{n} terminals; a beam has 1 to {MAX_TERMINALS}"),
            ));
        }
        for (k, t) in self.terminals.iter().enumerate() {
            self.validate_terminal(k, t, &format!("{p}.terminals[{k}]"))?;
        }
        Ok(())
    }

    fn validate_terminal(&self, k: usize, t: &TerminalConfig, tp: &str) -> Result<(), ConfigError> {
        check_label(&format!("{tp}.name"), &t.name)?;
        if self.terminals[..k].iter().any(|o| o.name == t.name) {
            return Err(ConfigError::field(
                format!("{tp}.name"),
                format!("{:?} is the name of an earlier terminal", t.name),
            ));
        }
        if t.prefixes.len() > MAX_PREFIXES {
            return Err(ConfigError::field(
                format!("{tp}.prefixes"),
                format!("{} prefixes; at most {MAX_PREFIXES}", t.prefixes.len()),
            ));
        }
        for (j, s) in t.prefixes.iter().enumerate() {
            Prefix::parse(s, &format!("{tp}.prefixes[{j}]"))?;
        }
        check_range(&format!("{tp}.weight"), t.weight, 0.001, 1000.0, "")?;
        if let Some(c) = t.clear_sky_db {
            check_range(&format!("{tp}.clear_sky_db"), c, -20.0, 60.0, " dB")?;
        }
        if let Some(a) = &t.attenuation {
            a.validate(&format!("{tp}.attenuation"))?;
        }
        if let Some(r) = t.acm_refresh_ms {
            check_range(&format!("{tp}.acm_refresh_ms"), r, 1, 600_000, " ms")?;
        }
        if let Some(d) = t.feedback_delay_ms {
            check_range(&format!("{tp}.feedback_delay_ms"), d, 0.0, 10_000.0, " ms")?;
        }
        if let Some(c) = &t.rain_cell {
            self.validate_rain_cell(t, c, &format!("{tp}.rain_cell"))?;
        }
        if let Some(r) = &t.return_ {
            r.validate(&format!("{tp}.return"))?;
        }
        self.validate_vlan(k, t, &format!("{tp}.vlan"))
    }

    /// A VLAN in range and used once, on every terminal or on none (a terminal without one
    /// would have no way in or out on a VLAN trunk).
    fn validate_vlan(&self, k: usize, t: &TerminalConfig, vp: &str) -> Result<(), ConfigError> {
        let first = &self.terminals[0];
        if t.vlan.is_some() != first.vlan.is_some() {
            let (has, hasnt) = if first.vlan.is_some() {
                (&first.name, &t.name)
            } else {
                (&t.name, &first.name)
            };
            return Err(ConfigError::field(
                vp,
                format!(
                    "terminal {has:?} has a vlan and {hasnt:?} none: give every terminal a \
                     vlan, or none"
                ),
            ));
        }
        let Some(v) = t.vlan else {
            return Ok(());
        };
        check_range(vp, v, 1, 4094, "")?;
        match self.terminals[..k].iter().find(|o| o.vlan == Some(v)) {
            Some(o) => Err(ConfigError::field(
                vp,
                format!("VLAN {v} is terminal {:?}'s already", o.name),
            )),
            None => Ok(()),
        }
    }

    /// Each terminal's VLAN ID, if the terminals have VLANs (valid after
    /// [`BeamConfig::validate`]: all or none).
    pub fn vlans(&self) -> Option<Vec<u16>> {
        self.terminals.iter().map(|t| t.vlan).collect()
    }

    fn validate_rain_cell(
        &self,
        t: &TerminalConfig,
        c: &RainCellConfig,
        rp: &str,
    ) -> Result<(), ConfigError> {
        if t.attenuation.is_some() {
            return Err(ConfigError::field(
                rp,
                "give either attenuation or rain_cell, not both",
            ));
        }
        check_range(&format!("{rp}.offset_s"), c.offset_s, 0.0, 86_400.0, " s")?;
        match self.terminals.iter().find(|o| o.name == c.follow) {
            None => Err(ConfigError::field(
                format!("{rp}.follow"),
                format!("no terminal is named {:?}", c.follow),
            )),
            Some(o) if o.rain_cell.is_some() => Err(ConfigError::field(
                format!("{rp}.follow"),
                format!("terminal {:?} follows a rain cell itself", c.follow),
            )),
            Some(_) => Ok(()),
        }
    }

    /// Terminal `k`'s prefixes (valid after [`BeamConfig::validate`]).
    pub(crate) fn prefixes(&self, k: usize) -> Vec<Prefix> {
        self.terminals[k]
            .prefixes
            .iter()
            .filter_map(|s| Prefix::parse(s, "").ok())
            .collect()
    }

    /// The link terminal `k` is built from (its forward direction without `beam`), and the shift
    /// of its downlink attenuation in ns (a rain cell's offset).
    pub(crate) fn terminal_link(&self, cfg: &LinkConfig, k: usize) -> (LinkConfig, u64) {
        let t = &self.terminals[k];
        let mut link = cfg.clone();
        // Distinct random streams per terminal (erasures, bit errors), still fixed by the seed.
        link.seed = cfg
            .seed
            .wrapping_add((k as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let f = &mut link.forward;
        f.beam = None;
        if let Some(c) = t.clear_sky_db {
            f.downlink.clear_sky_db = c;
        }
        let mut shift_ns = 0;
        let source = match &t.rain_cell {
            Some(c) => {
                shift_ns = (c.offset_s * 1e9) as u64;
                let o = self.terminals.iter().find(|o| o.name == c.follow);
                o.and_then(|o| o.attenuation.clone())
            }
            None => t.attenuation.clone(),
        };
        if let Some(a) = source {
            f.downlink.attenuation = a;
        }
        if let Some(r) = t.acm_refresh_ms {
            f.acm.refresh_ms = r;
        }
        if let Some(q) = &t.queue {
            f.queue = q.clone();
        }
        if let Some(d) = t.feedback_delay_ms {
            link.return_.delay_ms = Some(d);
            link.return_.delay_file = None;
        }
        (link, shift_ns)
    }

    /// The return link terminal `k` is built from on a return beam (`return_beam.rs`): the
    /// return direction with the terminal's `return` settings in place, its own random streams.
    pub(crate) fn return_terminal_link(&self, cfg: &LinkConfig, k: usize) -> LinkConfig {
        let mut link = cfg.clone();
        link.forward.beam = None;
        // Distinct random streams per terminal (erasures, contention), fixed by the seed.
        link.seed = cfg
            .seed
            .wrapping_add((k as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
        let Some(t) = &self.terminals[k].return_ else {
            return link;
        };
        let r = &mut link.return_;
        if let Some(id) = t.modcod {
            r.acm.mode = AcmMode::Ccm;
            r.acm.modcod = Some(id);
        }
        if let Some(c) = t.clear_sky_db {
            r.uplink.clear_sky_db = c;
        }
        if let Some(a) = &t.attenuation {
            let mut a = a.clone();
            a.tick_ms.get_or_insert(r.acm.refresh_ms);
            r.uplink.attenuation = a;
        }
        link
    }
}

impl TerminalReturnConfig {
    /// Checks the bounds at `p`; the MODCOD id is checked against the table when the terminal's
    /// link is built (`return_beam.rs`).
    fn validate(&self, p: &str) -> Result<(), ConfigError> {
        if let Some(c) = self.clear_sky_db {
            check_range(&format!("{p}.clear_sky_db"), c, -20.0, 60.0, " dB")?;
        }
        if let Some(a) = &self.attenuation {
            a.validate(&format!("{p}.attenuation"))?;
        }
        Ok(())
    }
}

/// Joins a relative trace path of `a` to `base`.
fn join_file(a: &mut AttenuationConfig, base: &Path) {
    if let Some(p) = a.file.as_mut().filter(|p| p.is_relative()) {
        *p = base.join(&*p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_match() {
        let p = Prefix::parse("10.0.2.9/24", "f").unwrap();
        assert_eq!(p.net, u32::from(Ipv4Addr::new(10, 0, 2, 0)));
        assert_eq!(p.mask, u32::from(Ipv4Addr::new(255, 255, 255, 0)));
        assert_eq!(Prefix::parse("10.0.2.7", "f").unwrap().len, 32);
        assert_eq!(Prefix::parse("0.0.0.0/0", "f").unwrap().mask, 0);
        let e = Prefix::parse("10.0.2.0/33", "forward.beam.terminals[0].prefixes[0]");
        assert!(e
            .unwrap_err()
            .to_string()
            .starts_with("forward.beam.terminals[0].prefixes[0]: \"10.0.2.0/33\""));
    }
}
