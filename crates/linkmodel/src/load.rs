//! Loading the link's configuration ([`LinkConfig`], types in `config.rs`): YAML parsing, the
//! defaults that depend on the direction, relative paths joined to the configuration's directory,
//! and validation: every bound, the cross-field rules, and every file the configuration names,
//! parsed once by building each direction's stages (`direction::LinkSetup`).
//!
//! The emulator's configuration file wraps the same sections with the binary's own settings
//! (emulator/src/settings.rs) and uses [`parse_yaml`], [`base_dir_of`],
//! [`DirectionConfig::resolve`] and [`LinkConfig::validate`] from here.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::config::{
    check_range, AcmMode, AttenuationConfig, AttenuationKind, BitErrorModel, ConfigError,
    ContentionConfig, DamaConfig, DirectionConfig, FlowRule, LinkConfig, LinkKind, QueueConfig,
    MAX_CLASSES,
};
use crate::direction::LinkSetup;
use crate::types::Dir;

/// Parses YAML text (`name` is the file name errors give) into a configuration structure; empty
/// text is the default configuration.
pub fn parse_yaml<T: DeserializeOwned + Default>(text: &str, name: &str) -> Result<T, ConfigError> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    serde_yaml::from_str(text).map_err(|e| ConfigError::Yaml {
        file: name.to_string(),
        reason: e.to_string(),
    })
}

/// The directory relative paths of configuration file `path` resolve against (`.` for a bare
/// file name).
pub fn base_dir_of(path: &Path) -> PathBuf {
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    }
}

impl LinkConfig {
    /// Reads, parses and validates a configuration file; relative paths in it resolve against the
    /// file's directory.
    pub fn from_yaml_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        Self::parse(&text, &path.display().to_string(), base_dir_of(path))
    }

    /// Parses and validates YAML text; relative paths resolve against the current directory.
    pub fn from_yaml_str(s: &str) -> Result<Self, ConfigError> {
        Self::parse(s, "<config>", PathBuf::from("."))
    }

    fn parse(text: &str, name: &str, base: PathBuf) -> Result<Self, ConfigError> {
        let mut cfg: LinkConfig = parse_yaml(text, name)?;
        for dir in [Dir::Forward, Dir::Return] {
            cfg.direction_mut(dir).resolve(dir, &base);
        }
        cfg.base_dir = base;
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks every bound and loads every referenced file once (errors name file and line).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if let Some(g) = &self.geometry {
            crate::geometry::validate(g)?;
        }
        for dir in [Dir::Forward, Dir::Return] {
            self.direction(dir).validate(dir.as_str())?;
            // Building the stages loads every file and checks cross-field consistency.
            LinkSetup::build(self, dir)?;
        }
        crate::beam::validate(self)?;
        crate::return_beam::validate(self)
    }
}

/// Checks that `v` is a finite number in `[lo, hi]` for the field at `path`.
fn check_f64(path: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ConfigError> {
    if !v.is_finite() {
        return Err(ConfigError::field(
            path,
            format!("value {v} is not a finite number"),
        ));
    }
    check_range(path, v, lo, hi, unit)
}

impl DirectionConfig {
    /// Fills the defaults of direction `dir` (link kind, symbol rate, attenuation tick) and joins
    /// relative file paths to `base`.
    pub fn resolve(&mut self, dir: Dir, base: &Path) {
        let join = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        if self.kind.is_none() {
            self.kind = Some(match dir {
                Dir::Forward => LinkKind::Dvbs2,
                Dir::Return => LinkKind::Rcs2,
            });
        }
        if self.symbol_rate_baud.is_none() && self.kind != Some(LinkKind::Fixed) {
            self.symbol_rate_baud = Some(match dir {
                Dir::Forward => 40e6,
                Dir::Return => 4e6,
            });
        }
        let refresh = self.acm.refresh_ms;
        for hop in [&mut self.uplink, &mut self.downlink] {
            if hop.attenuation.tick_ms.is_none() {
                hop.attenuation.tick_ms = Some(refresh);
            }
            if let Some(p) = hop.attenuation.file.as_mut() {
                join(p);
            }
        }
        if let Some(f) = self.delay_file.as_mut() {
            join(&mut f.path);
        }
        for p in [&mut self.modcod_table, &mut self.per_table]
            .into_iter()
            .flatten()
        {
            join(p);
        }
        let be = &mut self.bit_errors;
        for p in [&mut be.pattern_file, &mut be.record_file]
            .into_iter()
            .flatten()
        {
            join(p);
        }
        if let Some(b) = self.beam.as_mut() {
            b.resolve(refresh, base);
        }
    }

    /// Checks the bounds and single-section rules of direction `p` (`forward` / `return`), in the
    /// order of the sections below; the first problem is the error.
    pub(crate) fn validate(&self, p: &str) -> Result<(), ConfigError> {
        self.validate_delay(p)?;
        self.validate_phy(p)?;
        self.validate_acm(p)?;
        self.validate_hops(p)?;
        self.validate_queue(p)?;
        self.validate_bit_errors(p)?;
        self.validate_failed_frames(p)?;
        crate::frame_channel::validate_waveform(self, p)?;
        self.validate_oracle_eten(p)?;
        self.validate_dama(p)?;
        self.validate_reorder(p)
    }

    fn validate_delay(&self, p: &str) -> Result<(), ConfigError> {
        if let Some(d) = self.delay_ms {
            check_f64(&format!("{p}.delay_ms"), d, 0.0, 10_000.0, " ms")?;
        }
        if let Some(f) = &self.delay_file {
            if self.delay_ms.is_some() {
                return Err(ConfigError::field(
                    format!("{p}.delay_file"),
                    "give either delay_ms or delay_file, not both",
                ));
            }
            check_range(
                &format!("{p}.delay_file.refresh_period_ms"),
                f.refresh_period_ms,
                1,
                3_600_000,
                " ms",
            )?;
        }
        Ok(())
    }

    /// Symbol rate, roll-off, the rate of a fixed link, burst length, PER waterfall, GSE label.
    fn validate_phy(&self, p: &str) -> Result<(), ConfigError> {
        if let Some(rs) = self.symbol_rate_baud {
            check_f64(&format!("{p}.symbol_rate_baud"), rs, 1e3, 1e9, " baud")?;
        }
        check_f64(&format!("{p}.roll_off"), self.roll_off, 0.0, 1.0, "")?;
        match self.link_kind() {
            LinkKind::Fixed => match self.rate_bps {
                Some(r) => check_f64(&format!("{p}.rate_bps"), r, 1e3, 1e11, " bit/s")?,
                None => {
                    return Err(ConfigError::field(
                        format!("{p}.rate_bps"),
                        "required when kind is fixed (range [1000, 1e11] bit/s)",
                    ))
                }
            },
            _ => {
                if self.rate_bps.is_some() {
                    return Err(ConfigError::field(
                        format!("{p}.rate_bps"),
                        "only for kind fixed (the rate of dvbs2/rcs2 follows symbol rate and MODCOD)",
                    ));
                }
            }
        }
        check_range(
            &format!("{p}.burst_symbols"),
            self.burst_symbols,
            64,
            100_000,
            " symbols",
        )?;
        check_f64(
            &format!("{p}.waterfall_width_db"),
            self.waterfall_width_db,
            0.01,
            10.0,
            " dB",
        )?;
        if self.modcod_set.is_some() {
            if self.link_kind() != LinkKind::Dvbs2 {
                return Err(ConfigError::field(
                    format!("{p}.modcod_set"),
                    "only for kind dvbs2 (rcs2 uses modcod_table or the embedded RCS2 table)",
                ));
            }
            if self.modcod_table.is_some() {
                return Err(ConfigError::field(
                    format!("{p}.modcod_set"),
                    "give either modcod_table or modcod_set, not both",
                ));
            }
        }
        if ![0u8, 3, 6].contains(&self.gse_label_bytes) {
            return Err(ConfigError::field(
                format!("{p}.gse_label_bytes"),
                format!("value {} is not one of 0, 3, 6", self.gse_label_bytes),
            ));
        }
        Ok(())
    }

    fn validate_acm(&self, p: &str) -> Result<(), ConfigError> {
        let a = &self.acm;
        check_range(
            &format!("{p}.acm.refresh_ms"),
            a.refresh_ms,
            1,
            600_000,
            " ms",
        )?;
        check_f64(&format!("{p}.acm.margin_db"), a.margin_db, 0.0, 20.0, " dB")?;
        check_f64(
            &format!("{p}.acm.hysteresis_db"),
            a.hysteresis_db,
            0.0,
            10.0,
            " dB",
        )?;
        match a.mode {
            AcmMode::Ccm if a.modcod.is_none() => Err(ConfigError::field(
                format!("{p}.acm.modcod"),
                "required when acm.mode is ccm (a MODCOD id of the table)",
            )),
            AcmMode::Vcm if a.vcm_modcods.is_empty() || a.vcm_modcods.len() > 1024 => {
                Err(ConfigError::field(
                    format!("{p}.acm.vcm_modcods"),
                    "needs 1 to 1024 MODCOD ids when acm.mode is vcm",
                ))
            }
            _ => Ok(()),
        }
    }

    /// Uplink and downlink: clear-sky C/N, attenuation source, sky-noise rise.
    fn validate_hops(&self, p: &str) -> Result<(), ConfigError> {
        for (hop_name, hop) in [("uplink", &self.uplink), ("downlink", &self.downlink)] {
            let hp = format!("{p}.{hop_name}");
            check_f64(
                &format!("{hp}.clear_sky_db"),
                hop.clear_sky_db,
                -20.0,
                60.0,
                " dB",
            )?;
            hop.attenuation.validate(&format!("{hp}.attenuation"))?;
            let s = &hop.sky_noise;
            if s.enabled && hop_name == "uplink" {
                return Err(ConfigError::field(
                    format!("{hp}.sky_noise.enabled"),
                    "the sky-noise rise applies to the downlink only (the satellite sees the warm earth)",
                ));
            }
            check_f64(
                &format!("{hp}.sky_noise.system_noise_temp_k"),
                s.system_noise_temp_k,
                10.0,
                5000.0,
                " K",
            )?;
            check_f64(
                &format!("{hp}.sky_noise.medium_temp_k"),
                s.medium_temp_k,
                200.0,
                350.0,
                " K",
            )?;
        }
        Ok(())
    }

    fn validate_queue(&self, p: &str) -> Result<(), ConfigError> {
        let q = &self.queue;
        check_range(
            &format!("{p}.queue.limit_packets"),
            q.limit_packets,
            1,
            10_000_000,
            " packets",
        )?;
        check_range(
            &format!("{p}.queue.limit_bytes"),
            q.limit_bytes,
            64,
            1 << 34,
            " bytes",
        )?;
        self.validate_classes(p)
    }

    /// `queue.classes`: at most 16, unique names, bounds, at most one class per DSCP, rules that
    /// select something, exactly one default class (no `dscp`, no `flows`).
    fn validate_classes(&self, p: &str) -> Result<(), ConfigError> {
        let q = &self.queue;
        if q.classes.is_empty() {
            return Ok(());
        }
        if q.classes.len() > MAX_CLASSES {
            return Err(ConfigError::field(
                format!("{p}.queue.classes"),
                format!(
                    "{} classes given, at most {MAX_CLASSES} allowed",
                    q.classes.len()
                ),
            ));
        }
        let mut dscp_owner: [Option<&str>; 64] = [None; 64];
        let mut defaults = Vec::new();
        for (k, c) in q.classes.iter().enumerate() {
            let cp = format!("{p}.queue.classes[{k}]");
            validate_class(q, k, &cp)?;
            for (j, &d) in c.dscp.iter().enumerate() {
                let dp = format!("{cp}.dscp[{j}]");
                check_range(&dp, d, 0, 63, "")?;
                if let Some(other) = dscp_owner[usize::from(d)] {
                    return Err(ConfigError::field(
                        dp,
                        format!("DSCP {d} already selects class {other:?}"),
                    ));
                }
                dscp_owner[usize::from(d)] = Some(&c.name);
            }
            for (j, r) in c.flows.iter().enumerate() {
                validate_flow_rule(r, &format!("{cp}.flows[{j}]"))?;
            }
            if crate::classes::is_default(c) {
                defaults.push(c.name.as_str());
            }
        }
        match defaults.len() {
            1 => Ok(()),
            0 => Err(ConfigError::field(
                format!("{p}.queue.classes"),
                "no default class: exactly one class must have neither dscp nor flows (it takes every packet no rule selects)",
            )),
            _ => Err(ConfigError::field(
                format!("{p}.queue.classes"),
                format!(
                    "{} default classes ({}): exactly one class may have neither dscp nor flows",
                    defaults.len(),
                    defaults.join(", ")
                ),
            )),
        }
    }

    fn validate_bit_errors(&self, p: &str) -> Result<(), ConfigError> {
        let b = &self.bit_errors;
        let bp = format!("{p}.bit_errors");
        check_f64(&format!("{bp}.ber"), b.ber, 0.0, 0.5, "")?;
        check_f64(&format!("{bp}.good_ber"), b.good_ber, 0.0, 0.5, "")?;
        check_f64(&format!("{bp}.bad_ber"), b.bad_ber, 0.0, 0.5, "")?;
        check_f64(
            &format!("{bp}.mean_good_bits"),
            b.mean_good_bits,
            1.0,
            1e15,
            " bits",
        )?;
        check_f64(
            &format!("{bp}.mean_bad_bits"),
            b.mean_bad_bits,
            1.0,
            1e15,
            " bits",
        )?;
        if b.model == BitErrorModel::Pattern && b.pattern_file.is_none() {
            return Err(ConfigError::field(
                format!("{bp}.pattern_file"),
                "required when bit_errors.model is pattern",
            ));
        }
        if b.model != BitErrorModel::Pattern && b.pattern_file.is_some() {
            return Err(ConfigError::field(
                format!("{bp}.pattern_file"),
                "only used when bit_errors.model is pattern",
            ));
        }
        Ok(())
    }

    fn validate_failed_frames(&self, p: &str) -> Result<(), ConfigError> {
        if let Some(f) = &self.failed_frames {
            check_f64(
                &format!("{p}.failed_frames.corrupt_within_db"),
                f.corrupt_within_db,
                0.0,
                10.0,
                " dB",
            )?;
            check_f64(&format!("{p}.failed_frames.ber"), f.ber, 0.0, 0.5, "")?;
        }
        Ok(())
    }

    fn validate_oracle_eten(&self, p: &str) -> Result<(), ConfigError> {
        if let Some(o) = &self.oracle_eten {
            let path = &o.map_pin;
            if !path.is_absolute() || path.file_name().is_none() {
                return Err(ConfigError::field(
                    format!("{p}.oracle_eten.map_pin"),
                    format!(
                        "{} is not an absolute path of a pinned map (such as /sys/fs/bpf/eten_oracle)",
                        path.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// `dama`: every bound, then the return direction of an `rcs2` link only. That the slots hold
    /// a burst and the superframe the CRA is checked when the stage is built (`dama.rs`).
    fn validate_dama(&self, p: &str) -> Result<(), ConfigError> {
        let Some(d) = &self.dama else {
            return Ok(());
        };
        let dp = format!("{p}.dama");
        validate_dama_bounds(d, &dp)?;
        if let Some(c) = &d.contention {
            validate_contention(c, &format!("{dp}.contention"))?;
        }
        if p != Dir::Return.as_str() || self.link_kind() != LinkKind::Rcs2 {
            return Err(ConfigError::field(
                dp,
                "only for the return direction of kind rcs2 (DVB-RCS2 MF-TDMA)",
            ));
        }
        Ok(())
    }

    fn validate_reorder(&self, p: &str) -> Result<(), ConfigError> {
        let r = &self.reorder;
        check_f64(
            &format!("{p}.reorder.probability"),
            r.probability,
            0.0,
            1.0,
            "",
        )?;
        check_f64(
            &format!("{p}.reorder.extra_delay_ms"),
            r.extra_delay_ms,
            0.0,
            10_000.0,
            " ms",
        )?;
        check_f64(
            &format!("{p}.reorder.jitter_ms"),
            r.jitter_ms,
            0.0,
            10_000.0,
            " ms",
        )
    }
}

impl AttenuationConfig {
    pub(crate) fn validate(&self, p: &str) -> Result<(), ConfigError> {
        check_f64(&format!("{p}.value_db"), self.value_db, 0.0, 100.0, " dB")?;
        if let Some(t) = self.tick_ms {
            check_range(&format!("{p}.tick_ms"), t, 1, 3_600_000, " ms")?;
        }
        check_range(
            &format!("{p}.on_ticks"),
            self.on_ticks,
            0,
            1_000_000_000,
            " ticks",
        )?;
        check_range(
            &format!("{p}.off_ticks"),
            self.off_ticks,
            0,
            1_000_000_000,
            " ticks",
        )?;
        if self.kind == AttenuationKind::OnOff && self.on_ticks + self.off_ticks == 0 {
            return Err(ConfigError::field(
                format!("{p}.on_ticks"),
                "on_ticks + off_ticks must be at least 1",
            ));
        }
        check_f64(
            &format!("{p}.amplitude_db"),
            self.amplitude_db,
            0.0,
            100.0,
            " dB",
        )?;
        check_f64(
            &format!("{p}.slope_db_per_tick"),
            self.slope_db_per_tick,
            0.0,
            100.0,
            " dB/tick",
        )?;
        check_range(
            &format!("{p}.period_ticks"),
            self.period_ticks,
            1,
            1_000_000_000,
            " ticks",
        )?;
        if self.kind == AttenuationKind::Triangular
            && self.slope_db_per_tick * self.period_ticks as f64 / 2.0 > 100.0
        {
            return Err(ConfigError::field(
                format!("{p}.slope_db_per_tick"),
                "slope x period / 2 (the peak) must not exceed 100 dB",
            ));
        }
        if self.kind == AttenuationKind::File && self.file.is_none() {
            return Err(ConfigError::field(
                format!("{p}.file"),
                "required when type is file",
            ));
        }
        Ok(())
    }
}

/// `dama` (at `dp`): the bounds of its numbers, the MF-TDMA pool's first.
fn validate_dama_bounds(d: &DamaConfig, dp: &str) -> Result<(), ConfigError> {
    check_range(&format!("{dp}.carriers"), d.carriers, 1, 4096, "")?;
    check_range(
        &format!("{dp}.timeslots_per_frame"),
        d.timeslots_per_frame,
        1,
        100_000,
        "",
    )?;
    check_f64(
        &format!("{dp}.frame_duration_ms"),
        d.frame_duration_ms,
        0.1,
        1000.0,
        " ms",
    )?;
    check_range(
        &format!("{dp}.frames_per_superframe"),
        d.frames_per_superframe,
        1,
        1000,
        "",
    )?;
    check_f64(&format!("{dp}.cra_kbps"), d.cra_kbps, 0.0, 1e7, " kbit/s")?;
    check_f64(
        &format!("{dp}.rbdc_max_kbps"),
        d.rbdc_max_kbps,
        0.0,
        1e7,
        " kbit/s",
    )?;
    check_range(
        &format!("{dp}.rbdc_timeout_superframes"),
        d.rbdc_timeout_superframes,
        1,
        100_000,
        " superframes",
    )?;
    check_range(
        &format!("{dp}.vbdc_max_bytes"),
        d.vbdc_max_bytes,
        0,
        1_000_000_000,
        " bytes",
    )?;
    if let Some(n) = d.request_delay_superframes {
        check_range(
            &format!("{dp}.request_delay_superframes"),
            n,
            1,
            100_000,
            " superframes",
        )?;
    }
    check_range(
        &format!("{dp}.scheduling_delay_superframes"),
        d.scheduling_delay_superframes,
        0,
        1000,
        " superframes",
    )?;
    Ok(())
}

/// `dama.contention` (at `cp`): every bound.
fn validate_contention(c: &ContentionConfig, cp: &str) -> Result<(), ConfigError> {
    check_range(
        &format!("{cp}.slots_per_superframe"),
        c.slots_per_superframe,
        1,
        1000,
        "",
    )?;
    check_f64(
        &format!("{cp}.background_load"),
        c.background_load,
        0.0,
        20.0,
        "",
    )?;
    check_range(
        &format!("{cp}.backoff_superframes"),
        c.backoff_superframes,
        0,
        1000,
        " superframes",
    )
}

/// Checks a name that becomes a status key and a metric label (a class's, a terminal's): 1-32
/// characters of a-z, 0-9, `_` and `-`.
pub(crate) fn check_label(field: &str, name: &str) -> Result<(), ConfigError> {
    let ok = (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(ConfigError::field(
            field,
            format!("{name:?} is not 1-32 characters of a-z, 0-9, _ and -"),
        ));
    }
    Ok(())
}

/// Class `k` of queue `q` (at `cp`) on its own: name, priority, weight, limits, rule counts.
fn validate_class(q: &QueueConfig, k: usize, cp: &str) -> Result<(), ConfigError> {
    let c = &q.classes[k];
    check_label(&format!("{cp}.name"), &c.name)?;
    if q.classes[..k].iter().any(|o| o.name == c.name) {
        return Err(ConfigError::field(
            format!("{cp}.name"),
            format!("class name {:?} is used twice", c.name),
        ));
    }
    check_range(&format!("{cp}.priority"), c.priority, 0, 7, "")?;
    check_range(&format!("{cp}.weight"), c.weight, 1, 1000, "")?;
    if let Some(n) = c.limit_packets {
        check_range(
            &format!("{cp}.limit_packets"),
            n,
            1,
            q.limit_packets,
            " packets (at most queue.limit_packets)",
        )?;
    }
    if let Some(n) = c.limit_bytes {
        check_range(
            &format!("{cp}.limit_bytes"),
            n,
            64,
            q.limit_bytes,
            " bytes (at most queue.limit_bytes)",
        )?;
    }
    if c.dscp.len() > 64 || c.flows.len() > 64 {
        return Err(ConfigError::field(
            cp,
            "at most 64 dscp values and 64 flow rules per class",
        ));
    }
    Ok(())
}

/// A class's flow rule (at `rp`): something to match, and ports only with TCP or UDP.
fn validate_flow_rule(r: &FlowRule, rp: &str) -> Result<(), ConfigError> {
    if r.protocol.is_none() && r.src_port.is_none() && r.dst_port.is_none() {
        return Err(ConfigError::field(
            rp,
            "a flow rule needs at least one of protocol, src_port, dst_port",
        ));
    }
    let ports = r.src_port.is_some() || r.dst_port.is_some();
    if ports && !matches!(r.protocol, None | Some(6) | Some(17)) {
        return Err(ConfigError::field(
            format!("{rp}.protocol"),
            format!(
                "ports only exist for TCP (6) and UDP (17), not protocol {}",
                r.protocol.unwrap_or_default()
            ),
        ));
    }
    Ok(())
}
