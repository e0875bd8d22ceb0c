//! The emulator's configuration file (one YAML file, documented in emulator/CONFIG.md):
//! structures with their defaults, path resolution and validation.
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

/// Checks `lo <= v <= hi` (and that v is finite) for the field at `path`.
pub(crate) fn check_range<T>(path: &str, v: T, lo: T, hi: T, unit: &str) -> Result<(), ConfigError>
where
    T: PartialOrd + Display + Copy,
{
    // partial_cmp is None for NaN (works for integers and floats).
    if v.partial_cmp(&lo).is_none() || v < lo || v > hi {
        return Err(ConfigError::field(
            path,
            format!("value {v} is outside the allowed range [{lo}, {hi}]{unit}"),
        ));
    }
    Ok(())
}

fn check_f64(path: &str, v: f64, lo: f64, hi: f64, unit: &str) -> Result<(), ConfigError> {
    if !v.is_finite() {
        return Err(ConfigError::field(
            path,
            format!("value {v} is not a finite number"),
        ));
    }
    check_range(path, v, lo, hi, unit)
}

// ---------------------------------------------------------------------------------------------
// Top level
// ---------------------------------------------------------------------------------------------

/// The whole emulator configuration: one YAML file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EmulatorConfig {
    /// Seed of every random choice of the run (erasures, bit errors, reordering), per direction.
    pub seed: u64,
    pub ports: PortsConfig,
    pub telemetry: TelemetryConfig,
    pub control: ControlConfig,
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
    #[schemars(skip)]
    pub base_dir: PathBuf,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            seed: 1,
            ports: PortsConfig::default(),
            telemetry: TelemetryConfig::default(),
            control: ControlConfig::default(),
            geometry: None,
            forward: DirectionConfig::default(),
            return_: DirectionConfig::default(),
            base_dir: PathBuf::from("."),
        }
    }
}

/// The two ports of the emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PortsConfig {
    /// Gateway side (forward packets are read here, return packets written here).
    pub gw: PortConfig,
    /// Terminal side.
    pub st: PortConfig,
}

impl Default for PortsConfig {
    fn default() -> Self {
        PortsConfig {
            gw: PortConfig {
                kind: PortKind::AfPacket,
                interface: "emu-gw".into(),
            },
            st: PortConfig {
                kind: PortKind::AfPacket,
                interface: "emu-st".into(),
            },
        }
    }
}

/// How a port is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PortKind {
    /// An existing interface (veth end, NIC) opened with a packet socket.
    AfPacket,
    /// A TAP device (created if missing).
    Tap,
}

/// One port: `{kind: af_packet|tap, interface: NAME}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PortConfig {
    #[serde(default = "default_port_kind")]
    pub kind: PortKind,
    #[schemars(length(min = 1, max = 15), regex(pattern = r"^[^/ \x00]+$"))]
    pub interface: String,
}

fn default_port_kind() -> PortKind {
    PortKind::AfPacket
}

/// Which per-packet events the telemetry stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EventLevel {
    None,
    Losses,
    All,
}

/// Telemetry stream (Unix stream socket, newline-delimited JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TelemetryConfig {
    pub socket: PathBuf,
    #[schemars(range(min = 10, max = 60000), extend("x-unit" = "ms"))]
    pub period_ms: u64,
    pub events: EventLevel,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        TelemetryConfig {
            socket: PathBuf::from("/run/satlab/emulator-telemetry.sock"),
            period_ms: 100,
            events: EventLevel::Losses,
        }
    }
}

/// Control HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ControlConfig {
    pub listen: String,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            listen: "127.0.0.1:8781".into(),
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
    /// MODCOD table file (`id MOD rate efficiency esn0_db`); default: embedded EN 302 307-1
    /// Table 13 (dvbs2) or the OpenSAND RCS2 536-symbol table (rcs2).
    pub modcod_table: Option<PathBuf>,
    /// PER table file (`modcod_id,esn0_db,per`); default: waterfall derived from the thresholds.
    pub per_table: Option<PathBuf>,
    /// Width of the default waterfall from PER 1e-1 to 1e-7, dB.
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
    pub reorder: ReorderConfig,
    /// Oracle ETEN: notify the TCP sender of every data segment this direction corrupts or erases
    /// through a pinned BPF map (off when absent).
    pub oracle_eten: Option<OracleEtenConfig>,
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
            per_table: None,
            waterfall_width_db: 0.2,
            gse_label_bytes: 3,
            acm: AcmConfig::default(),
            uplink: HopConfig::default(),
            downlink: HopConfig::default(),
            queue: QueueConfig::default(),
            bit_errors: BitErrorConfig::default(),
            reorder: ReorderConfig::default(),
            oracle_eten: None,
        }
    }
}

/// Oracle ETEN (eten.md §1, the report's upper bound): for every IPv4 TCP segment with payload
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

/// Drop-tail queue limits (a packet is dropped if either would be exceeded).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    #[schemars(range(min = 1, max = 10000000), extend("x-unit" = "packets"))]
    pub limit_packets: u64,
    #[schemars(range(min = 64, max = 17_179_869_184_u64), extend("x-unit" = "bytes"))]
    pub limit_bytes: u64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            limit_packets: 1000,
            limit_bytes: 1_500_000,
        }
    }
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

/// The configuration's JSON Schema (draft 2020-12), pretty-printed: doc comments are the
/// descriptions, `minimum`/`maximum` the bounds `validate()` checks (kept equal by hand; a test
/// below and the API's drift test compare them), `x-unit` the unit and `x-when` the values of a
/// sibling kind field (`type`, `model`, `mode`, `kind`) under which a field is used.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(EmulatorConfig);
    serde_json::to_string_pretty(&schema).expect("a JSON Schema serializes")
}

// ---------------------------------------------------------------------------------------------
// Loading, resolution, validation
// ---------------------------------------------------------------------------------------------

/// Default one-way delay without geometry or delay settings: 250 ms (OpenSAND's 125 ms per hop).
pub const DEFAULT_DELAY_MS: f64 = 250.0;

impl EmulatorConfig {
    /// Reads, parses and validates a configuration file; relative paths in it resolve against the
    /// file's directory.
    pub fn from_yaml_file(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::io(path, e))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let base = if base.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            base
        };
        Self::parse(&text, &path.display().to_string(), base)
    }

    /// Parses and validates YAML text; relative paths resolve against the current directory.
    pub fn from_yaml_str(s: &str) -> Result<Self, ConfigError> {
        Self::parse(s, "<config>", PathBuf::from("."))
    }

    fn parse(text: &str, name: &str, base: PathBuf) -> Result<Self, ConfigError> {
        let mut cfg: EmulatorConfig = if text.trim().is_empty() {
            EmulatorConfig::default()
        } else {
            serde_yaml::from_str(text).map_err(|e| ConfigError::Yaml {
                file: name.to_string(),
                reason: e.to_string(),
            })?
        };
        cfg.base_dir = base;
        cfg.resolve();
        cfg.validate()?;
        Ok(cfg)
    }

    /// Fills per-direction defaults and makes relative paths absolute-ish (joined to base_dir).
    fn resolve(&mut self) {
        let base = self.base_dir.clone();
        let join = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        join(&mut self.telemetry.socket);
        for dir in [Dir::Forward, Dir::Return] {
            let d = self.direction_mut(dir);
            if d.kind.is_none() {
                d.kind = Some(match dir {
                    Dir::Forward => LinkKind::Dvbs2,
                    Dir::Return => LinkKind::Rcs2,
                });
            }
            if d.symbol_rate_baud.is_none() && d.kind != Some(LinkKind::Fixed) {
                d.symbol_rate_baud = Some(match dir {
                    Dir::Forward => 40e6,
                    Dir::Return => 4e6,
                });
            }
            let refresh = d.acm.refresh_ms;
            for hop in [&mut d.uplink, &mut d.downlink] {
                if hop.attenuation.tick_ms.is_none() {
                    hop.attenuation.tick_ms = Some(refresh);
                }
                if let Some(p) = hop.attenuation.file.as_mut() {
                    join(p);
                }
            }
            if let Some(f) = d.delay_file.as_mut() {
                join(&mut f.path);
            }
            for p in [&mut d.modcod_table, &mut d.per_table]
                .into_iter()
                .flatten()
            {
                join(p);
            }
            let be = &mut d.bit_errors;
            for p in [&mut be.pattern_file, &mut be.record_file]
                .into_iter()
                .flatten()
            {
                join(p);
            }
        }
    }

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

    /// Checks every bound and loads every referenced file once (errors name file and line).
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, p) in [("ports.gw", &self.ports.gw), ("ports.st", &self.ports.st)] {
            let n = p.interface.len();
            if n == 0 || n > 15 || p.interface.contains(['/', ' ', '\0']) {
                return Err(ConfigError::field(
                    format!("{name}.interface"),
                    format!(
                        "{:?} is not a valid interface name (1 to 15 characters, no '/' or spaces)",
                        p.interface
                    ),
                ));
            }
        }
        if self.ports.gw.interface == self.ports.st.interface {
            return Err(ConfigError::field(
                "ports.st.interface",
                "must differ from ports.gw.interface",
            ));
        }
        check_range(
            "telemetry.period_ms",
            self.telemetry.period_ms,
            10,
            60_000,
            " ms",
        )?;
        if self.control.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::field(
                "control.listen",
                format!(
                    "{:?} is not an address:port such as 127.0.0.1:8781",
                    self.control.listen
                ),
            ));
        }
        if let Some(g) = &self.geometry {
            crate::geometry::validate(g)?;
        }
        for dir in [Dir::Forward, Dir::Return] {
            self.direction(dir)
                .validate(dir.as_str(), self.geometry.is_some())?;
            // Building the model loads every file and checks cross-field consistency.
            crate::direction::LinkSetup::build(self, dir)?;
        }
        Ok(())
    }
}

impl DirectionConfig {
    /// The resolved link kind.
    pub fn link_kind(&self) -> LinkKind {
        self.kind.unwrap_or(LinkKind::Dvbs2)
    }

    fn validate(&self, p: &str, has_geometry: bool) -> Result<(), ConfigError> {
        let _ = has_geometry;
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
        if ![0u8, 3, 6].contains(&self.gse_label_bytes) {
            return Err(ConfigError::field(
                format!("{p}.gse_label_bytes"),
                format!("value {} is not one of 0, 3, 6", self.gse_label_bytes),
            ));
        }
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
            AcmMode::Ccm if a.modcod.is_none() => {
                return Err(ConfigError::field(
                    format!("{p}.acm.modcod"),
                    "required when acm.mode is ccm (a MODCOD id of the table)",
                ))
            }
            AcmMode::Vcm if a.vcm_modcods.is_empty() || a.vcm_modcods.len() > 1024 => {
                return Err(ConfigError::field(
                    format!("{p}.acm.vcm_modcods"),
                    "needs 1 to 1024 MODCOD ids when acm.mode is vcm",
                ))
            }
            _ => {}
        }
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
        )?;
        Ok(())
    }
}

impl AttenuationConfig {
    fn validate(&self, p: &str) -> Result<(), ConfigError> {
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
