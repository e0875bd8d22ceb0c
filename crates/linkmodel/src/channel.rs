//! The channel of one direction: its Es/N0 at the receiver as a function of time (clear-sky C/N,
//! attenuation sources, live override), and the C/N algebra (OpenSAND `GroundPhysicalChannel`).
//! Not a stage of its own: the condition two stages read, the ACM loop of the scheduler (which
//! MODCOD a frame gets, `scheduler.rs`) and the erasure stage (whether a frame is lost,
//! `erasure.rs`). Live control sets and clears the override.
//!
//! C/N_up = clear_sky_up - A_up, C/N_down = clear_sky_down - A_down (dB), and the total, used as
//! Es/N0 by the receiver and by the ACM loop, is 1 / (1/cn_up + 1/cn_down) in linear terms.
//!
//! Optional downlink sky-noise rise (ITU-R P.618 section 2.5): rain of
//! attenuation A both weakens the carrier and radiates noise; the receiver's noise temperature
//! grows from the clear-sky system temperature T_sys by T_m (1 - 10^(-A/10)), T_m = 275 K, so the
//! downlink C/N loses A + 10 log10(1 + T_m (1 - 10^(-A/10)) / T_sys) dB. (The clear-sky sky
//! contribution is taken as part of T_sys.)

use crate::attenuation::Source;
use crate::config::{ConfigError, HopConfig};

pub fn db_to_lin(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

pub fn lin_to_db(lin: f64) -> f64 {
    10.0 * lin.log10()
}

/// Total C/N of two hops in series (dB in, dB out).
pub fn combine_db(cn_up_db: f64, cn_down_db: f64) -> f64 {
    lin_to_db(1.0 / (1.0 / db_to_lin(cn_up_db) + 1.0 / db_to_lin(cn_down_db)))
}

/// Extra downlink C/N loss from the sky-noise rise under `att_db` of rain, dB.
pub fn sky_noise_rise_db(att_db: f64, system_noise_temp_k: f64, medium_temp_k: f64) -> f64 {
    let a = att_db.max(0.0);
    let t_rain = medium_temp_k * (1.0 - 10f64.powf(-a / 10.0));
    lin_to_db(1.0 + t_rain / system_noise_temp_k)
}

/// Uplink and downlink of one direction: clear-sky C/N, attenuation sources, live override.
#[derive(Debug, Clone)]
pub struct Channel {
    up_clear_db: f64,
    down_clear_db: f64,
    up: Source,
    down: Source,
    /// (T_sys, T_m) when the sky-noise rise is on.
    sky_noise: Option<(f64, f64)>,
    /// Live override (total attenuation, applied on the downlink, uplink 0) since a time.
    override_db: Option<(u64, f64)>,
    /// The downlink source is read this much earlier (a rain cell reaching a beam's terminal
    /// later than the terminal whose trace it is).
    down_shift_ns: u64,
}

impl Channel {
    pub fn from_config(up: &HopConfig, down: &HopConfig, field: &str) -> Result<Self, ConfigError> {
        Ok(Channel {
            up_clear_db: up.clear_sky_db,
            down_clear_db: down.clear_sky_db,
            up: Source::from_config(&up.attenuation, &format!("{field}.uplink.attenuation"))?,
            down: Source::from_config(&down.attenuation, &format!("{field}.downlink.attenuation"))?,
            sky_noise: down.sky_noise.enabled.then_some((
                down.sky_noise.system_noise_temp_k,
                down.sky_noise.medium_temp_k,
            )),
            override_db: None,
            down_shift_ns: 0,
        })
    }

    /// Reads the downlink source `ns` earlier (its first value before that).
    pub(crate) fn shift_downlink(&mut self, ns: u64) {
        self.down_shift_ns = ns;
    }

    /// A channel with constant attenuation (tests, tools).
    pub fn constant(up_clear_db: f64, down_clear_db: f64, up_db: f64, down_db: f64) -> Self {
        Channel {
            up_clear_db,
            down_clear_db,
            up: Source::Constant(up_db),
            down: Source::Constant(down_db),
            sky_noise: None,
            override_db: None,
            down_shift_ns: 0,
        }
    }

    /// Replaces both sources by `total_db` on the downlink from `now_ns` on.
    pub fn set_override(&mut self, now_ns: u64, total_db: f64) {
        self.override_db = Some((now_ns, total_db));
    }

    /// Back to the configured sources.
    pub fn clear_override(&mut self) {
        self.override_db = None;
    }

    /// (uplink, downlink) attenuation at `t_ns`, dB.
    pub fn attenuation_db(&self, t_ns: u64) -> (f64, f64) {
        match self.override_db {
            Some((since, v)) if t_ns >= since => (0.0, v),
            _ => (
                self.up.at(t_ns),
                self.down.at(t_ns.saturating_sub(self.down_shift_ns)),
            ),
        }
    }

    /// Total Es/N0 (C/N) at the receiver at `t_ns`, dB.
    pub fn esn0_db(&self, t_ns: u64) -> f64 {
        let (a_up, a_down) = self.attenuation_db(t_ns);
        let mut cn_down = self.down_clear_db - a_down;
        if let Some((tsys, tm)) = self.sky_noise {
            cn_down -= sky_noise_rise_db(a_down, tsys, tm);
        }
        combine_db(self.up_clear_db - a_up, cn_down)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opensand_clear_sky_20_20() {
        let v = combine_db(20.0, 20.0);
        assert!((v - 16.9897).abs() < 1e-3, "{v}");
        let c = Channel::constant(20.0, 20.0, 0.0, 0.0);
        assert!((c.esn0_db(0) - 16.99).abs() < 0.01);
    }

    #[test]
    fn downlink_fade() {
        // 6 dB on the downlink: 20 dB up, 14 dB down -> 13.03 dB.
        let c = Channel::constant(20.0, 20.0, 0.0, 6.0);
        let v = c.esn0_db(0);
        assert!((v - 13.03).abs() < 0.01, "{v}");
        // Much weaker hop dominates.
        assert!((combine_db(40.0, 10.0) - 9.9957).abs() < 1e-3);
    }

    #[test]
    fn sky_noise() {
        assert!(sky_noise_rise_db(0.0, 290.0, 275.0).abs() < 1e-12);
        // 3 dB rain: Tsky = 275 * (1 - 0.501) = 137.2 K; rise = 10 log10(1 + 137.2/290) = 1.68 dB
        let r = sky_noise_rise_db(3.0, 290.0, 275.0);
        assert!((r - 1.68).abs() < 0.01, "{r}");
        // Saturates at 10 log10(1 + 275/290) = 2.90 dB.
        assert!((sky_noise_rise_db(60.0, 290.0, 275.0) - 2.899).abs() < 0.01);
    }

    #[test]
    fn override_until_resume() {
        let mut c = Channel::constant(20.0, 20.0, 1.0, 2.0);
        c.set_override(1000, 6.0);
        assert_eq!(c.attenuation_db(500), (1.0, 2.0));
        assert_eq!(c.attenuation_db(2000), (0.0, 6.0));
        c.clear_override();
        assert_eq!(c.attenuation_db(2000), (1.0, 2.0));
    }
}
