//! The DVB-S2 receiver: PLFRAME synchronisation, PL descrambling, data-aided phase and gain
//! tracking (PLHEADER and pilot blocks), max-log soft demapping, bit deinterleaving, LDPC decoding,
//! BCH decoding, BB descrambling and the comparison with the transmitted BBFRAME.
//!
//! LDPC decoder (`Decoder`): by default our layered offset min-sum, 360 rows at a time
//! (crate::minsum_qc), 3.5-5 times the same decoder row by row (crate::minsum, selectable) and
//! that one about 5 times ldpc-toolbox's best in frames per core; ldpc-toolbox's decoders stay
//! selectable as the reference. Of those, the horizontal layered schedule with the exact sum-product check rule through tanh,
//! in f32 (`HLTanhf32`) is the best. Measured on this machine (8PSK 3/5 short frames at 5.7 dB,
//! 70 frames, at most 50 iterations; frames per CPU second): HLTanhf32 16.6 (no frame error,
//! 15.1 iterations on average), HLPhif64 12.8 (no error), flooding Phif64 4.5 (no error, 28
//! iterations: the layered schedule lets each check see the updates of the checks before it in
//! the same iteration), HLMinstarapproxf32 2.2. HLPhif32 (phi(x) = -ln tanh(x/2) in f32) left 4
//! of 100 frames undecoded at 50 iterations where the others decode them all: its f32 phi loses
//! precision on large messages. Min-sum's loss against sum-product at the waterfall is measured
//! in emulator/README.md ("Waveform-level PER calibration").

use std::time::Instant;

use ldpc_toolbox::decoder::factory::{DecoderFactory, DecoderImplementation};
use ldpc_toolbox::decoder::LdpcDecoder;

use crate::minsum::{CheckRule, MinSum};
use crate::minsum_qc::QcMinSum;

use crate::bch::{Bch, BchResult};
use crate::constellation::{Constellation, C64};
use crate::modcod::ModCod;
use crate::plframe::{self, Layout};

/// Receiver configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub modcod: ModCod,
    pub goldcode: usize,
    /// Complex noise variance per symbol (Es = 1); `None`: estimated per frame from the known
    /// PLHEADER and pilot symbols.
    pub n0: Option<f64>,
    pub max_iterations: usize,
    pub decoder: Decoder,
    /// Unwrap the phase between anchors along the carrier frequency offset tracked across
    /// frames (`Carrier`): needed when a residual offset turns the carrier by more than half a
    /// turn between pilot blocks (1476 symbols apart: offsets above 3.4e-4 cycles per symbol),
    /// as on an RF path. Off for the simulated channel, whose offset is zero.
    pub track_frequency: bool,
}

/// The LDPC decoder a receiver runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decoder {
    /// Layered min-sum with this check rule, 360 rows at a time (crate::minsum_qc).
    MinSum(CheckRule),
    /// The same min-sum one row at a time (crate::minsum), the reference of the one above.
    MinSumRows(CheckRule),
    /// One of ldpc-toolbox's decoders (the reference: HLTanhf32).
    Toolbox(DecoderImplementation),
}

impl Decoder {
    /// `minsum` or `minsum-rows` (with `rule`), or an ldpc-toolbox decoder's name
    /// (`HLTanhf32`, ...).
    pub fn parse(name: &str, rule: CheckRule) -> Result<Self, String> {
        match name {
            "minsum" => Ok(Decoder::MinSum(rule)),
            "minsum-rows" => Ok(Decoder::MinSumRows(rule)),
            _ => name.parse().map(Decoder::Toolbox).map_err(|_| {
                format!(
                    "--decoder {name:?} is neither minsum, minsum-rows nor an ldpc-toolbox decoder (HLTanhf32, ...)"
                )
            }),
        }
    }

    /// The name `parse` takes.
    pub fn name(&self) -> String {
        match self {
            Decoder::MinSum(_) => "minsum".to_string(),
            Decoder::MinSumRows(_) => "minsum-rows".to_string(),
            Decoder::Toolbox(d) => d.to_string(),
        }
    }

    /// The min-sum check rule, if a min-sum decoder.
    pub fn rule(&self) -> Option<CheckRule> {
        match *self {
            Decoder::MinSum(rule) | Decoder::MinSumRows(rule) => Some(rule),
            Decoder::Toolbox(_) => None,
        }
    }

    fn build(&self, h: ldpc_toolbox::sparse::SparseMatrix) -> Box<dyn LdpcDecoder> {
        match *self {
            // Every DVB-S2 code has the 360-row layout (crate::qc tests them all).
            Decoder::MinSum(rule) => Box::new(
                QcMinSum::new(&h, rule).expect("a DVB-S2 code has the quasi-cyclic layout"),
            ),
            Decoder::MinSumRows(rule) => Box::new(MinSum::new(&h, rule)),
            Decoder::Toolbox(d) => d.build_decoder(h),
        }
    }
}

/// What happened to one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct FrameResult {
    pub index: usize,
    /// LDPC parity checks all satisfied.
    pub ldpc_ok: bool,
    pub iterations: usize,
    /// BCH: bits corrected, or `None` when the BCH decoder failed.
    pub bch_corrected: Option<usize>,
    /// Bits of the delivered BBFRAME that differ from the transmitted one.
    pub bit_errors: usize,
    /// The BBFRAME delivered equals the transmitted one.
    pub ok: bool,
    /// Es/N0 estimated from the known symbols (dB).
    pub esn0_est_db: f64,
    /// Seconds spent demapping and decoding this frame.
    pub decode_s: f64,
}

/// The BBFRAME a frame delivers and how the decoder got there.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivered {
    /// The BBFRAME, K_bch bits, one per byte (BB descrambled).
    pub bits: Vec<u8>,
    /// LDPC parity checks all satisfied.
    pub ldpc_ok: bool,
    pub iterations: usize,
    /// BCH: bits corrected, or `None` when the BCH decoder failed.
    pub bch_corrected: Option<usize>,
    /// Es/N0 estimated from the known symbols (dB).
    pub esn0_est_db: f64,
    /// Seconds spent demapping and decoding this frame.
    pub decode_s: f64,
}

/// A receiver for one MODCOD (CCM).
/// How much `y` (90 symbols) looks like the PLHEADER `known`: the magnitudes of its two halves'
/// correlations with the known symbols, summed (any carrier phase, and a carrier offset turning
/// the header by up to half a turn per half), over sqrt(sum |y|^2 90). A noiseless PLHEADER
/// scores 1, one at Es/N0 = 1/N0 about 1/sqrt(1 + N0), noise alone 0.13 +- 0.05.
fn header_likeness(y: &[C64], known: &[C64]) -> f64 {
    let (mut halves, mut e) = ([C64::default(); 2], 0.0);
    for (k, (a, s)) in y[..90].iter().zip(known).enumerate() {
        halves[k / 45] = halves[k / 45] + *a * s.conj();
        e += a.norm2();
    }
    let c = halves[0].norm2().sqrt() + halves[1].norm2().sqrt();
    if e > 0.0 {
        c / (e * 90.0).sqrt()
    } else {
        0.0
    }
}

pub struct Receiver {
    cfg: Config,
    cons: Constellation,
    header: Vec<C64>,
    /// A dummy PLFRAME's PLHEADER (continuous transmission: `dummy_quality`).
    dummy_header: Vec<C64>,
    scrambling: Vec<C64>,
    layout: Layout,
    decoder: Box<dyn LdpcDecoder>,
    bch: Bch,
    frame_len: usize,
    /// Ones of the parity-check matrix (edges of the Tanner graph).
    edges: usize,
    /// The carrier offset across frames (`Config::track_frequency`).
    carrier: Option<Carrier>,
}

/// A frame's symbol energy and complex noise variance per symbol, in the units of the samples
/// (`Receiver::measure`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub es: f64,
    pub n0: f64,
}

/// A phase/gain estimate at a symbol position.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    t: f64,
    corr: C64, // sum of y * conj(s)
    energy: f64,
    /// The second half's correlation times the first half's conjugate: its angle is the
    /// carrier's turn over `half` symbols.
    slope: C64,
    half: usize,
}

impl Receiver {
    pub fn new(cfg: Config) -> Self {
        let mc = cfg.modcod;
        let h = crate::ldpc::parity_check(&mc);
        let edges = (0..h.num_rows()).map(|r| h.row_weight(r)).sum();
        let decoder = cfg.decoder.build(h);
        let frame_len = mc.frame_symbols();
        Receiver {
            cons: Constellation::of(&mc),
            header: plframe::header_symbols(mc.id, plframe::is_short(mc.frame), mc.pilots),
            dummy_header: plframe::dummy_plframe(cfg.goldcode)[..90].to_vec(),
            scrambling: plframe::scrambling(cfg.goldcode, frame_len - 90),
            layout: Layout::of(&mc),
            decoder,
            bch: Bch::new(&mc),
            frame_len,
            edges,
            carrier: cfg.track_frequency.then(Carrier::default),
            cfg,
        }
    }

    pub fn frame_len(&self) -> usize {
        self.frame_len
    }

    /// The noise variance the LLRs use from the next frame on (`None`: estimated per frame);
    /// the PHY loop sets each frame's own N0 when Es/N0 changes per frame.
    pub fn set_n0(&mut self, n0: Option<f64>) {
        self.cfg.n0 = n0;
    }

    /// Edges of the LDPC code's Tanner graph: the work of one decoder iteration.
    pub fn edges(&self) -> usize {
        self.edges
    }

    /// The offset in `iq[..frame_len]` of the first PLHEADER: the offset whose coherent
    /// correlation with the known PLHEADER, in magnitude (any carrier phase; frequency offsets up
    /// to about 1/180 cycle per symbol), summed over the first frames (up to 16) is largest;
    /// returned with that correlation normalised (1 for noiseless frames).
    pub fn find_start(&self, iq: &[C64]) -> (usize, f64) {
        let h = &self.header;
        let len = self.frame_len;
        let mut best = (0usize, 0.0f64);
        for o in 0..len.min(iq.len().saturating_sub(h.len()) + 1) {
            let (mut acc, mut e) = (0.0, 0.0);
            let mut f = 0;
            while f < 16 && o + f * len + h.len() <= iq.len() {
                let y = &iq[o + f * len..o + f * len + h.len()];
                let mut c = C64::default();
                for (a, s) in y.iter().zip(h) {
                    c = c + *a * s.conj();
                    e += a.norm2();
                }
                acc += c.norm2().sqrt();
                f += 1;
            }
            // Normalised: |sum y h*| / sqrt(sum |y|^2 sum |h|^2), averaged over frames.
            let v = if e > 0.0 {
                acc / (e * h.len() as f64 * f as f64).sqrt()
            } else {
                0.0
            };
            if v > best.1 {
                best = (o, v);
            }
        }
        best
    }

    /// How much `y` (90 symbols) looks like this MODCOD's PLHEADER (`header_likeness`).
    pub fn header_quality(&self, y: &[C64]) -> f64 {
        header_likeness(y, &self.header)
    }

    /// How much `y` (90 symbols) looks like a dummy PLFRAME's PLHEADER. A data frame's PLHEADER
    /// shares the SOF with it and scores about 0.36 (the PLS codes differ in at least 32 of 64
    /// bits): tell the two apart by which scores higher.
    pub fn dummy_quality(&self, y: &[C64]) -> f64 {
        header_likeness(y, &self.dummy_header)
    }

    fn anchor(&self, y: &[C64], known: &[C64], t0: usize) -> Anchor {
        let half = known.len() / 2;
        let (mut first, mut second) = (C64::default(), C64::default());
        let mut energy = 0.0;
        for (k, (a, s)) in y.iter().zip(known).enumerate() {
            let c = *a * s.conj();
            if k < half {
                first = first + c;
            } else {
                second = second + c;
            }
            energy += s.norm2();
        }
        Anchor {
            t: t0 as f64 + (known.len() as f64 - 1.0) / 2.0,
            corr: first + second,
            energy,
            slope: second * first.conj(),
            half,
        }
    }

    /// Decodes one PLFRAME `y` (`frame_len` symbols). `next_header`: the following frame's
    /// PLHEADER symbols when present (a phase anchor after the last data symbol). `reference`:
    /// the transmitted BBFRAME, K_bch bits packed MSB first.
    pub fn decode(
        &mut self,
        index: usize,
        y: &[C64],
        next_header: Option<&[C64]>,
        reference: &[u8],
    ) -> FrameResult {
        let d = self.decode_bbframe(y, next_header);
        let bit_errors = d
            .bits
            .iter()
            .enumerate()
            .filter(|&(i, &b)| b != (reference[i / 8] >> (7 - i % 8)) & 1)
            .count();
        FrameResult {
            index,
            ldpc_ok: d.ldpc_ok,
            iterations: d.iterations,
            bch_corrected: d.bch_corrected,
            bit_errors,
            ok: bit_errors == 0 && d.bch_corrected.is_some(),
            esn0_est_db: d.esn0_est_db,
            decode_s: d.decode_s,
        }
    }

    /// Decodes one PLFRAME `y` (`frame_len` symbols) into the BBFRAME it delivers;
    /// `next_header` as in `decode`.
    pub fn decode_bbframe(&mut self, y: &[C64], next_header: Option<&[C64]>) -> Delivered {
        let t_start = Instant::now();
        let mc = self.cfg.modcod;
        // Descrambled body (data + pilots).
        let body: Vec<C64> = y[90..]
            .iter()
            .zip(&self.scrambling)
            .map(|(a, s)| *a * s.conj())
            .collect();
        let track = self.track(y, &body, next_header);
        let n0_est = self.residual(y, &body, &track, true);
        let n0 = match self.cfg.n0 {
            Some(n0) => n0 / (track.gain * track.gain),
            None => n0_est,
        };
        // Soft demapping.
        let m = mc.modulation.bits();
        let mut sym_llrs = vec![0.0f64; mc.frame.nldpc()];
        for (i, &p) in self.layout.data.iter().enumerate() {
            let r = track.correct(body[p], 90 + p);
            self.cons.llr(r, n0, &mut sym_llrs[i * m..(i + 1) * m]);
        }
        let llrs = plframe::deinterleave(&mc, &sym_llrs);
        let (ldpc_ok, out) = match self.decoder.decode(&llrs, self.cfg.max_iterations) {
            Ok(o) => (true, o),
            Err(o) => (false, o),
        };
        let mut word = out.codeword[..mc.nbch].to_vec();
        let bch_corrected = match self.bch.decode(&mut word) {
            BchResult::Corrected(n) => Some(n),
            BchResult::Failed => None,
        };
        if let Some(c) = &mut self.carrier {
            c.learn(track.slope(), bch_corrected.is_some());
        }
        let mut bits = word[..mc.kbch].to_vec();
        plframe::bb_descramble(&mut bits);
        Delivered {
            bits,
            ldpc_ok,
            iterations: out.iterations,
            bch_corrected,
            esn0_est_db: -10.0 * n0_est.log10(),
            decode_s: t_start.elapsed().as_secs_f64(),
        }
    }

    /// Gain and phase along the frame from its known symbols: the PLHEADER, every pilot block
    /// and the next frame's PLHEADER when given.
    fn track(&mut self, y: &[C64], body: &[C64], next_header: Option<&[C64]>) -> Track {
        let mut anchors = vec![self.anchor(&y[..90], &self.header, 0)];
        let pilot_block = [PILOT; 36];
        for &p in &self.layout.pilots {
            anchors.push(self.anchor(&body[p..p + 36], &pilot_block, 90 + p));
        }
        if let Some(nh) = next_header {
            anchors.push(self.anchor(nh, &self.header, self.frame_len));
        }
        let omega = self.carrier.as_mut().map_or(0.0, |c| c.predict(&anchors));
        Track::new(&anchors, omega)
    }

    /// The frame's symbol energy and noise as they arrive, before any decoding (the PHY loop's
    /// per-frame noise top-up behind the RF path, whose front end's gain is unknown): the gain
    /// from the known symbols' correlation (EN 302 307-1 section 5.5.2 PLHEADER, section 5.5.3
    /// pilot blocks), the noise from their residual once gain and phase are taken out. Only the
    /// pilot blocks when `with_header` is false (the PLHEADER already carries added noise).
    /// Does not move the carrier tracking: its current prediction unwraps the phases.
    pub fn measure(&self, y: &[C64], with_header: bool) -> Measured {
        let body: Vec<C64> = y[90..]
            .iter()
            .zip(&self.scrambling)
            .map(|(a, s)| *a * s.conj())
            .collect();
        let mut anchors = Vec::new();
        if with_header || self.layout.pilots.is_empty() {
            anchors.push(self.anchor(&y[..90], &self.header, 0));
        }
        let pilot_block = [PILOT; 36];
        for &p in &self.layout.pilots {
            anchors.push(self.anchor(&body[p..p + 36], &pilot_block, 90 + p));
        }
        let omega = self
            .carrier
            .as_ref()
            .and_then(Carrier::peek)
            .unwrap_or_else(|| coarse(&anchors));
        let track = Track::new(&anchors, omega);
        let header = with_header || self.layout.pilots.is_empty();
        let es = track.gain * track.gain;
        Measured {
            es,
            n0: es * self.residual(y, &body, &track, header),
        }
    }

    /// Noise power per symbol: the mean residual on the known symbols once corrected (the pilot
    /// blocks, and the PLHEADER when `header`).
    fn residual(&self, y: &[C64], body: &[C64], track: &Track, header: bool) -> f64 {
        let mut resid = 0.0;
        let mut nknown = 0usize;
        if header {
            for (k, s) in self.header.iter().enumerate() {
                resid += (track.correct(y[k], k) - *s).norm2();
                nknown += 1;
            }
        }
        for &p in &self.layout.pilots {
            for (k, b) in body.iter().enumerate().skip(p).take(36) {
                resid += (track.correct(*b, 90 + k) - PILOT).norm2();
                nknown += 1;
            }
        }
        (resid / nknown as f64).max(1e-12)
    }
}

/// The carrier offset tracked from frame to frame, for unwrapping the phase between pilot
/// blocks. Acquisition: each frame's coarse estimate (`coarse`, from the phase turn inside each
/// known block) is averaged over the frames so far with a forgetting factor of 0.9 (about ten
/// frames), because one frame's is too noisy near the waterfall (at Es/N0 2 dB its standard
/// deviation is close to the 2.1e-3 rad per symbol that unwrapping tolerates). Lock: a frame
/// that BCH decodes was unwrapped right, so the least-squares slope of its phases, accurate to
/// about 1e-4 rad per symbol at any Es/N0 where frames decode, becomes the prediction (half of
/// each new frame's difference is taken, to follow drift). Eight frames in a row that do not
/// decode drop the lock and acquisition starts again (a drift beyond the lock, or a fade).
#[derive(Debug, Default)]
struct Carrier {
    coarse_sum: f64,
    coarse_weight: f64,
    locked: Option<f64>,
    failures: u32,
}

impl Carrier {
    /// The offset to unwrap this frame's anchors with.
    fn predict(&mut self, anchors: &[Anchor]) -> f64 {
        self.coarse_sum = 0.9 * self.coarse_sum + coarse(anchors);
        self.coarse_weight = 0.9 * self.coarse_weight + 1.0;
        self.locked.unwrap_or(self.coarse_sum / self.coarse_weight)
    }

    /// The offset the next frame would be unwrapped with, without taking a frame in: the lock,
    /// else the coarse average (None before any frame).
    fn peek(&self) -> Option<f64> {
        self.locked
            .or_else(|| (self.coarse_weight > 0.0).then(|| self.coarse_sum / self.coarse_weight))
    }

    /// After the frame: its phases' slope, and whether it decoded.
    fn learn(&mut self, slope: f64, decoded: bool) {
        if decoded {
            self.failures = 0;
            self.locked = Some(match self.locked {
                Some(o) => o + 0.5 * (slope - o),
                None => slope,
            });
        } else {
            self.failures += 1;
            if self.failures >= 8 {
                self.locked = None;
            }
        }
    }
}

/// One frame's carrier offset, radians per symbol, from the anchors' half-block slopes: each
/// slope's angle over its half length, weighted by |slope| half^2 (the inverse of its variance,
/// up to a constant, at a given SNR). Unambiguous up to 1/90 cycle per symbol (the PLHEADER's
/// halves are 45 symbols apart).
fn coarse(anchors: &[Anchor]) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for a in anchors {
        let h = a.half as f64;
        let w = a.slope.norm2().sqrt() * h * h;
        num += w * a.slope.arg() / h;
        den += w;
    }
    if den > 0.0 {
        num / den
    } else {
        0.0
    }
}

/// A pilot symbol: (1 + j) / sqrt(2).
const PILOT: C64 = C64 {
    re: std::f64::consts::FRAC_1_SQRT_2,
    im: std::f64::consts::FRAC_1_SQRT_2,
};

/// The frame's gain (from every known symbol) and its phase, unwrapped along the frame and
/// interpolated linearly between anchors.
struct Track {
    gain: f64,
    /// (symbol time, phase in radians), in time order.
    phases: Vec<(f64, f64)>,
    /// The carrier offset the phases were unwrapped with, radians per symbol: the phase turns
    /// at this rate before the first anchor and after the last (0 without `track_frequency`).
    omega: f64,
}

impl Track {
    /// Each anchor's phase unwrapped to the one closest to the previous anchor's turned by
    /// `omega` (the carrier offset, radians per symbol) over the distance between them.
    fn new(anchors: &[Anchor], omega: f64) -> Self {
        let (corr_all, e_all) = anchors.iter().fold((0.0, 0.0), |(c, e), a| {
            (c + a.corr.norm2().sqrt(), e + a.energy)
        });
        let gain = (corr_all / e_all).max(1e-12);
        let mut phases: Vec<(f64, f64)> = Vec::with_capacity(anchors.len());
        for a in anchors {
            let mut ph = a.corr.arg();
            if let Some(&(t_prev, prev)) = phases.last() {
                let tau = std::f64::consts::TAU;
                let predicted = prev + omega * (a.t - t_prev);
                ph += tau * ((predicted - ph) / tau).round();
            }
            phases.push((a.t, ph));
        }
        Track {
            gain,
            phases,
            omega,
        }
    }

    /// The least-squares slope of the unwrapped phases, radians per symbol.
    fn slope(&self) -> f64 {
        let n = self.phases.len() as f64;
        let (mt, mp) = self
            .phases
            .iter()
            .fold((0.0, 0.0), |(a, b), &(t, p)| (a + t / n, b + p / n));
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for &(t, p) in &self.phases {
            sxy += (t - mt) * (p - mp);
            sxx += (t - mt) * (t - mt);
        }
        if sxx > 0.0 {
            sxy / sxx
        } else {
            0.0
        }
    }

    fn phase_at(&self, t: f64) -> f64 {
        let phases = &self.phases;
        if t <= phases[0].0 || phases.len() == 1 {
            return phases[0].1 + self.omega * (t - phases[0].0);
        }
        let i = phases.partition_point(|&(x, _)| x <= t);
        if i >= phases.len() {
            let (x, p) = phases[phases.len() - 1];
            return p + self.omega * (t - x);
        }
        let (x0, p0) = phases[i - 1];
        let (x1, p1) = phases[i];
        p0 + (p1 - p0) * (t - x0) / (x1 - x0)
    }

    /// Symbol `r` at frame position `k` with the gain and phase taken out.
    fn correct(&self, r: C64, k: usize) -> C64 {
        r * C64::polar(1.0 / self.gain, -self.phase_at(k as f64).to_degrees())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dummy_header_and_a_data_header_are_told_apart() {
        let mc = ModCod::new(12, crate::FrameSize::Short, true).unwrap();
        let rx = Receiver::new(Config {
            modcod: mc,
            goldcode: 0,
            n0: None,
            max_iterations: 50,
            decoder: Decoder::MinSum(crate::minsum::DEFAULT_RULE),
            track_frequency: false,
        });
        let data = plframe::header_symbols(12, true, true);
        let dummy = &plframe::dummy_plframe(0)[..90];
        // A carrier phase changes nothing (magnitudes of the correlations).
        let turn = C64::new(0.6, 0.8);
        let data: Vec<C64> = data.iter().map(|&s| s * turn).collect();
        assert!((rx.header_quality(&data) - 1.0).abs() < 1e-9);
        assert!((rx.dummy_quality(dummy) - 1.0).abs() < 1e-9);
        // The shared SOF: each scores about 0.36 as the other kind, below its own 1.
        let (cross_a, cross_b) = (rx.dummy_quality(&data), rx.header_quality(dummy));
        assert!((0.25..0.5).contains(&cross_a), "{cross_a}");
        assert!((0.25..0.5).contains(&cross_b), "{cross_b}");
    }

    /// Anchors of a noiseless carrier turning `omega` radians per symbol: a 90-symbol block at
    /// 0 and 36-symbol blocks every 1476 symbols.
    fn anchors(omega: f64) -> Vec<Anchor> {
        let block = |t0: f64, len: usize| {
            let half = len / 2;
            let at = |k: f64| C64::polar(1.0, (omega * k).to_degrees());
            let sum = |from: usize, to: usize| {
                (from..to).fold(C64::default(), |c, k| c + at(t0 + k as f64))
            };
            let (first, second) = (sum(0, half), sum(half, len));
            Anchor {
                t: t0 + (len as f64 - 1.0) / 2.0,
                corr: first + second,
                energy: len as f64,
                slope: second * first.conj(),
                half,
            }
        };
        let mut a = vec![block(0.0, 90)];
        a.extend((1..6).map(|i| block(90.0 + 1476.0 * i as f64 - 36.0, 36)));
        a
    }

    #[test]
    fn the_coarse_estimate_reads_the_turn_inside_the_blocks() {
        let omega = std::f64::consts::TAU * 3e-3;
        assert!((coarse(&anchors(omega)) - omega).abs() < 1e-9);
    }

    #[test]
    fn the_carrier_locks_on_a_decoded_frame_and_lets_go_after_eight_failures() {
        let omega = std::f64::consts::TAU * 3e-3;
        let a = anchors(omega);
        let mut c = Carrier::default();
        assert!(
            (c.predict(&a) - omega).abs() < 1e-9,
            "acquisition: the coarse estimate"
        );
        let track = Track::new(&a, omega);
        assert!(
            (track.slope() - omega).abs() < 1e-9,
            "unwrapped along the offset"
        );
        c.learn(omega + 1e-4, true);
        assert_eq!(c.locked, Some(omega + 1e-4));
        assert_eq!(
            c.predict(&a),
            omega + 1e-4,
            "locked: the decoded frames' slope"
        );
        c.learn(omega, true);
        assert!(
            (c.locked.unwrap() - (omega + 0.5e-4)).abs() < 1e-12,
            "half of each step"
        );
        for _ in 0..7 {
            c.learn(0.0, false);
        }
        assert!(c.locked.is_some(), "seven failures keep the lock (a fade)");
        c.learn(0.0, false);
        assert_eq!(c.locked, None, "the eighth drops it");
    }

    #[test]
    fn without_tracking_the_phase_is_unwrapped_to_the_nearest_turn() {
        // 3e-3 cycles per symbol turns 4.4 times between pilot blocks: unwrapped to the
        // nearest turn, the slope comes out wrong (the reason for track_frequency).
        let omega = std::f64::consts::TAU * 3e-3;
        let track = Track::new(&anchors(omega), 0.0);
        assert!((track.slope() - omega).abs() > 1e-3);
    }
}
