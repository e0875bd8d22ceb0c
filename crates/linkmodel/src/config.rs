//! The link's configuration: what the two directions of the link are built from, as structures
//! with their defaults and their bounds (`#[schemars]` annotations, the JSON Schema's `minimum` /
//! `maximum` / `x-unit`), plus [`ConfigError`] and the range check every validation uses.
//!
//! Only types here: reading a YAML file, resolving paths and validating is `load.rs`, and the
//! stages that read these structures are built in `direction.rs`. The emulator's configuration
//! file holds these sections (`seed`, `geometry`, `forward`, `return`) next to the binary's own
//! settings (ports, telemetry, control: emulator/src/settings.rs); the file is documented in
//! emulator/CONFIG.md.
//!
//! Every numeric field has bounds; a validation error names the field path
//! (`forward.acm.margin_db`), the value and the limit. Files named by the configuration (MODCOD and
//! PER tables, attenuation traces, delay files, error patterns) are parsed during validation, so a
//! malformed file is reported at load time with its path, line and reason.

use std::fmt::Display;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::Dir;

/// A configuration problem. `Display` is `<field or file[:line]>: <reason>`, the form the control
/// endpoint returns in its 400 answers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A field has a value outside its bounds or inconsistent with another field.
    #[error("{field}: {reason}")]
    Field { field: String, reason: String },
    /// A line of a data file (trace, table, delay file, error pattern) is malformed.
    #[error("{file}:{line}: {reason}")]
    File {
        file: String,
        line: usize,
        reason: String,
    },
    /// A file could not be read or written, or is empty.
    #[error("{file}: {reason}")]
    Io { file: String, reason: String },
    /// The YAML text does not parse into the configuration structure (unknown field, wrong type).
    #[error("{file}: {reason}")]
    Yaml { file: String, reason: String },
}

impl ConfigError {
    pub fn field(field: impl Into<String>, reason: impl Into<String>) -> Self {
        ConfigError::Field {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub fn file(file: &Path, line: usize, reason: impl Into<String>) -> Self {
        ConfigError::File {
            file: file.display().to_string(),
            line,
            reason: reason.into(),
        }
    }

    pub fn io(file: &Path, reason: impl Display) -> Self {
        ConfigError::Io {
            file: file.display().to_string(),
            reason: reason.to_string(),
        }
    }
}

/// Checks `lo <= v <= hi` (and that v is not NaN) for the field at `path`: binkit's range rule
/// (the same words in every binary's configuration errors) as a [`ConfigError::Field`].
pub fn check_range<T>(path: &str, v: T, lo: T, hi: T, unit: &str) -> Result<(), ConfigError>
where
    T: PartialOrd + Display + Copy,
{
    match binkit::bounds::out_of_range(v, lo, hi, unit) {
        Some(reason) => Err(ConfigError::field(path, reason)),
        None => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------------
// Top level
// ---------------------------------------------------------------------------------------------

/// The link's configuration: the random seed, the optional geometry and the two directions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LinkConfig {
    /// Seed of every random choice of the run (erasures, bit errors, reordering), per direction.
    pub seed: u64,
    /// Optional GEO geometry; gives the propagation delay of a direction without `delay_ms` /
    /// `delay_file`.
    pub geometry: Option<GeometryConfig>,
    /// Gateway -> terminal (DVB-S2 by default).
    pub forward: DirectionConfig,
    /// Terminal -> gateway (DVB-RCS2 by default).
    #[serde(rename = "return")]
    pub return_: DirectionConfig,
    /// Directory relative file paths were resolved against (the config file's directory).
    #[serde(skip)]
    pub base_dir: PathBuf,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig {
            seed: 1,
            geometry: None,
            forward: DirectionConfig::default(),
            return_: DirectionConfig::default(),
            base_dir: PathBuf::from("."),
        }
    }
}

impl LinkConfig {
    pub fn direction(&self, dir: Dir) -> &DirectionConfig {
        match dir {
            Dir::Forward => &self.forward,
            Dir::Return => &self.return_,
        }
    }

    pub fn direction_mut(&mut self, dir: Dir) -> &mut DirectionConfig {
        match dir {
            Dir::Forward => &mut self.forward,
            Dir::Return => &mut self.return_,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------------------------

/// GEO slot and the two ground stations.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GeometryConfig {
    /// Orbital slot (east positive), degrees.
    #[schemars(range(min = -180.0, max = 180.0), extend("x-unit" = "deg"))]
    pub satellite_longitude_deg: f64,
    pub gateway: GroundStation,
    pub terminal: GroundStation,
}

/// A ground station on the WGS84 ellipsoid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GroundStation {
    #[schemars(range(min = -90.0, max = 90.0), extend("x-unit" = "deg"))]
    pub lat_deg: f64,
    #[schemars(range(min = -180.0, max = 180.0), extend("x-unit" = "deg"))]
    pub lon_deg: f64,
    #[serde(default)]
    #[schemars(range(min = -500.0, max = 10000.0), extend("x-unit" = "m"))]
    pub alt_m: f64,
}

// ---------------------------------------------------------------------------------------------
// One direction
// ---------------------------------------------------------------------------------------------

/// Physical layer of a direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LinkKind {
    /// DVB-S2 BBFrames (forward default).
    Dvbs2,
    /// DVB-RCS2 bursts with an RCS2 MODCOD table (return default).
    Rcs2,
    /// A fixed bit rate, packets serialized one after the other, no MODCOD.
    Fixed,
    /// DVB-S2 BBFrames (forward only) whose fate comes from a real decoder, not a PER table:
    /// each BBFRAME encoded, modulated, passed through AWGN at the Es/N0 of its arrival and
    /// decoded (GNU Radio's transmitter and the project's receiver; emulator/CONFIG.md).
    Dvbs2Waveform,
}

/// An embedded MODCOD table of a DVB-S2 link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModcodSet {
    /// EN 302 307-1 Table 13: the 28 DVB-S2 MODCODs (ids 1-28).
    Dvbs2,
    /// The DVB-S2 MODCODs plus the 38 DVB-S2X MODCODs of EN 302 307-2 Table 20a (8APSK, 16/32/64/
    /// 128/256APSK, the finer rates, the -L constellations; ids = PLS codes 132-214).
    Dvbs2x,
}

/// DVB-S2 FECFRAME length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FrameSize {
    /// 64800 bits.
    Normal,
    /// 16200 bits.
    Short,
}

/// Where the PER curves of a link without `per_table` (or of the MODCODs its file lacks) come
/// from (`per.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PerCurves {
    /// The committed waveform calibration (GNU Radio transmitter, the product's receiver; AWGN)
    /// of the link's frame size; a MODCOD it does not have uses the waterfall (said at start).
    #[default]
    Calibrated,
    /// The assumed waterfall of `waterfall_width_db` around each MODCOD's required Es/N0.
    Waterfall,
}

/// One direction of the link: physical layer, ACM, attenuation, queue, errors, reordering, delay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DirectionConfig {
    /// Fixed one-way propagation delay, ms. Default: from `geometry` if given, else 250 ms.
    #[schemars(range(min = 0.0, max = 10000.0), extend("x-unit" = "ms"))]
    pub delay_ms: Option<f64>,
    /// OpenSAND FileDelay trace instead of a fixed delay.
    pub delay_file: Option<DelayFileConfig>,
    /// Default: `dvbs2` forward, `rcs2` return.
    pub kind: Option<LinkKind>,
    /// Default: 40e6 forward (OpenSAND's 54 MHz carrier, roll-off 0.35), 4e6 return.
    #[schemars(range(min = 1000.0, max = 1000000000.0), extend("x-unit" = "baud"))]
    pub symbol_rate_baud: Option<f64>,
    /// Roll-off factor; only gives the occupied bandwidth (the rate follows the symbol rate).
    #[schemars(range(min = 0.0, max = 1.0))]
    pub roll_off: f64,
    /// DVB-S2 pilot blocks (36 symbols every 16 slots of 90 symbols).
    pub pilots: bool,
    /// DVB-S2 FECFRAME size.
    pub frame: FrameSize,
    /// Bit rate of a `fixed` link.
    #[schemars(range(min = 1000.0, max = 100000000000.0), extend("x-unit" = "bit/s"), extend("x-when" = {"kind": ["fixed"]}))]
    pub rate_bps: Option<f64>,
    /// RCS2 burst length in symbols (the embedded table is for 536-symbol bursts).
    #[schemars(range(min = 64, max = 100000), extend("x-unit" = "symbols"))]
    pub burst_symbols: u32,
    /// MODCOD table file (`id MOD rate efficiency esn0_db`); default: the embedded table of
    /// `modcod_set` (dvbs2) or the OpenSAND RCS2 536-symbol table (rcs2).
    pub modcod_table: Option<PathBuf>,
    /// Embedded MODCOD table of a dvbs2 link without `modcod_table`: `dvbs2` (default).
    #[schemars(extend("x-when" = {"kind": ["dvbs2"]}))]
    pub modcod_set: Option<ModcodSet>,
    /// PER table file (`modcod_id,esn0_db,per`); its MODCODs override `per_curves`.
    pub per_table: Option<PathBuf>,
    /// PER curves without `per_table`: `calibrated` (default: the committed waveform calibration
    /// of `frame`, DVB-S2 MODCODs) or `waterfall` (assumed, `waterfall_width_db`).
    pub per_curves: PerCurves,
    /// Width of the assumed waterfall from PER 1e-1 to 1e-7, dB.
    #[schemars(range(min = 0.01, max = 10.0), extend("x-unit" = "dB"))]
    pub waterfall_width_db: f64,
    /// GSE label length: 0, 3 or 6 bytes.
    #[schemars(extend("enum" = [0, 3, 6]), extend("x-unit" = "bytes"))]
    pub gse_label_bytes: u8,
    pub acm: AcmConfig,
    pub uplink: HopConfig,
    pub downlink: HopConfig,
    pub queue: QueueConfig,
    pub bit_errors: BitErrorConfig,
    /// Frames the PER draw fails near their MODCOD's threshold: delivered with residual bit
    /// errors instead of erased (off when absent: every failed frame is erased).
    pub failed_frames: Option<FailedFramesConfig>,
    pub reorder: ReorderConfig,
    /// Oracle ETEN: notify the TCP sender of every data segment this direction corrupts or erases
    /// through a pinned BPF map (off when absent).
    pub oracle_eten: Option<OracleEtenConfig>,
    /// DVB-RCS2 demand-assigned capacity (return `rcs2` only): bursts go out only in the MF-TDMA
    /// timeslots the gateway grants (off when absent: bursts back to back, as before). Not
    /// printed when absent, so `--check` of a configuration without it is as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dama: Option<DamaConfig>,
    /// Several terminals on this (forward) carrier, each with its own fade, ACM loop and queue
    /// (`terminals.rs`); absent: one terminal, the link as configured. Not printed when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beam: Option<crate::terminals::BeamConfig>,
    /// The channel of a `kind: dvbs2_waveform` link (forward only): the symbol-level AWGN
    /// channel (absent, or `path: symbol`), the RF path (`path: rf`) or an SDR pair on it
    /// (`sdr`). Not printed when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-when" = {"kind": ["dvbs2_waveform"]}))]
    pub waveform: Option<WaveformChannelConfig>,
}

/// Where the frames of a `kind: dvbs2_waveform` link are carried (emulator/CONFIG.md, "PHY in
/// the loop").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WaveformPath {
    /// One perfectly timed sample per symbol, AWGN at each frame's Es/N0 (exact).
    #[default]
    Symbol,
    /// RRC pulse shaping (the direction's `roll_off`) at `sps` samples per symbol, a carrier
    /// and a sample-clock offset, timing recovery; each frame's noise is added after the front
    /// end from the frame's measured energy (timing and carrier loops see the clear sky).
    Rf,
}

/// The channel of a `kind: dvbs2_waveform` forward link: dvbs2phy's `LoopConfig::rf` under the
/// configuration's names (`roll_off` is the direction's).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WaveformChannelConfig {
    /// `symbol` (default) or `rf`.
    pub path: WaveformPath,
    /// Samples per symbol of the RF path's waveform.
    #[schemars(range(min = 2, max = 16), extend("x-unit" = "samples"))]
    pub sps: u32,
    /// Carrier frequency offset of the RF path (gr-channels), cycles per symbol.
    #[schemars(range(min = -0.01, max = 0.01), extend("x-unit" = "cycles/symbol"))]
    pub freq_offset: f64,
    /// The receiver's sample clock off the transmitter's (gr-channels), ppm.
    #[schemars(range(min = -200.0, max = 200.0), extend("x-unit" = "ppm"))]
    pub clock_ppm: f64,
    /// The band-edge FLL's loop bandwidth; 0: no FLL (the receiver alone tracks the carrier).
    #[schemars(range(min = 0.0, max = 0.05))]
    pub fll_bandwidth: f64,
    /// A SoapySDR transmitter and receiver in place of gr-channels (RF path only; untested with
    /// hardware). Not printed when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sdr: Option<SdrConfig>,
}

impl Default for WaveformChannelConfig {
    /// The symbol-level channel; on the RF path 4 samples per symbol, no offsets, no FLL.
    fn default() -> Self {
        WaveformChannelConfig {
            path: WaveformPath::Symbol,
            sps: 4,
            freq_offset: 0.0,
            clock_ppm: 0.0,
            fll_bandwidth: 0.0,
            sdr: None,
        }
    }
}

/// An SDR pair of the RF path: SoapySDR device arguments, one centre frequency, the sample rate
/// `symbol_rate_baud` x `sps`. TX wired to RX by coax through fixed attenuation, never an antenna.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SdrConfig {
    /// The transmitter's device arguments ("driver=...,serial=..."; must not be empty).
    #[serde(default)]
    pub tx_args: String,
    /// The receiver's.
    #[serde(default)]
    pub rx_args: String,
    #[schemars(range(min = 1000000.0, max = 6000000000.0), extend("x-unit" = "Hz"))]
    /// Required (absent: refused naming it).
    #[serde(default)]
    pub center_freq_hz: Option<f64>,
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 90.0), extend("x-unit" = "dB"))]
    pub tx_gain_db: f64,
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 90.0), extend("x-unit" = "dB"))]
    pub rx_gain_db: f64,
}

impl Default for DirectionConfig {
    fn default() -> Self {
        DirectionConfig {
            delay_ms: None,
            delay_file: None,
            kind: None,
            symbol_rate_baud: None,
            roll_off: 0.35,
            pilots: true,
            frame: FrameSize::Normal,
            rate_bps: None,
            burst_symbols: 536,
            modcod_table: None,
            modcod_set: None,
            per_table: None,
            per_curves: PerCurves::Calibrated,
            waterfall_width_db: 0.2,
            gse_label_bytes: 3,
            acm: AcmConfig::default(),
            uplink: HopConfig::default(),
            downlink: HopConfig::default(),
            queue: QueueConfig::default(),
            bit_errors: BitErrorConfig::default(),
            failed_frames: None,
            reorder: ReorderConfig::default(),
            oracle_eten: None,
            dama: None,
            beam: None,
            waveform: None,
        }
    }
}

/// Oracle ETEN (ETEN report (BBN TR 8333) section 2, the report's upper bound): for every IPv4 TCP segment with payload
/// that this direction corrupts or erases, the emulator writes a notice into the sender host's
/// BPF map at once, without delay or loss (docs/emulator-contract.md "Oracle ETEN").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OracleEtenConfig {
    /// Absolute path of the pinned map in a bpffs mount (an LRU hash, 16-byte key and value).
    /// Not joined to the configuration's directory: a pin path is absolute by nature.
    pub map_pin: PathBuf,
}

/// OpenSAND FileDelay: lines `<uint tick> <ms>`, tick = `refresh_period_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelayFileConfig {
    pub path: PathBuf,
    #[serde(default = "default_refresh_period_ms")]
    #[schemars(range(min = 1, max = 3600000), extend("x-unit" = "ms"))]
    pub refresh_period_ms: u64,
    #[serde(default, rename = "loop")]
    pub loop_: bool,
}

fn default_refresh_period_ms() -> u64 {
    1000
}

/// How the transmitter chooses its MODCOD.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AcmMode {
    /// Adaptive: from the receiver's Es/N0 reports (OpenSAND rule + margin + hysteresis).
    Acm,
    /// Constant: `acm.modcod`.
    Ccm,
    /// Variable: frames cycle through `acm.vcm_modcods`.
    Vcm,
}

/// ACM loop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AcmConfig {
    pub mode: AcmMode,
    /// The receiver reports its Es/N0 every refresh_ms (OpenSAND acm_refresh, default 1000 ms).
    #[schemars(range(min = 1, max = 600000), extend("x-unit" = "ms"))]
    pub refresh_ms: u64,
    /// Pick the MODCOD with the highest required Es/N0 <= reported - margin_db.
    #[schemars(range(min = 0.0, max = 20.0), extend("x-unit" = "dB"))]
    pub margin_db: f64,
    /// Step up only when reported - margin - hysteresis still supports the higher MODCOD.
    #[schemars(range(min = 0.0, max = 10.0), extend("x-unit" = "dB"))]
    pub hysteresis_db: f64,
    /// CCM MODCOD id.
    #[schemars(extend("x-when" = {"mode": ["ccm"]}))]
    pub modcod: Option<u32>,
    /// VCM cycle of MODCOD ids (one per frame, in order, repeating).
    #[schemars(length(max = 1024), extend("x-when" = {"mode": ["vcm"]}))]
    pub vcm_modcods: Vec<u32>,
}

impl Default for AcmConfig {
    fn default() -> Self {
        AcmConfig {
            mode: AcmMode::Acm,
            refresh_ms: 1000,
            margin_db: 0.0,
            hysteresis_db: 0.0,
            modcod: None,
            vcm_modcods: Vec::new(),
        }
    }
}

/// One hop (uplink = ground to satellite, downlink = satellite to ground) of a direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HopConfig {
    /// C/N of the hop without attenuation, dB (OpenSAND clear_sky, default 20).
    #[schemars(range(min = -20.0, max = 60.0), extend("x-unit" = "dB"))]
    pub clear_sky_db: f64,
    pub attenuation: AttenuationConfig,
    /// ITU-R P.618 sky-noise rise under rain (downlink only).
    pub sky_noise: SkyNoiseConfig,
}

impl Default for HopConfig {
    fn default() -> Self {
        HopConfig {
            clear_sky_db: 20.0,
            attenuation: AttenuationConfig::default(),
            sky_noise: SkyNoiseConfig::default(),
        }
    }
}

/// Attenuation source kind (OpenSAND plugins Ideal, File, On/Off, Triangular).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttenuationKind {
    Constant,
    File,
    OnOff,
    Triangular,
}

/// Attenuation source of a hop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AttenuationConfig {
    #[serde(rename = "type")]
    pub kind: AttenuationKind,
    /// `constant`: attenuation, dB.
    #[schemars(range(min = 0.0, max = 100.0), extend("x-unit" = "dB"), extend("x-when" = {"type": ["constant"]}))]
    pub value_db: f64,
    /// `file`: trace `<tick> <dB>`.
    #[schemars(extend("x-when" = {"type": ["file"]}))]
    pub file: Option<PathBuf>,
    /// `file`: restart at tick 0 after the last line (else hold the last value).
    #[serde(rename = "loop")]
    #[schemars(extend("x-when" = {"type": ["file"]}))]
    pub loop_: bool,
    /// Length of one tick, ms. Default: `acm.refresh_ms` (as OpenSAND).
    #[schemars(range(min = 1, max = 3600000), extend("x-unit" = "ms"))]
    pub tick_ms: Option<u64>,
    /// `on_off`: ticks at `amplitude_db`.
    #[schemars(range(min = 0, max = 1000000000), extend("x-unit" = "ticks"), extend("x-when" = {"type": ["on_off"]}))]
    pub on_ticks: u64,
    /// `on_off`: ticks at 0 dB (the cycle starts with them).
    #[schemars(range(min = 0, max = 1000000000), extend("x-unit" = "ticks"), extend("x-when" = {"type": ["on_off"]}))]
    pub off_ticks: u64,
    /// `on_off`: attenuation while on, dB.
    #[schemars(range(min = 0.0, max = 100.0), extend("x-unit" = "dB"), extend("x-when" = {"type": ["on_off"]}))]
    pub amplitude_db: f64,
    /// `triangular`: dB per tick.
    #[schemars(range(min = 0.0, max = 100.0), extend("x-unit" = "dB/tick"), extend("x-when" = {"type": ["triangular"]}))]
    pub slope_db_per_tick: f64,
    /// `triangular`: period in ticks (up for half, down for half).
    #[schemars(range(min = 1, max = 1000000000), extend("x-unit" = "ticks"), extend("x-when" = {"type": ["triangular"]}))]
    pub period_ticks: u64,
}

impl Default for AttenuationConfig {
    fn default() -> Self {
        AttenuationConfig {
            kind: AttenuationKind::Constant,
            value_db: 0.0,
            file: None,
            loop_: false,
            tick_ms: None,
            on_ticks: 10,
            off_ticks: 10,
            amplitude_db: 0.0,
            slope_db_per_tick: 0.1,
            period_ticks: 100,
        }
    }
}

/// ITU-R P.618 downlink noise rise: T_sky(A) = Tm (1 - 10^(-A/10)) added to the clear-sky
/// system noise temperature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SkyNoiseConfig {
    pub enabled: bool,
    /// Clear-sky system noise temperature of the receiver, K.
    #[schemars(range(min = 10.0, max = 5000.0), extend("x-unit" = "K"))]
    pub system_noise_temp_k: f64,
    /// Mean radiating temperature of the rain medium Tm, K.
    #[schemars(range(min = 200.0, max = 350.0), extend("x-unit" = "K"))]
    pub medium_temp_k: f64,
}

impl Default for SkyNoiseConfig {
    fn default() -> Self {
        SkyNoiseConfig {
            enabled: false,
            system_noise_temp_k: 290.0,
            medium_temp_k: 275.0,
        }
    }
}

/// Queue limits (a packet is dropped if either would be exceeded), and optional per-class queues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// Packets waiting for a frame (all classes together).
    #[schemars(range(min = 1, max = 10000000), extend("x-unit" = "packets"))]
    pub limit_packets: u64,
    /// Bytes waiting for a frame (all classes together).
    #[schemars(range(min = 64, max = 17_179_869_184_u64), extend("x-unit" = "bytes"))]
    pub limit_bytes: u64,
    /// Per-class queues, served by strict priority between priority levels and by deficit round
    /// robin (weights) within a level. Empty: one drop-tail FIFO.
    #[schemars(length(max = 16))]
    pub classes: Vec<ClassConfig>,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            limit_packets: 1000,
            limit_bytes: 1_500_000,
            classes: Vec::new(),
        }
    }
}

/// Most classes a direction may have.
pub const MAX_CLASSES: usize = 16;

/// One traffic class of the queue. A packet belongs to the first class (in list order) whose
/// `dscp` list holds its DSCP or one of whose `flows` rules it matches; a packet no class selects
/// goes to the default class, the one class with neither `dscp` nor `flows`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Class name (status and metric label): 1-32 characters of a-z, 0-9, `_`, `-`; unique.
    #[schemars(length(min = 1, max = 32), regex(pattern = r"^[a-z0-9_-]+$"))]
    pub name: String,
    /// DSCP values (0-63, the IPv4 TOS / IPv6 traffic class >> 2) that select this class.
    #[serde(default)]
    #[schemars(length(max = 64), inner(range(min = 0, max = 63)))]
    pub dscp: Vec<u8>,
    /// Flow rules that select this class (any one matching is enough).
    #[serde(default)]
    #[schemars(length(max = 64))]
    pub flows: Vec<FlowRule>,
    /// Strict priority level: 0 is served first; a level is served only while every lower
    /// number is empty.
    #[serde(default)]
    #[schemars(range(min = 0, max = 7))]
    pub priority: u8,
    /// Share among the classes of the same priority level (deficit round robin: a quantum of
    /// weight x 1518 bytes per round).
    #[serde(default = "default_weight")]
    #[schemars(range(min = 1, max = 1000))]
    pub weight: u32,
    /// Packets this class may hold (default: the queue's `limit_packets`).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10000000), extend("x-unit" = "packets"))]
    pub limit_packets: Option<u64>,
    /// Bytes this class may hold (default: the queue's `limit_bytes`).
    #[serde(default)]
    #[schemars(range(min = 64, max = 17_179_869_184_u64), extend("x-unit" = "bytes"))]
    pub limit_bytes: Option<u64>,
}

fn default_weight() -> u32 {
    1
}

/// A flow rule: every field given must match (IPv4, or IPv6 without extension headers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowRule {
    /// IP protocol number (1 ICMP, 6 TCP, 17 UDP); any protocol when absent.
    #[serde(default)]
    #[schemars(range(min = 0, max = 255))]
    pub protocol: Option<u8>,
    /// TCP or UDP source port.
    #[serde(default)]
    #[schemars(range(min = 0, max = 65535))]
    pub src_port: Option<u16>,
    /// TCP or UDP destination port.
    #[serde(default)]
    #[schemars(range(min = 0, max = 65535))]
    pub dst_port: Option<u16>,
}

/// Bit-error model of delivered packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BitErrorModel {
    None,
    Uniform,
    GilbertElliott,
    Pattern,
}

/// What happens to a packet with bit errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorruptionAction {
    /// Deliver it with the bits flipped.
    Deliver,
    /// Drop it (LossCause::Corruption).
    Drop,
}

/// Bit errors on delivered packets (bytes after the Ethernet header only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BitErrorConfig {
    pub model: BitErrorModel,
    /// `uniform`: bit error rate.
    #[schemars(range(min = 0.0, max = 0.5), extend("x-when" = {"model": ["uniform"]}))]
    pub ber: f64,
    /// `gilbert_elliott`: BER in the good state.
    #[schemars(range(min = 0.0, max = 0.5), extend("x-when" = {"model": ["gilbert_elliott"]}))]
    pub good_ber: f64,
    /// `gilbert_elliott`: BER in the bad state.
    #[schemars(range(min = 0.0, max = 0.5), extend("x-when" = {"model": ["gilbert_elliott"]}))]
    pub bad_ber: f64,
    /// `gilbert_elliott`: mean sojourn in the good state, bits.
    #[schemars(range(min = 1.0, max = 1000000000000000.0), extend("x-unit" = "bits"), extend("x-when" = {"model": ["gilbert_elliott"]}))]
    pub mean_good_bits: f64,
    /// `gilbert_elliott`: mean sojourn in the bad state, bits.
    #[schemars(range(min = 1.0, max = 1000000000000000.0), extend("x-unit" = "bits"), extend("x-when" = {"model": ["gilbert_elliott"]}))]
    pub mean_bad_bits: f64,
    /// `pattern`: error-pattern file to replay.
    #[schemars(extend("x-when" = {"model": ["pattern"]}))]
    pub pattern_file: Option<PathBuf>,
    /// Record the errors generated (any model) to this pattern file.
    pub record_file: Option<PathBuf>,
    pub action: CorruptionAction,
}

impl Default for BitErrorConfig {
    fn default() -> Self {
        BitErrorConfig {
            model: BitErrorModel::None,
            ber: 0.0,
            good_ber: 0.0,
            bad_ber: 1e-2,
            mean_good_bits: 1e7,
            mean_bad_bits: 1e3,
            pattern_file: None,
            record_file: None,
            action: CorruptionAction::Deliver,
        }
    }
}

/// A frame that fails decoding close to its MODCOD's threshold: the LDPC/BCH decoder gave up on
/// a frame whose bits are mostly right, so the receiver passes its packets on with bit errors
/// (whole packets carry no CRC of their own in GSE). Further below the threshold the frame is lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct FailedFramesConfig {
    /// A failed frame whose Es/N0 is at most this far below its MODCOD's required Es/N0 is
    /// delivered with bit errors; further below it is erased. dB.
    #[schemars(range(min = 0.0, max = 10.0), extend("x-unit" = "dB"))]
    pub corrupt_within_db: f64,
    /// Bit error rate of the packets of such a frame (> 2e-4 when BCH, which corrects 8-12
    /// errors per 64800-bit frame, failed too).
    #[schemars(range(min = 0.0, max = 0.5))]
    pub ber: f64,
}

impl Default for FailedFramesConfig {
    fn default() -> Self {
        FailedFramesConfig {
            corrupt_within_db: 0.2,
            ber: 1e-3,
        }
    }
}

/// Jitter distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JitterDistribution {
    /// Uniform in [-jitter_ms, +jitter_ms].
    Uniform,
    /// Normal, mean 0, standard deviation jitter_ms, clipped to +-3 sigma.
    Normal,
}

/// Reordering (Yang's two-path model plus jitter). Off when probability and jitter are 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReorderConfig {
    /// Probability that a packet takes the second (longer) path.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub probability: f64,
    /// Extra delay of the second path, ms.
    #[schemars(range(min = 0.0, max = 10000.0), extend("x-unit" = "ms"))]
    pub extra_delay_ms: f64,
    /// Per-packet jitter, ms.
    #[schemars(range(min = 0.0, max = 10000.0), extend("x-unit" = "ms"))]
    pub jitter_ms: f64,
    pub jitter_distribution: JitterDistribution,
}

impl Default for ReorderConfig {
    fn default() -> Self {
        ReorderConfig {
            probability: 0.0,
            extra_delay_ms: 0.0,
            jitter_ms: 0.0,
            jitter_distribution: JitterDistribution::Uniform,
        }
    }
}

impl ReorderConfig {
    pub fn enabled(&self) -> bool {
        (self.probability > 0.0 && self.extra_delay_ms > 0.0) || self.jitter_ms > 0.0
    }
}

/// DVB-RCS2 MF-TDMA return link with demand-assigned capacity (DAMA) for the terminal
/// (ETSI EN 301 545-2, the DVB-RCS2 lower layers: CRA, RBDC and VBDC capacity categories, free
/// capacity assignment). Each timeslot carries one burst of `burst_symbols` at the terminal's
/// MODCOD (its payload from the RCS2 waveform table, `modcod_table`); the terminal sends on one
/// carrier at a time, so it can be granted at most `timeslots_per_frame` slots per frame.
/// Defaults are OpenSAND's where it has them (emulator/CONFIG.md, "DAMA").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct DamaConfig {
    /// Carriers of the MF-TDMA superframe (the pool of a future multi-terminal beam).
    #[schemars(range(min = 1, max = 4096))]
    pub carriers: u32,
    /// Timeslots per frame on each carrier; a slot must hold one burst.
    #[schemars(range(min = 1, max = 100000))]
    pub timeslots_per_frame: u32,
    /// Frame duration, ms (OpenSAND's return frame duration, `links/return_duration`: 26.5 ms).
    #[schemars(range(min = 0.1, max = 1000.0), extend("x-unit" = "ms"))]
    pub frame_duration_ms: f64,
    /// Frames per superframe (grants are computed once per superframe).
    #[schemars(range(min = 1, max = 1000))]
    pub frames_per_superframe: u32,
    /// Constant rate assignment, kbit/s (granted every superframe without request).
    #[schemars(range(min = 0.0, max = 10000000.0), extend("x-unit" = "kbit/s"))]
    pub cra_kbps: f64,
    /// Largest RBDC rate the terminal may be granted, kbit/s (OpenSAND's terminal `max_rbdc`,
    /// `rbdc_max` in current versions: 5120); 0: no RBDC.
    #[schemars(range(min = 0.0, max = 10000000.0), extend("x-unit" = "kbit/s"))]
    pub rbdc_max_kbps: f64,
    /// An RBDC request holds this many superframes after it reaches the gateway unless renewed.
    /// Default 39, OpenSAND's: since 2014 it derives the timeout as the capacity-request (sync)
    /// period in frames plus one, round(1000 ms / 26.5 ms) + 1 (BlockDvbTal::initDama, one frame
    /// per superframe); its earlier configurations set `rbdc_timeout` 12.
    #[schemars(range(min = 1, max = 100000), extend("x-unit" = "superframes"))]
    pub rbdc_timeout_superframes: u32,
    /// Largest VBDC volume one request may ask for, bytes; 0: no VBDC.
    #[schemars(range(min = 0, max = 1000000000), extend("x-unit" = "bytes"))]
    pub vbdc_max_bytes: u64,
    /// Superframes from a request leaving the terminal to the grant it causes being used: the
    /// request's trip to the gateway, the grant's (TBTP) trip back, plus
    /// `scheduling_delay_superframes`. Default: ceil((return + forward delay) / superframe) +
    /// `scheduling_delay_superframes`.
    #[schemars(range(min = 1, max = 100000), extend("x-unit" = "superframes"))]
    pub request_delay_superframes: Option<u32>,
    /// Superframes the gateway's scheduler takes after a request arrives (OpenSAND computes the
    /// TBTP at the next superframe tick: 1).
    #[schemars(range(min = 0, max = 1000), extend("x-unit" = "superframes"))]
    pub scheduling_delay_superframes: u32,
    /// Free capacity assignment: slots nobody asked for go to the terminal.
    pub free_capacity: bool,
    /// Contention access for requests (slotted ALOHA); absent: every request reaches the
    /// gateway. Not printed when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contention: Option<ContentionConfig>,
}

/// Contention access for capacity requests (`return.dama.contention`, DVB-RCS2's random access
/// in slotted ALOHA). A terminal that had no granted slot in the last superframe has no burst to
/// carry its request in-band: it sends it in one of `slots_per_superframe` contention slots,
/// picked at random. On a return beam the emulated terminals contending in the same superframe
/// share these slots; terminals outside the emulated set send `background_load` requests per
/// slot on average (Poisson). The request gets through only alone in its slot: with n emulated
/// terminals contending, with probability (1 - 1/slots)^(n-1) x exp(-background_load); after a
/// collision the terminal waits a uniform 0..=`backoff_superframes` superframes before it tries
/// again. The gateway's answer is the grant, so a lost request costs its round trip before the
/// terminal can tell; here it tries again at its next superframe (after the backoff), as a
/// terminal without a grant does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ContentionConfig {
    /// Contention slots per superframe (each request by contention takes one, shared by the
    /// beam's terminals).
    #[schemars(range(min = 1, max = 1000))]
    pub slots_per_superframe: u32,
    /// Requests per contention slot of terminals outside the emulated set (offered load G; 0:
    /// collisions between the emulated terminals only).
    #[schemars(range(min = 0.0, max = 20.0))]
    pub background_load: f64,
    /// Largest random wait after a collision, superframes.
    #[schemars(range(min = 0, max = 1000), extend("x-unit" = "superframes"))]
    pub backoff_superframes: u32,
}

impl Default for ContentionConfig {
    fn default() -> Self {
        ContentionConfig {
            slots_per_superframe: 4,
            background_load: 0.5,
            backoff_superframes: 3,
        }
    }
}

impl Default for DamaConfig {
    fn default() -> Self {
        DamaConfig {
            carriers: 1,
            timeslots_per_frame: 180,
            frame_duration_ms: 26.5,
            frames_per_superframe: 1,
            cra_kbps: 0.0,
            rbdc_max_kbps: 5120.0,
            rbdc_timeout_superframes: 39,
            vbdc_max_bytes: 0,
            request_delay_superframes: None,
            scheduling_delay_superframes: 1,
            free_capacity: false,
            contention: None,
        }
    }
}

impl DirectionConfig {
    /// The resolved link kind, as a frame format: `dvbs2_waveform` builds the frames of
    /// `dvbs2` (same MODCODs, shapes and packing) and is told apart by [`Self::is_waveform`].
    pub fn link_kind(&self) -> LinkKind {
        match self.kind {
            Some(LinkKind::Dvbs2Waveform) | None => LinkKind::Dvbs2,
            Some(k) => k,
        }
    }

    /// Whether a decoder, not a PER table, decides each frame (`kind: dvbs2_waveform`).
    pub fn is_waveform(&self) -> bool {
        self.kind == Some(LinkKind::Dvbs2Waveform)
    }
}

/// Default one-way delay without geometry or delay settings: 250 ms (OpenSAND's 125 ms per hop).
pub const DEFAULT_DELAY_MS: f64 = 250.0;
