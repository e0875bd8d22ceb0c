//! The waveform channel: every BBFRAME of a forward link really encoded, modulated, passed
//! through AWGN at its own Es/N0 and decoded (the emulator's `kind: dvbs2_waveform`).
//!
//! ACM changes the MODCOD from one frame to the next, while a gr-dtv flowgraph is built for one
//! MODCOD (crate::phy_loop): the channel keeps one `PhyLoop` per MODCOD in use, started on that
//! MODCOD's first frame (0.25-1.3 s) and kept, each in per-frame Es/N0 mode (crate::awgn). Frames
//! come back in the order they were submitted, whatever loop carried them: each loop returns its
//! own frames in order, so the oldest frame overall is the oldest of its loop.
//!
//! The ceiling: the loop's frame rate (flowgraph and decoder on this machine's cores) bounds
//! the symbol rate a link may run in this mode: `check_ceiling` refuses a symbol rate whose
//! frames of a MODCOD arrive faster than the loop sustained them one at a time in
//! `satlab-phy --loop-bench --one-at-a-time` (the emulator's use, `decode_one`).

use std::collections::{BTreeMap, VecDeque};

use crate::modcod::{FrameSize, ModCod, Modulation};
use crate::phy_loop::{LoopConfig, LoopError, LoopFrame, PhyLoop, RfPath};
use crate::receiver::Decoder;

/// What every loop of a waveform channel shares.
#[derive(Debug, Clone)]
pub struct WaveformConfig {
    pub frame: FrameSize,
    pub pilots: bool,
    /// Noise seed of the first loop; each further MODCOD's loop takes the next one.
    pub seed: u32,
    pub goldcode: u32,
    pub max_iterations: usize,
    pub decoder: Decoder,
    /// Frames in flight per loop (crate::phy_loop: 2 or more keeps the decoder busy).
    pub in_flight: usize,
    /// The RF path (or an SDR pair) instead of the symbol-level channel; each frame's noise is
    /// then topped up after the front end from its measured energy (crate::phy_loop).
    pub rf: Option<RfPath>,
}

impl WaveformConfig {
    /// The loop defaults (crate::phy_loop::LoopConfig::new) for `frame` and `pilots`.
    pub fn new(frame: FrameSize, pilots: bool) -> Self {
        let d = LoopConfig::new(
            ModCod::new(4, frame, pilots).expect("QPSK 1/2 has both frame sizes"),
            0.0,
        );
        WaveformConfig {
            frame,
            pilots,
            seed: d.seed,
            goldcode: d.goldcode,
            max_iterations: d.max_iterations,
            decoder: d.decoder,
            in_flight: d.in_flight,
            rf: None,
        }
    }
}

/// One frame back from the channel.
#[derive(Debug, Clone, PartialEq)]
pub struct WaveformFrame {
    /// The number `submit` returned (one sequence over every MODCOD).
    pub seq: u64,
    pub modcod_id: u32,
    /// The loop's result: the delivered BBFRAME or the erasure, Es/N0, iterations, times.
    pub frame: LoopFrame,
}

/// One loop per MODCOD in use; frames in submission order.
pub struct WaveformChannel {
    cfg: WaveformConfig,
    loops: BTreeMap<u32, PhyLoop>,
    /// (seq, MODCOD) of every frame submitted and not yet returned, oldest first.
    order: VecDeque<(u64, u32)>,
    next_seq: u64,
}

impl WaveformChannel {
    pub fn new(cfg: WaveformConfig) -> Self {
        WaveformChannel {
            cfg,
            loops: BTreeMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
        }
    }

    /// MODCODs whose loop runs.
    pub fn modcods_started(&self) -> Vec<u32> {
        self.loops.keys().copied().collect()
    }

    /// Frames submitted and not yet returned.
    pub fn outstanding(&self) -> usize {
        self.order.len()
    }

    /// Sends one BBFRAME (K_bch / 8 bytes of MODCOD `modcod_id`) through the channel at
    /// `esn0_db`; starts that MODCOD's loop if it is the first frame with it.
    pub fn submit(
        &mut self,
        modcod_id: u32,
        esn0_db: f64,
        bbframe: &[u8],
    ) -> Result<u64, LoopError> {
        self.loop_for(modcod_id)?.submit_at(bbframe, esn0_db)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back((seq, modcod_id));
        Ok(seq)
    }

    /// Starts the loop of MODCOD `modcod_id` now if it does not run (0.25-1.3 s) and passes one
    /// frame of zeros through it, so that its first frame waits neither for the start nor for
    /// the stream's first samples and synchronisation (a few hundred ms more the first time).
    pub fn start_loop(&mut self, modcod_id: u32) -> Result<(), LoopError> {
        if self.loops.contains_key(&modcod_id) {
            return Ok(());
        }
        let lp = self.loop_for(modcod_id)?;
        let zeros = vec![0u8; lp.config().modcod.kbch / 8];
        lp.submit_flushed_at(&zeros, crate::awgn::BASE_ESN0_DB)?;
        lp.next_frame().map(|_| ())
    }

    /// Sends one BBFRAME and waits for its decoding: the synchronous use, one frame at a time
    /// (the emulator's direction thread). A filler frame pushed with it brings out its last
    /// samples and the PLHEADER after it at once (crate::phy_loop::PhyLoop::submit_flushed_at),
    /// where waiting for the next frame would cost the loop's 20 ms flush timeout per frame.
    pub fn decode_one(
        &mut self,
        modcod_id: u32,
        esn0_db: f64,
        bbframe: &[u8],
    ) -> Result<WaveformFrame, LoopError> {
        if !self.order.is_empty() {
            return Err(LoopError::Unsupported(format!(
                "decode_one() with {} frames outstanding: use next_frame()",
                self.order.len()
            )));
        }
        self.loop_for(modcod_id)?
            .submit_flushed_at(bbframe, esn0_db)?;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.push_back((seq, modcod_id));
        self.next_frame()
    }

    /// The oldest outstanding frame, decoded (waits for it).
    pub fn next_frame(&mut self) -> Result<WaveformFrame, LoopError> {
        let Some((seq, modcod_id)) = self.order.pop_front() else {
            return Err(LoopError::Unsupported(
                "next_frame() with no frame submitted".into(),
            ));
        };
        let lp = self
            .loops
            .get_mut(&modcod_id)
            .expect("a submitted frame's loop runs");
        let frame = lp.next_frame()?;
        Ok(WaveformFrame {
            seq,
            modcod_id,
            frame,
        })
    }

    /// Frames of every loop whose link noise was already above their target Es/N0 (RF path or
    /// SDR only: `PhyLoop::fade_floor_frames`): the fade was shallower than asked for them.
    pub fn fade_floor_frames(&self) -> u64 {
        self.loops.values().map(PhyLoop::fade_floor_frames).sum()
    }

    fn loop_for(&mut self, modcod_id: u32) -> Result<&mut PhyLoop, LoopError> {
        if !self.loops.contains_key(&modcod_id) {
            let mc = ModCod::new(modcod_id, self.cfg.frame, self.cfg.pilots)
                .map_err(LoopError::Unsupported)?;
            let mut lc = LoopConfig::new(mc, 0.0);
            lc.per_frame_esn0 = true;
            lc.seed = self.cfg.seed.wrapping_add(self.loops.len() as u32);
            lc.goldcode = self.cfg.goldcode;
            lc.max_iterations = self.cfg.max_iterations;
            lc.decoder = self.cfg.decoder;
            lc.in_flight = self.cfg.in_flight;
            lc.rf = self.cfg.rf.clone();
            self.loops.insert(modcod_id, PhyLoop::start(lc)?);
        }
        Ok(self.loops.get_mut(&modcod_id).expect("inserted above"))
    }
}

/// Frames per second the PHY loop sustained per modulation and frame size in the emulator's
/// synchronous use, one frame at a time (`decode_one`): the lowest `satlab-phy --loop-bench
/// --one-at-a-time` figure of crates/dvbs2phy/README.md over four runs, the last two with two
/// loops at once on the 2 cores (load 4), pilots, 0.2-1 dB above QEF (the frames reach the
/// flowgraph through a pipe: phy_loop.rs `spawn`). Pipelined (4 frames in flight) the loop does
/// more, but the emulator needs each frame's verdict when it ends.
pub fn ceiling_frames_per_s(modulation: Modulation, frame: FrameSize) -> f64 {
    match (frame, modulation) {
        (FrameSize::Normal, Modulation::Qpsk) => 62.0,
        (FrameSize::Normal, Modulation::Psk8) => 69.0,
        (FrameSize::Normal, Modulation::Apsk16) => 84.0,
        (FrameSize::Normal, Modulation::Apsk32) => 117.0,
        (FrameSize::Short, Modulation::Qpsk) => 262.0,
        (FrameSize::Short, Modulation::Psk8) => 295.0,
        (FrameSize::Short, Modulation::Apsk16) => 376.0,
        (FrameSize::Short, Modulation::Apsk32) => 429.0,
    }
}

/// The same on the RF path (`satlab-phy --loop-bench --one-at-a-time --rf`, sps 4, roll-off
/// 0.2, per-frame Es/N0, 100 frames, Es/N0 as above): the lowest of three runs per row, two
/// of them with two loops at once on the 2 cores (load 2.5-4), crates/dvbs2phy/README.md "The
/// waveform channel". The interpolator, gr-channels and the timing loop run at 4 samples per symbol on
/// the same cores: 35-60 % of the symbol-level ceiling. With an SDR pair the radios replace
/// gr-channels; not measured (no hardware): this ceiling is assumed.
pub fn rf_ceiling_frames_per_s(modulation: Modulation, frame: FrameSize) -> f64 {
    match (frame, modulation) {
        (FrameSize::Normal, Modulation::Qpsk) => 23.8,
        (FrameSize::Normal, Modulation::Psk8) => 30.9,
        (FrameSize::Normal, Modulation::Apsk16) => 41.0,
        (FrameSize::Normal, Modulation::Apsk32) => 47.7,
        (FrameSize::Short, Modulation::Qpsk) => 98.3,
        (FrameSize::Short, Modulation::Psk8) => 115.2,
        (FrameSize::Short, Modulation::Apsk16) => 136.0,
        (FrameSize::Short, Modulation::Apsk32) => 195.7,
    }
}

/// The ceiling of the symbol-level loop, or of the RF path's when `rf`.
fn ceiling_on(rf: bool, mc: &ModCod) -> f64 {
    if rf {
        rf_ceiling_frames_per_s(mc.modulation, mc.frame)
    } else {
        ceiling_frames_per_s(mc.modulation, mc.frame)
    }
}

/// The highest symbol rate whose frames of `mc` the loop keeps up with, baud.
pub fn ceiling_baud(mc: &ModCod) -> f64 {
    ceiling_baud_on(false, mc)
}

/// The same for the symbol-level loop or, when `rf`, the RF path.
pub fn ceiling_baud_on(rf: bool, mc: &ModCod) -> f64 {
    ceiling_on(rf, mc) * mc.frame_symbols() as f64
}

/// A symbol rate above the ceiling: the configuration field and why (`Display`: "field: why").
#[derive(Debug, Clone, PartialEq)]
pub struct CeilingExceeded {
    pub field: String,
    pub reason: String,
}

impl std::fmt::Display for CeilingExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// Refuses `symbol_rate_baud` (named `field` in the error) when frames of `mc` at that rate
/// would come faster than the loop's ceiling: the decoder would fall behind without bound.
pub fn check_ceiling(
    field: &str,
    symbol_rate_baud: f64,
    mc: &ModCod,
) -> Result<(), CeilingExceeded> {
    check_ceiling_on(false, field, symbol_rate_baud, mc)
}

/// `check_ceiling` for the symbol-level loop or, when `rf`, the RF path's lower ceiling.
pub fn check_ceiling_on(
    rf: bool,
    field: &str,
    symbol_rate_baud: f64,
    mc: &ModCod,
) -> Result<(), CeilingExceeded> {
    let ceiling = ceiling_on(rf, mc);
    let frames_per_s = symbol_rate_baud / mc.frame_symbols() as f64;
    if frames_per_s > ceiling {
        return Err(CeilingExceeded {
            field: field.to_string(),
            reason: format!(
                "{symbol_rate_baud} baud with {} is {frames_per_s:.0} frames/s, above the PHY \
                 loop's ceiling of {ceiling} frames/s for {} {:?} frames{} (at most {:.0} baud)",
                mc.label(),
                mc.modulation.name(),
                mc.frame,
                if rf { " on the RF path" } else { "" },
                ceiling_baud_on(rf, mc)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_names_the_field_and_the_limit() {
        let mc = ModCod::new(4, FrameSize::Normal, true).unwrap();
        let limit = 62.0 * mc.frame_symbols() as f64;
        assert!(check_ceiling("forward.symbol_rate_baud", limit, &mc).is_ok());
        let e = check_ceiling("forward.symbol_rate_baud", limit * 1.01, &mc).unwrap_err();
        assert_eq!(e.field, "forward.symbol_rate_baud");
        assert!(e.reason.contains(&format!("{limit:.0} baud")), "{e}");
        // The RF path's ceiling is lower, and said.
        let rf = 23.8 * mc.frame_symbols() as f64;
        assert!(check_ceiling_on(true, "forward.symbol_rate_baud", rf, &mc).is_ok());
        let e = check_ceiling_on(true, "forward.symbol_rate_baud", rf + 1.0, &mc).unwrap_err();
        assert!(
            e.reason.contains("on the RF path") && e.reason.contains(&format!("{rf:.0} baud")),
            "{e}"
        );
    }
}
