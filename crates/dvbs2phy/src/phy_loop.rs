//! PHY in the loop: BBFRAMEs through GNU Radio's DVB-S2 transmitter and AWGN channel (the
//! flowgraph crates/dvbs2phy/gr/dvbs2_loop.py, run with Debian's /usr/bin/python3) and back
//! through this crate's receiver.
//!
//! The flowgraph is one process per MODCOD, frame size, pilots and Es/N0, kept running; frames go
//! to it through a pipe (its fd 3; K_bch bytes, one bit each) and its IQ comes back over a ZeroMQ PULL
//! socket as one stream of complex64 samples, in input order. Frame k of the output is the k-th
//! frame pushed: `PhyLoop` keeps the pushed frames in a queue, finds the first PLHEADER and
//! cuts the stream into PLFRAMEs, checking every frame's successor's PLHEADER: where samples
//! were lost (an SDR underrun) it finds the next PLHEADER and tells by the decoded BBFRAME which
//! pushed frame the stream is at (`settle`). Up to `in_flight` frames are pushed ahead, so the flowgraph
//! encodes the next frames while this thread decodes (the transmitter is several times faster
//! than the decoder, which is then never idle). The channel's resampler holds a frame's last
//! samples until more input comes: when the IQ stops while frames are outstanding, filler frames
//! (zero BBFRAMEs, never decoded) push them out.
//!
//! Per-frame Es/N0 (`LoopConfig::per_frame_esn0`, the emulator's `kind: dvbs2_waveform`): the
//! flowgraph runs at `awgn::BASE_ESN0_DB` and each frame's noise is topped up here to the Es/N0
//! `submit_at` gave it, exactly (crate::awgn says why); the receiver's LLRs use that frame's N0.
//! Behind the RF path (or an SDR) the front end's gain is unknown: the frame's energy and its
//! present noise are measured on its known symbols and the noise is topped up after the front
//! end (`PhyLoop::present_noise`, an approximation: it says which).
//!
//! RF path (`LoopConfig::rf`): the symbols pulse-shaped to a waveform, the channel at the sample
//! rate with a carrier and a sample-clock offset, and GNU Radio's timing recovery back to one
//! sample per symbol (gr/rf_path.py); the receiver estimates the noise and tracks the carrier
//! frequency (`Config::track_frequency`), as it would behind a real tuner.
//!
//! Continuous transmission (`LoopConfig::continuous`, always with an SDR pair): the flowgraph
//! sends a dummy PLFRAME (EN 302 307-1 5.5.1, `plframe::dummy_plframe`) whenever no frame is
//! ready, as a real modulator does and an SDR sink needs; the loop tells a dummy's PLHEADER from
//! a data frame's by which correlates better and skips it, and after lost samples searches for
//! a chain of PLHEADERs of either kind (`find_any_header`).
//!
//! ZeroMQ: the `zmq` crate (0.9), the binding of libzmq, the library gr-zeromq uses; 0.9 links
//! Debian's libzmq (libzmq3-dev) where 0.10 compiles its own copy. The pure-Rust `zeromq` crate
//! would bring an async runtime into a crate that is a plain loop.

use std::collections::VecDeque;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crate::awgn::{self, Awgn};
use crate::constellation::C64;
use crate::cpu::thread_cpu_s;
use crate::iq;
use crate::modcod::ModCod;
use crate::plframe::{self, DUMMY_SYMBOLS};
use crate::receiver::{Config, Decoder, Delivered, Receiver};

/// Debian's python with gnuradio (the only interpreter that imports it).
pub const GR_PYTHON: &str = "/usr/bin/python3";

/// How long the IQ may stop, frames outstanding, before a filler frame is pushed.
const FLUSH_AFTER: Duration = Duration::from_millis(20);

/// The PLHEADER quality (`Receiver::header_quality`) below which the frame at the front is
/// suspect and the stream is searched again. Noise alone scores 0.13 +- 0.05, a PLHEADER
/// 1/sqrt(1 + N0) (0.58 at -3 dB, 0.30 at -10 dB): a suspect header that the search finds where
/// it was is kept (a false alarm costs one search, never a frame).
const HEADER_QUALITY: f64 = 0.3;

/// What went wrong, naming the part that failed.
#[derive(Debug, Clone, PartialEq)]
pub enum LoopError {
    /// The configuration asks for something the loop cannot do (a MODCOD without this frame
    /// size, an Es/N0 out of range, a BBFRAME of the wrong length).
    Unsupported(String),
    /// The flowgraph did not start, exited or stopped sending IQ.
    FlowgraphNotRunning(String),
    /// A ZeroMQ socket failed.
    Zmq(String),
    /// No PLHEADER found in the IQ.
    Sync(String),
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoopError::Unsupported(m) => write!(f, "unsupported: {m}"),
            LoopError::FlowgraphNotRunning(m) => write!(f, "GNU Radio flowgraph not running: {m}"),
            LoopError::Zmq(m) => write!(f, "ZeroMQ: {m}"),
            LoopError::Sync(m) => write!(f, "synchronisation: {m}"),
        }
    }
}

impl std::error::Error for LoopError {}

fn zmq_err(what: &str) -> impl Fn(zmq::Error) -> LoopError + '_ {
    move |e| LoopError::Zmq(format!("{what}: {e}"))
}

/// A loop's settings.
#[derive(Debug, Clone)]
pub struct LoopConfig {
    pub modcod: ModCod,
    /// The channel's Es/N0, dB (-10 to 40); also the receiver's LLR scaling. With
    /// `per_frame_esn0`, the Es/N0 of the frames `submit` pushes.
    pub esn0_db: f64,
    /// Each frame at its own Es/N0 (`submit_at`): the flowgraph runs at `awgn::BASE_ESN0_DB`
    /// and the rest of the frame's noise is added on this side.
    pub per_frame_esn0: bool,
    /// The channel's noise seed.
    pub seed: u32,
    pub goldcode: u32,
    pub max_iterations: usize,
    pub decoder: Decoder,
    /// Frames pushed ahead of the decoder (1-64).
    pub in_flight: usize,
    /// Also write the IQ to SIGMF.sigmf-data / SIGMF.sigmf-meta.
    pub sigmf: Option<PathBuf>,
    /// The RF path instead of the symbol-level channel (needs pilots). With `per_frame_esn0`
    /// each frame's noise is topped up after the front end, from its measured energy and noise
    /// (`PhyLoop::present_noise` says what that leaves out).
    pub rf: Option<RfPath>,
    /// Continuous transmission at this symbol rate (baud, 1e3 to 1e8): the flowgraph sends a
    /// dummy PLFRAME whenever no frame is ready (gr/continuous.py) and the loop skips them. An
    /// SDR pair (`rf.sdr`) always transmits continuously, at its own symbol rate.
    pub continuous: Option<f64>,
    /// An SDR underrun, emulated in the flowgraph (gr/underrun.py): samples dropped once after
    /// the channel, to test the per-frame PLHEADER search.
    pub underrun: Option<Underrun>,
    /// The flowgraph script and its interpreter.
    pub script: PathBuf,
    pub python: PathBuf,
    /// How long the flowgraph may take to start, or to send IQ for a pushed frame.
    pub timeout: Duration,
}

impl LoopConfig {
    /// Defaults: seed 1, gold code 0, 50 iterations of the default min-sum decoder, 4 frames in
    /// flight (enough to keep the decoder busy: the flowgraph encodes a frame several times
    /// faster than it is decoded), the flowgraph in this crate's gr/, a 30 s timeout.
    pub fn new(modcod: ModCod, esn0_db: f64) -> Self {
        LoopConfig {
            modcod,
            esn0_db,
            per_frame_esn0: false,
            seed: 1,
            goldcode: 0,
            max_iterations: 50,
            decoder: Decoder::MinSum(crate::minsum::DEFAULT_RULE),
            in_flight: 4,
            sigmf: None,
            rf: None,
            continuous: None,
            underrun: None,
            script: Path::new(env!("CARGO_MANIFEST_DIR")).join("gr/dvbs2_loop.py"),
            python: PathBuf::from(GR_PYTHON),
            timeout: Duration::from_secs(30),
        }
    }

    /// The symbol rate dummy PLFRAMEs keep up, if the transmission is continuous.
    pub fn continuous_baud(&self) -> Option<f64> {
        let sdr = self.rf.as_ref().and_then(|rf| rf.sdr.as_ref());
        sdr.map(|s| s.symbol_rate_baud).or(self.continuous)
    }

    fn check(&self) -> Result<(), LoopError> {
        check_esn0(self.esn0_db)?;
        if !(1..=64).contains(&self.in_flight) {
            return Err(LoopError::Unsupported(format!(
                "in_flight {} is outside [1, 64] frames",
                self.in_flight
            )));
        }
        if let Some(rf) = &self.rf {
            rf.check()?;
            if !self.modcod.pilots {
                return Err(LoopError::Unsupported(
                    "rf needs pilots: the receiver tracks the carrier on the pilot blocks".into(),
                ));
            }
        }
        if let Some(baud) = self.continuous {
            if self.rf.as_ref().is_some_and(|rf| rf.sdr.is_some()) {
                return Err(LoopError::Unsupported(
                    "continuous with rf.sdr: an SDR pair always transmits continuously, at \
                     rf.sdr.symbol_rate_baud"
                        .into(),
                ));
            }
            if !(1e3..=1e8).contains(&baud) {
                return Err(LoopError::Unsupported(format!(
                    "continuous {baud} baud is outside [1e3, 1e8]"
                )));
            }
        }
        if let Some(u) = &self.underrun {
            u.check()?;
        }
        if self.goldcode > 262_141 {
            return Err(LoopError::Unsupported(format!(
                "goldcode {} is outside [0, 262141]",
                self.goldcode
            )));
        }
        Ok(())
    }
}

/// The RF path's settings (gr/rf_path.py says why its defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct RfPath {
    /// Samples per symbol of the waveform (2-16).
    pub sps: u32,
    /// The RRC roll-off: 0.2, 0.25 or 0.35 (EN 302 307-1 5.6).
    pub rolloff: f64,
    /// Carrier frequency offset, cycles per symbol (-0.01 to 0.01).
    pub freq_offset: f64,
    /// The band-edge FLL's loop bandwidth (0: no FLL, up to 0.05).
    pub fll_bandwidth: f64,
    /// The receiver's sample clock off the transmitter's, parts per million (-200 to 200).
    pub clock_ppm: f64,
    /// A SoapySDR transmitter and receiver in place of gr-channels (gr/sdr.py); then no noise,
    /// carrier or clock offset is simulated (the radio link's own apply).
    pub sdr: Option<Sdr>,
}

/// The SDR pair of the RF path: device arguments (SoapySDR's "driver=...,serial=..."), one
/// centre frequency, the sample rate `symbol_rate_baud` x `RfPath::sps`. Wire TX to RX by coax
/// through fixed attenuation, never an antenna. Not run with hardware (none on this machine).
#[derive(Debug, Clone, PartialEq)]
pub struct Sdr {
    pub tx_args: String,
    pub rx_args: String,
    /// 1e6 to 6e9 Hz.
    pub center_freq_hz: f64,
    /// 0 to 90 dB each.
    pub tx_gain_db: f64,
    pub rx_gain_db: f64,
    /// Symbols per second; times sps, 1e3 to 1e8 samples per second.
    pub symbol_rate_baud: f64,
}

impl Sdr {
    fn check(&self, sps: u32) -> Result<(), LoopError> {
        let bad = |m: String| Err(LoopError::Unsupported(m));
        if self.tx_args.is_empty() || self.rx_args.is_empty() {
            return bad("rf.sdr.tx_args and rx_args must name a device (driver=...)".into());
        }
        if !(1e6..=6e9).contains(&self.center_freq_hz) {
            return bad(format!(
                "rf.sdr.center_freq_hz {} is outside [1e6, 6e9]",
                self.center_freq_hz
            ));
        }
        for (name, g) in [
            ("tx_gain_db", self.tx_gain_db),
            ("rx_gain_db", self.rx_gain_db),
        ] {
            if !(0.0..=90.0).contains(&g) {
                return bad(format!("rf.sdr.{name} {g} is outside [0, 90]"));
            }
        }
        let rate = self.symbol_rate_baud * f64::from(sps);
        if !(1e3..=1e8).contains(&rate) {
            return bad(format!(
                "rf.sdr sample rate {rate} (symbol_rate_baud x sps) is outside [1e3, 1e8]"
            ));
        }
        Ok(())
    }
}

impl Default for RfPath {
    /// 4 samples per symbol, roll-off 0.2, no offsets, no FLL.
    fn default() -> Self {
        RfPath {
            sps: 4,
            rolloff: 0.2,
            freq_offset: 0.0,
            fll_bandwidth: 0.0,
            clock_ppm: 0.0,
            sdr: None,
        }
    }
}

impl RfPath {
    /// Refuses settings outside the flowgraph's ranges, naming the field (`rf.sps`, ...) and the
    /// limit.
    pub fn check(&self) -> Result<(), LoopError> {
        let bad = |m: String| Err(LoopError::Unsupported(m));
        if !(2..=16).contains(&self.sps) {
            return bad(format!("rf.sps {} is outside [2, 16]", self.sps));
        }
        if ![0.2, 0.25, 0.35].contains(&self.rolloff) {
            return bad(format!(
                "rf.rolloff {} is not one of 0.2, 0.25, 0.35",
                self.rolloff
            ));
        }
        if self.freq_offset.abs() > 0.01 {
            return bad(format!(
                "rf.freq_offset {} is outside [-0.01, 0.01] cycles per symbol",
                self.freq_offset
            ));
        }
        if !(0.0..=0.05).contains(&self.fll_bandwidth) {
            return bad(format!(
                "rf.fll_bandwidth {} is outside [0, 0.05]",
                self.fll_bandwidth
            ));
        }
        if self.clock_ppm.abs() > 200.0 {
            return bad(format!(
                "rf.clock_ppm {} is outside [-200, 200]",
                self.clock_ppm
            ));
        }
        if let Some(sdr) = &self.sdr {
            if self.freq_offset != 0.0 || self.clock_ppm != 0.0 {
                return bad(
                    "rf.freq_offset and rf.clock_ppm are gr-channels' settings, not \
                     with rf.sdr (the radios' own offsets apply)"
                        .into(),
                );
            }
            sdr.check(self.sps)?;
        }
        Ok(())
    }
}

/// Samples dropped once from the stream after the channel (at the sample rate on the RF path,
/// before the front end), as an SDR loses them when a USB buffer is dropped: the stream goes on
/// without its frame alignment and the loop must find the next PLHEADER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Underrun {
    /// The first sample dropped, counted from the stream's start (0 to 1e9).
    pub at_sample: u64,
    /// How many (1 to 1e7).
    pub samples: u64,
}

impl Underrun {
    fn check(&self) -> Result<(), LoopError> {
        if self.at_sample > 1_000_000_000 {
            return Err(LoopError::Unsupported(format!(
                "underrun.at_sample {} is outside [0, 1e9]",
                self.at_sample
            )));
        }
        if !(1..=10_000_000).contains(&self.samples) {
            return Err(LoopError::Unsupported(format!(
                "underrun.samples {} is outside [1, 1e7]",
                self.samples
            )));
        }
        Ok(())
    }
}

/// The noise variance the receiver's LLRs use for a frame of channel N0 `n0`: that N0 on the
/// symbol-level channel; behind the RF path none (estimated per frame from the known symbols, as
/// a real receiver would: the front end's scale and loss are unknown).
fn llr_n0(cfg: &LoopConfig, n0: f64) -> Option<f64> {
    cfg.rf.is_none().then_some(n0)
}

/// The Es/N0 range of the loop: gr-channels' and the receiver's tested range.
fn check_esn0(esn0_db: f64) -> Result<(), LoopError> {
    if !(-10.0..=awgn::BASE_ESN0_DB).contains(&esn0_db) {
        return Err(LoopError::Unsupported(format!(
            "esn0_db {esn0_db} is outside [-10, {}] dB",
            awgn::BASE_ESN0_DB
        )));
    }
    Ok(())
}

/// The Es/N0 the flowgraph's own channel runs at.
fn flowgraph_esn0_db(cfg: &LoopConfig) -> f64 {
    if cfg.per_frame_esn0 {
        awgn::BASE_ESN0_DB
    } else {
        cfg.esn0_db
    }
}

/// Why a frame was not delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Erasure {
    /// LDPC's parity checks unsatisfied after the last iteration, and BCH could not repair it.
    LdpcNotConverged,
    /// LDPC converged (to a wrong codeword) and BCH detected more errors than it corrects.
    BchFailed,
    /// The frame's samples were lost (an underrun) or, after the loop lost the frame alignment,
    /// its frame did not decode and so could not be told apart from its neighbours: the loop
    /// reports it lost rather than guess which frame it was. Not decoded: no iterations, and
    /// `esn0_est_db` is NaN.
    Lost,
}

/// One frame back from the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopFrame {
    /// The number `submit` returned.
    pub seq: u64,
    /// The channel's Es/N0 for this frame (dB).
    pub esn0_db: f64,
    /// The BBFRAME delivered (K_bch / 8 bytes, MSB first; it may still differ from the one sent
    /// when BCH "corrects" to a wrong codeword), or the erasure.
    pub outcome: Result<Vec<u8>, Erasure>,
    pub iterations: usize,
    pub esn0_est_db: f64,
    /// Wall and CPU time of the demapping and decoding.
    pub decode_s: f64,
    pub cpu_s: f64,
}

/// A frame pushed into the flowgraph, with the complex noise variance its symbols must reach
/// and, for the caller's frames, the BBFRAME (it identifies a frame found after a resync).
enum Pushed {
    Frame(u64, f64, Vec<u8>),
    Filler(f64),
}

impl Pushed {
    fn n0(&self) -> f64 {
        match *self {
            Pushed::Frame(_, n0, _) | Pushed::Filler(n0) => n0,
        }
    }

    /// This is the frame that delivered `bb` (a filler's BBFRAME is zeros).
    fn delivered(&self, bb: &[u8]) -> bool {
        match self {
            Pushed::Frame(_, _, sent) => sent == bb,
            Pushed::Filler(_) => bb.iter().all(|&b| b == 0),
        }
    }
}

/// What the per-frame PLHEADER check found at the front of the samples.
enum Front {
    /// A PLHEADER: cut a frame here.
    Header,
    /// The alignment was lost and found again further on, or a dummy PLFRAME was skipped:
    /// check again.
    Moved,
    /// Not enough samples to search: wait for more.
    Wait,
}

/// A running loop: the flowgraph process, its sockets and the receiver.
pub struct PhyLoop {
    cfg: LoopConfig,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The write end of the BBFRAME pipe (the flowgraph's fd 3).
    frames: Option<File>,
    dir: PathBuf,
    pull: zmq::Socket,
    rx: Receiver,
    pushed: VecDeque<Pushed>,
    /// Received samples not yet cut into frames; `synced` once they start at a PLHEADER.
    samples: Vec<C64>,
    synced: bool,
    /// False after a resync until a decoded frame's BBFRAME says which pushed frame it was.
    matched: bool,
    /// Frames settled and not yet returned (the lost ones ahead of an identified one).
    ready: VecDeque<LoopFrame>,
    /// Times the frame alignment was lost and found again.
    resyncs: u64,
    /// Dummy PLFRAMEs skipped (continuous transmission).
    dummies: u64,
    next_seq: u64,
    /// Per-frame noise: its source, the flowgraph's own N0 and how many of `samples` (from the
    /// front) already carry their frame's noise.
    awgn: Awgn,
    base_n0: f64,
    noised: usize,
    /// Frames whose link noise was above their target (`fade_floor_frames`).
    fade_floor_frames: u64,
}

impl PhyLoop {
    /// Starts the flowgraph and waits until it runs.
    pub fn start(cfg: LoopConfig) -> Result<Self, LoopError> {
        cfg.check()?;
        let mc = cfg.modcod;
        let dir = std::env::temp_dir().join(format!(
            "satlab-phy-loop-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(&dir)
            .map_err(|e| LoopError::FlowgraphNotRunning(format!("{}: {e}", dir.display())))?;
        let addr_out = format!("ipc://{}/out", dir.display());
        let ctx = zmq::Context::new();
        let pull = ctx.socket(zmq::PULL).map_err(zmq_err("PULL socket"))?;
        pull.connect(&addr_out).map_err(zmq_err(&addr_out))?;
        // Pending IQ is dropped at close (else the context's end waits for it).
        pull.set_linger(0).map_err(zmq_err("PULL linger"))?;
        let (mut child, frames) = spawn(&cfg, &dir, &addr_out)?;
        let stdin = child.stdin.take();
        let mut lp = PhyLoop {
            rx: Receiver::new(Config {
                modcod: mc,
                goldcode: cfg.goldcode as usize,
                n0: llr_n0(&cfg, awgn::n0_of(cfg.esn0_db)),
                max_iterations: cfg.max_iterations,
                decoder: cfg.decoder,
                track_frequency: cfg.rf.is_some(),
            }),
            awgn: Awgn::new(u64::from(cfg.seed)),
            base_n0: awgn::n0_of(flowgraph_esn0_db(&cfg)),
            noised: 0,
            fade_floor_frames: 0,
            cfg,
            child,
            stdin,
            frames: Some(frames),
            dir,
            pull,
            pushed: VecDeque::new(),
            samples: Vec::new(),
            synced: false,
            matched: true,
            ready: VecDeque::new(),
            resyncs: 0,
            dummies: 0,
            next_seq: 0,
        };
        lp.wait_ready()?;
        Ok(lp)
    }

    pub fn config(&self) -> &LoopConfig {
        &self.cfg
    }

    /// The flowgraph's process id.
    pub fn flowgraph_pid(&self) -> u32 {
        self.child.id()
    }

    /// Frames submitted and not yet returned by `next_frame`.
    pub fn outstanding(&self) -> usize {
        self.ready.len()
            + self
                .pushed
                .iter()
                .filter(|p| matches!(p, Pushed::Frame(..)))
                .count()
    }

    /// Times the loop lost the frame alignment (no PLHEADER where the next frame should start)
    /// and found the next PLHEADER further on.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }

    /// Dummy PLFRAMEs received and skipped (continuous transmission).
    pub fn dummies(&self) -> u64 {
        self.dummies
    }

    /// Pushes one BBFRAME (K_bch / 8 bytes, MSB first) at the loop's Es/N0; returns its
    /// sequence number.
    pub fn submit(&mut self, bbframe: &[u8]) -> Result<u64, LoopError> {
        self.push_frame(bbframe, awgn::n0_of(self.cfg.esn0_db))
    }

    /// Pushes one BBFRAME through the channel at `esn0_db` (needs `per_frame_esn0`).
    pub fn submit_at(&mut self, bbframe: &[u8], esn0_db: f64) -> Result<u64, LoopError> {
        if !self.cfg.per_frame_esn0 {
            return Err(LoopError::Unsupported(
                "submit_at() needs per_frame_esn0: this flowgraph's noise is fixed".into(),
            ));
        }
        check_esn0(esn0_db)?;
        self.push_frame(bbframe, awgn::n0_of(esn0_db))
    }

    /// Pushes one BBFRAME at `esn0_db` (needs `per_frame_esn0`) with a filler frame behind it,
    /// in one message: the synchronous use, one frame at a time. The channel holds a frame's
    /// last samples, and the receiver needs the PLHEADER after a frame, until more input comes;
    /// the filler brings them out at once, where waiting costs `FLUSH_AFTER`.
    pub fn submit_flushed_at(&mut self, bbframe: &[u8], esn0_db: f64) -> Result<u64, LoopError> {
        if !self.cfg.per_frame_esn0 {
            return Err(LoopError::Unsupported(
                "submit_flushed_at() needs per_frame_esn0: this flowgraph's noise is fixed".into(),
            ));
        }
        check_esn0(esn0_db)?;
        let n0 = awgn::n0_of(esn0_db);
        let seq = self.push_frame_with(bbframe, n0, true)?;
        self.pushed.push_back(Pushed::Filler(n0));
        Ok(seq)
    }

    fn push_frame(&mut self, bbframe: &[u8], n0: f64) -> Result<u64, LoopError> {
        self.push_frame_with(bbframe, n0, false)
    }

    /// Pushes one BBFRAME, and a filler frame's zeros in the same message if `filler`.
    fn push_frame_with(&mut self, bbframe: &[u8], n0: f64, filler: bool) -> Result<u64, LoopError> {
        let kbch = self.cfg.modcod.kbch;
        if bbframe.len() * 8 != kbch {
            return Err(LoopError::Unsupported(format!(
                "BBFRAME of {} bytes; {} takes K_bch / 8 = {} bytes",
                bbframe.len(),
                self.cfg.modcod.label(),
                kbch / 8
            )));
        }
        let mut bits: Vec<u8> = (0..kbch)
            .map(|i| (bbframe[i / 8] >> (7 - i % 8)) & 1)
            .collect();
        if filler {
            bits.resize(2 * kbch, 0);
        }
        self.push_bits(&bits)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.pushed
            .push_back(Pushed::Frame(seq, n0, bbframe.to_vec()));
        Ok(seq)
    }

    /// Pushes a filler frame (zeros, never decoded) behind the frames submitted: the channel
    /// holds a frame's last samples until more input comes.
    fn flush(&mut self) -> Result<(), LoopError> {
        self.push_bits(&vec![0u8; self.cfg.modcod.kbch])?;
        let n0 = self.pushed.back().map_or(self.base_n0, Pushed::n0);
        self.pushed.push_back(Pushed::Filler(n0));
        Ok(())
    }

    /// The oldest outstanding frame, decoded (waits for its IQ).
    pub fn next_frame(&mut self) -> Result<LoopFrame, LoopError> {
        if self.outstanding() == 0 {
            return Err(LoopError::Unsupported(
                "next_frame() with no frame submitted".into(),
            ));
        }
        loop {
            if let Some(f) = self.cut_frame()? {
                return Ok(f);
            }
            self.receive()?;
        }
    }

    /// Writes a BBFRAME's bits to the flowgraph's frame pipe (its source reads them as they
    /// come).
    fn push_bits(&mut self, bits: &[u8]) -> Result<(), LoopError> {
        let written = match self.frames.as_mut() {
            Some(pipe) => pipe.write_all(bits),
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        };
        written.map_err(|e| self.dead(&format!("writing a BBFRAME: {e}")))
    }

    /// Waits for the flowgraph's "ready" line (or its exit, or `timeout`).
    fn wait_ready(&mut self) -> Result<(), LoopError> {
        let stdout = self.child.stdout.take().expect("stdout is piped");
        let (tx, rx) = std::sync::mpsc::channel();
        // A thread reads stdout: read_line has no timeout. It ends at "ready" or EOF.
        std::thread::spawn(move || {
            let ready = BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.contains("\"ready\": true"));
            let _ = tx.send(ready);
        });
        match rx.recv_timeout(self.cfg.timeout) {
            Ok(true) => Ok(()),
            Ok(false) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(self.dead("it exited while starting"))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                let _ = self.child.kill();
                Err(self.dead(&format!("not ready after {:?}, killed", self.cfg.timeout)))
            }
        }
    }

    /// Decodes the front frame if its samples (and the next PLHEADER) are here; drops fillers.
    /// Every frame's PLHEADER is checked first (`front`): where none is, the stream lost
    /// samples (an SDR underrun) and the next PLHEADER is searched.
    fn cut_frame(&mut self) -> Result<Option<LoopFrame>, LoopError> {
        if let Some(f) = self.ready.pop_front() {
            return Ok(Some(f));
        }
        let len = self.rx.frame_len();
        if !self.synced {
            // Two frames and a header: the PLHEADER correlation over two frames holds well
            // below the lowest MODCOD's threshold.
            if self.samples.len() < 2 * len + 90 {
                return Ok(None);
            }
            self.sync()?;
        }
        while self.samples.len() >= len + 90 {
            match self.front()? {
                Front::Header => {}
                Front::Moved => continue,
                Front::Wait => return Ok(None),
            }
            let Some(next) = self.next_start()? else {
                return Ok(None);
            };
            // In step with the pushed frames, a filler is skipped undecoded; after a resync
            // every frame is decoded, a filler's zeros identify it as well as a frame's BBFRAME.
            if self.matched && matches!(self.pushed.front(), Some(Pushed::Filler(_))) {
                self.pushed.pop_front();
            } else {
                // The next PLHEADER anchors the phase after the frame, unless it is a dummy's.
                let whole = next == len && !self.dummy_at(len, HEADER_QUALITY);
                let (d, cpu_s) = self.decode_front(whole);
                self.settle(d, cpu_s);
            }
            self.drop_samples(next);
            if next != len {
                // Samples were dropped inside the frame just cut: how many frames went with
                // them is unknown until a decoded BBFRAME says which frame this is.
                self.matched = false;
                self.resyncs += 1;
            }
            if let Some(f) = self.ready.pop_front() {
                return Ok(Some(f));
            }
        }
        Ok(None)
    }

    /// Checks the PLHEADER at the front of the samples; where there is none, searches the next
    /// one (the correlation of `sync`, over two frames) and drops the samples before it.
    fn front(&mut self) -> Result<Front, LoopError> {
        if self.dummy_at(0, HEADER_QUALITY) {
            return Ok(self.skip_dummy());
        }
        if self.rx.header_quality(&self.samples[..90]) >= HEADER_QUALITY {
            return Ok(Front::Header);
        }
        if self.samples.len() < 2 * self.rx.frame_len() + 90 {
            return Ok(Front::Wait);
        }
        let start = self.find_header(&self.samples)?;
        if start == 0 {
            // Noise on a PLHEADER where it belongs (low Es/N0), not a lost alignment.
            if self.dummy_at(0, 0.0) {
                return Ok(self.skip_dummy());
            }
            return Ok(Front::Header);
        }
        self.drop_samples(start);
        self.matched = false;
        self.resyncs += 1;
        Ok(Front::Moved)
    }

    /// Drops the dummy PLFRAME at the front.
    fn skip_dummy(&mut self) -> Front {
        self.drop_samples(DUMMY_SYMBOLS);
        self.dummies += 1;
        Front::Moved
    }

    /// Continuous transmission: whether the 90 samples from `at` are a dummy PLFRAME's PLHEADER,
    /// scoring at least `min` and more than a data frame's PLHEADER (which shares the SOF).
    fn dummy_at(&self, at: usize, min: f64) -> bool {
        if self.cfg.continuous_baud().is_none() {
            return false;
        }
        let y = &self.samples[at..at + 90];
        let d = self.rx.dummy_quality(y);
        d >= min && d > self.rx.header_quality(y)
    }

    /// Where the front frame's successor starts: one frame on when its PLHEADER is there; else
    /// (samples dropped inside the front frame: an underrun) the first PLHEADER after the front
    /// one. Searching from the front frame rather than from where its successor should have been
    /// keeps the successor when only a few samples went. None: too few samples to search yet.
    fn next_start(&self) -> Result<Option<usize>, LoopError> {
        let len = self.rx.frame_len();
        if self.rx.header_quality(&self.samples[len..len + 90]) >= HEADER_QUALITY
            || self.dummy_at(len, HEADER_QUALITY)
        {
            return Ok(Some(len));
        }
        if self.samples.len() < 2 * len + 91 {
            return Ok(None);
        }
        Ok(Some(1 + self.find_header(&self.samples[1..])?))
    }

    /// Decodes the front frame's samples at its pushed frame's N0 (`whole`: its successor's
    /// PLHEADER follows it, a phase anchor).
    fn decode_front(&mut self, whole: bool) -> (Delivered, f64) {
        let len = self.rx.frame_len();
        let n0 = self.pushed.front().map_or(self.base_n0, Pushed::n0);
        let next_n0 = self.pushed.get(1).map_or(n0, Pushed::n0);
        self.top_up_noise(n0, next_n0, len);
        self.rx.set_n0(llr_n0(&self.cfg, n0));
        let cpu0 = thread_cpu_s();
        let next_header = whole.then(|| &self.samples[len..len + 90]);
        let d = self.rx.decode_bbframe(&self.samples[..len], next_header);
        let cpu_s = thread_cpu_s() - cpu0;
        (d, cpu_s)
    }

    /// Assigns a decoded frame to the pushed frame it was: the front one (the order of the
    /// stream), unless its BBFRAME is a later pushed frame's (the frames in between were lost:
    /// samples dropped by a whole number of frames keep the alignment). After a resync only a
    /// decoded BBFRAME says which frame the stream is at: frames that do not decode are not
    /// assigned (never to a guessed frame), and when one decodes, the pushed frames before it
    /// are reported lost.
    fn settle(&mut self, d: Delivered, cpu_s: f64) {
        let bb = d.bch_corrected.map(|_| pack(&d.bits));
        let found = bb
            .as_ref()
            .and_then(|bb| self.pushed.iter().position(|p| p.delivered(bb)));
        let at = match (found, self.matched) {
            (Some(j), _) => j,
            (None, true) => 0,
            (None, false) => return,
        };
        self.matched = true;
        for p in self.pushed.drain(..at) {
            if let Pushed::Frame(seq, n0, _) = p {
                self.ready.push_back(lost(seq, n0));
            }
        }
        let Some(Pushed::Frame(seq, n0, _)) = self.pushed.pop_front() else {
            return; // a filler
        };
        let outcome = match (bb, d.ldpc_ok) {
            (Some(bb), _) => Ok(bb),
            (None, false) => Err(Erasure::LdpcNotConverged),
            (None, true) => Err(Erasure::BchFailed),
        };
        self.ready.push_back(LoopFrame {
            seq,
            esn0_db: -10.0 * n0.log10(),
            outcome,
            iterations: d.iterations,
            esn0_est_db: d.esn0_est_db,
            decode_s: d.decode_s,
            cpu_s,
        });
    }

    /// Brings the front frame's `len` samples to N0 `n0`, and the next PLHEADER (the phase
    /// anchor after them) to the next frame's N0 `next_n0`: each sample gets its noise once, by
    /// the frame it belongs to. Nothing is added when the flowgraph's own noise is the frame's.
    /// Behind the RF path the noise is scaled to the frame's measured energy (`present_noise`).
    fn top_up_noise(&mut self, n0: f64, next_n0: f64, len: usize) {
        let (es, present) = self.present_noise(len);
        for (range, target) in [(0..len, n0), (len..len + 90, next_n0)] {
            let from = range.start.max(self.noised);
            if from < range.end {
                let variance = es * target - present;
                if range.start == 0 && variance <= 0.0 && self.measures_noise() {
                    self.fade_floor_frames += 1;
                }
                self.awgn.add(&mut self.samples[from..range.end], variance);
            }
        }
        self.noised = self.noised.max(len + 90);
    }

    /// Per-frame Es/N0 behind the RF path (or an SDR): the noise is measured, not known.
    fn measures_noise(&self) -> bool {
        self.cfg.per_frame_esn0 && self.cfg.rf.is_some()
    }

    /// The front frame's symbol energy and the noise it already carries, in the samples' units.
    /// On the symbol-level channel both are known exactly: unit-energy symbols and the
    /// flowgraph's N0. Behind the RF path the front end's gain and loss are unknown (as behind
    /// a real tuner), so both are measured on the frame's known symbols before any noise is
    /// added to them (`Receiver::measure`; the PLHEADER is left out once it carries the noise
    /// added with the previous frame). The approximation: this noise is added after the front
    /// end, at one sample per symbol, so timing recovery and carrier tracking work on the
    /// clear-sky signal: optimistic at deep fades, where a real receiver's loops would jitter
    /// or slip. Adding the noise at the sample rate before the front end (in the flowgraph) or,
    /// with real RF, an attenuator driven by the fade trace, would not be; neither is built.
    /// With an SDR the link's own noise is the floor: a frame whose measured noise is already
    /// above its target gets none (`fade_floor_frames`).
    fn present_noise(&self, len: usize) -> (f64, f64) {
        if !self.measures_noise() {
            return (1.0, self.base_n0);
        }
        let m = self.rx.measure(&self.samples[..len], self.noised == 0);
        (m.es, m.n0)
    }

    /// Frames behind the RF path (or an SDR) whose link noise was already above their target
    /// Es/N0's: they got no noise and met the link's Es/N0, higher than asked (the fade was
    /// shallower than the trace). Always 0 on the symbol-level channel.
    pub fn fade_floor_frames(&self) -> u64 {
        self.fade_floor_frames
    }

    /// Drops the front frame's samples.
    fn drop_samples(&mut self, len: usize) {
        self.samples.drain(..len);
        self.noised = self.noised.saturating_sub(len);
    }

    /// Drops the samples before the first PLHEADER.
    fn sync(&mut self) -> Result<(), LoopError> {
        let start = self.find_header(&self.samples)?;
        self.drop_samples(start);
        self.synced = true;
        Ok(())
    }

    /// The offset of the first PLHEADER within a frame's length of the start of `samples` (the
    /// correlation summed over the frames buffered, `Receiver::find_start`).
    fn find_header(&self, samples: &[C64]) -> Result<usize, LoopError> {
        if self.cfg.continuous_baud().is_some() {
            return self.find_any_header(samples);
        }
        let (start, quality) = self.rx.find_start(samples);
        if quality < 0.2 {
            return Err(LoopError::Sync(format!(
                "no PLHEADER of {} in {} samples (best correlation {quality:.2}, at least 0.2 expected)",
                self.cfg.modcod.label(),
                self.rx.frame_len()
            )));
        }
        Ok(start)
    }

    /// Continuous transmission: the offset of the first PLHEADER, a data frame's or a dummy's,
    /// within a frame's length of the start of `samples`. Data frames and dummies come in any
    /// order, so `find_start`'s correlation at a frame's spacing does not hold: the first offset
    /// where a chain of PLHEADERs, each one frame of its kind after the last, averages
    /// HEADER_QUALITY (`chain_quality`).
    fn find_any_header(&self, samples: &[C64]) -> Result<usize, LoopError> {
        let mut best = 0.0f64;
        for o in 0..self.rx.frame_len().min(samples.len().saturating_sub(90)) {
            let q = self.chain_quality(samples, o);
            if q >= HEADER_QUALITY {
                return Ok(o);
            }
            best = best.max(q);
        }
        Err(LoopError::Sync(format!(
            "no PLHEADER of {} or a dummy PLFRAME in {} samples (best chain of headers {best:.2}, \
             at least {HEADER_QUALITY} expected)",
            self.cfg.modcod.label(),
            self.rx.frame_len()
        )))
    }

    /// The mean PLHEADER quality of up to CHAIN headers from offset `o` of `s`, each taken as
    /// the kind (data frame or dummy) it looks more like and the next one that frame's length
    /// on; 0 when fewer than two fit or the first scores like noise (a shortcut: most offsets).
    /// Noise alone averages 0.13 +- 0.05 / sqrt(CHAIN) (at most about 0.24 over the offsets of a
    /// normal frame); PLHEADERs at Es/N0 = 1/N0 about 1/sqrt(1 + N0) (0.45 at -6 dB).
    fn chain_quality(&self, s: &[C64], o: usize) -> f64 {
        const CHAIN: usize = 4;
        let (mut sum, mut n, mut at) = (0.0, 0, o);
        while n < CHAIN && at + 90 <= s.len() {
            let y = &s[at..at + 90];
            let (h, d) = (self.rx.header_quality(y), self.rx.dummy_quality(y));
            if n == 0 && h.max(d) < 0.2 {
                return 0.0;
            }
            sum += h.max(d);
            n += 1;
            at += if d > h {
                DUMMY_SYMBOLS
            } else {
                self.rx.frame_len()
            };
        }
        if n < 2 {
            0.0
        } else {
            sum / n as f64
        }
    }

    /// Waits for IQ; pushes a filler frame when it stops, fails when the flowgraph is gone.
    fn receive(&mut self) -> Result<(), LoopError> {
        let t0 = Instant::now();
        loop {
            let ready = self
                .pull
                .poll(zmq::POLLIN, FLUSH_AFTER.as_millis() as i64)
                .map_err(zmq_err("waiting for IQ"))?;
            if ready > 0 {
                let msg = self.pull.recv_bytes(0).map_err(zmq_err("receiving IQ"))?;
                if msg.len() % 8 != 0 {
                    return Err(LoopError::Zmq(format!(
                        "an IQ message of {} bytes is not whole complex64 samples",
                        msg.len()
                    )));
                }
                self.samples.extend(iq::from_le_bytes(&msg));
                return Ok(());
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return Err(self.dead("it exited"));
            }
            if t0.elapsed() > self.cfg.timeout {
                return Err(LoopError::FlowgraphNotRunning(format!(
                    "no IQ for {:?} (pid {})",
                    self.cfg.timeout,
                    self.child.id()
                )));
            }
            // No IQ for FLUSH_AFTER with frames outstanding: the channel holds the last frame's
            // tail until more input comes, so push a filler frame behind it. Pushed whatever the
            // samples buffered: after an underrun fewer samples come than the frames pushed
            // (the loop cannot tell how many went), and the PLHEADER search needs two frames'
            // worth; a filler too many is skipped undecoded.
            self.flush()?;
        }
    }

    /// The error for a flowgraph that has exited: its status and the end of its stderr.
    fn dead(&mut self, what: &str) -> LoopError {
        let status = self
            .child
            .wait()
            .map(|s| s.to_string())
            .unwrap_or_else(|e| e.to_string());
        let err = std::fs::read_to_string(self.dir.join("stderr")).unwrap_or_default();
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        LoopError::FlowgraphNotRunning(format!(
            "{} {} ({what}, {status}): {}",
            self.cfg.python.display(),
            self.cfg.script.display(),
            tail.join(" | ")
        ))
    }
}

impl Drop for PhyLoop {
    /// Closes the flowgraph's stdin (it stops), kills it if it lingers, removes the socket
    /// directory.
    fn drop(&mut self) {
        drop(self.frames.take());
        drop(self.stdin.take());
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(3) {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A frame reported lost (`Erasure::Lost`).
fn lost(seq: u64, n0: f64) -> LoopFrame {
    LoopFrame {
        seq,
        esn0_db: -10.0 * n0.log10(),
        outcome: Err(Erasure::Lost),
        iterations: 0,
        esn0_est_db: f64::NAN,
        decode_s: 0.0,
        cpu_s: 0.0,
    }
}

/// The BBFRAME pipe's read end in the flowgraph (gr/dvbs2_loop.py `--in-fd`).
const FRAMES_FD: i32 = 3;

/// A pipe for the BBFRAMEs: (read end, write end), both close-on-exec; the read end reaches the
/// flowgraph as FRAMES_FD (`spawn`). Room for a burst of frames (in_flight normal frames are up
/// to 3.7 MB, the default 64 KiB holds one): 1 MiB, best effort (a full pipe blocks the write).
fn frame_pipe() -> Result<(OwnedFd, File), LoopError> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given, which this function
    // then owns (each wrapped once); fcntl only sets the pipe's size.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            let e = std::io::Error::last_os_error();
            return Err(LoopError::FlowgraphNotRunning(format!("frame pipe: {e}")));
        }
        libc::fcntl(fds[1], libc::F_SETPIPE_SZ, 1 << 20);
        Ok((
            OwnedFd::from_raw_fd(fds[0]),
            File::from(OwnedFd::from_raw_fd(fds[1])),
        ))
    }
}

/// Starts the flowgraph process (stderr to DIR/stderr, read when it fails); returns it with the
/// write end of its BBFRAME pipe. The frames go through a pipe, not a ZeroMQ socket:
/// gr-zeromq's pull_source (used before) returns empty after its receive timeout, and in GNU
/// Radio 3.10 a frame pushed after about 50 ms of silence then waited for the scheduler's next
/// wake-up, 100-320 ms late (a frame alone after 200 ms of silence: 120 ms late); a blocking
/// read() hands it on at once. Stdin stays the loop's lifetime (closed: the flowgraph stops).
fn spawn(cfg: &LoopConfig, dir: &Path, addr_out: &str) -> Result<(Child, File), LoopError> {
    let (frames_rd, frames_wr) = frame_pipe()?;
    let rd = frames_rd.as_raw_fd();
    let mc = cfg.modcod;
    let frame = if mc.frame == crate::FrameSize::Normal {
        "normal"
    } else {
        "short"
    };
    let stderr = std::fs::File::create(dir.join("stderr"))
        .map_err(|e| LoopError::FlowgraphNotRunning(format!("{}: {e}", dir.display())))?;
    let mut cmd = Command::new(&cfg.python);
    cmd.arg(&cfg.script)
        .args(["--modcod", &mc.id.to_string(), "--frame", frame])
        .args([
            "--esn0",
            &flowgraph_esn0_db(cfg).to_string(),
            "--seed",
            &cfg.seed.to_string(),
        ])
        .args([
            "--goldcode",
            &cfg.goldcode.to_string(),
            "--in-fd",
            &FRAMES_FD.to_string(),
            "--out",
            addr_out,
        ]);
    if mc.pilots {
        cmd.arg("--pilots");
    }
    if let Some(s) = &cfg.sigmf {
        cmd.arg("--sigmf").arg(s);
    }
    if let Some(baud) = cfg.continuous_baud() {
        let dummy = dir.join("dummy.cf32");
        iq::write(&dummy, &plframe::dummy_plframe(cfg.goldcode as usize))
            .map_err(LoopError::FlowgraphNotRunning)?;
        cmd.arg("--continuous").arg(dummy);
        if cfg.continuous.is_some() {
            // (With an SDR, --symbol-rate is among the SDR's arguments below.)
            cmd.args(["--symbol-rate", &baud.to_string()]);
        }
    }
    if let Some(u) = &cfg.underrun {
        cmd.args(["--underrun-at", &u.at_sample.to_string()])
            .args(["--underrun-samples", &u.samples.to_string()]);
    }
    if let Some(rf) = &cfg.rf {
        cmd.arg("--rf").args([
            "--sps",
            &rf.sps.to_string(),
            "--rolloff",
            &rf.rolloff.to_string(),
            "--freq-offset",
            &rf.freq_offset.to_string(),
            "--fll-bandwidth",
            &rf.fll_bandwidth.to_string(),
            "--clock-ppm",
            &rf.clock_ppm.to_string(),
        ]);
        if let Some(sdr) = &rf.sdr {
            cmd.args(["--sdr-tx", &sdr.tx_args, "--sdr-rx", &sdr.rx_args])
                .args(["--center-freq-hz", &sdr.center_freq_hz.to_string()])
                .args(["--tx-gain-db", &sdr.tx_gain_db.to_string()])
                .args(["--rx-gain-db", &sdr.rx_gain_db.to_string()])
                .args(["--symbol-rate", &sdr.symbol_rate_baud.to_string()]);
        }
    }
    // A loop started from a real-time thread (the emulator's direction thread, ACM's MODCOD
    // loops) must not hand SCHED_FIFO or a raised priority on to GNU Radio's threads, which would
    // then compete with the data plane as real-time work.
    // SAFETY: between fork and exec the closure makes two system calls, async-signal-safe, and
    // touches no memory of the parent.
    unsafe {
        cmd.pre_exec(move || {
            let p = libc::sched_param { sched_priority: 0 };
            libc::sched_setscheduler(0, libc::SCHED_OTHER, &p);
            libc::setpriority(libc::PRIO_PROCESS, 0, 0);
            // The frame pipe's read end as FRAMES_FD, kept across exec (dup2 clears
            // close-on-exec, but not when rd already is FRAMES_FD: hence the fcntl).
            if libc::dup2(rd, FRAMES_FD) < 0 || libc::fcntl(FRAMES_FD, libc::F_SETFD, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Nothing is written to stdin: it stays open while the loop lives.
    let child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|e| {
            LoopError::FlowgraphNotRunning(format!(
                "{} {}: {e}",
                cfg.python.display(),
                cfg.script.display()
            ))
        })?;
    // The child has its copy; this one would keep the pipe open after the child's death.
    drop(frames_rd);
    Ok((child, frames_wr))
}

/// Bits (one per byte) packed MSB first.
pub fn pack(bits: &[u8]) -> Vec<u8> {
    bits.chunks(8)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (i, &x)| b | (x << (7 - i)))
        })
        .collect()
}

/// A number unique in this process (socket directories of loops running side by side).
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
