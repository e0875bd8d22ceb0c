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
pub struct Receiver {
    cfg: Config,
    cons: Constellation,
    header: Vec<C64>,
    scrambling: Vec<C64>,
    layout: Layout,
    decoder: Box<dyn LdpcDecoder>,
    bch: Bch,
    frame_len: usize,
    /// Ones of the parity-check matrix (edges of the Tanner graph).
    edges: usize,
}

/// A phase/gain estimate at a symbol position.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    t: f64,
    corr: C64, // sum of y * conj(s)
    energy: f64,
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
            scrambling: plframe::scrambling(cfg.goldcode, frame_len - 90),
            layout: Layout::of(&mc),
            decoder,
            bch: Bch::new(&mc),
            frame_len,
            edges,
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

    fn anchor(&self, y: &[C64], known: &[C64], t0: usize) -> Anchor {
        let mut corr = C64::default();
        let mut energy = 0.0;
        for (a, s) in y.iter().zip(known) {
            corr = corr + *a * s.conj();
            energy += s.norm2();
        }
        Anchor {
            t: t0 as f64 + (known.len() as f64 - 1.0) / 2.0,
            corr,
            energy,
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
        let n0_est = self.noise(y, &body, &track);
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
    fn track(&self, y: &[C64], body: &[C64], next_header: Option<&[C64]>) -> Track {
        let mut anchors = vec![self.anchor(&y[..90], &self.header, 0)];
        let pilot_block = [PILOT; 36];
        for &p in &self.layout.pilots {
            anchors.push(self.anchor(&body[p..p + 36], &pilot_block, 90 + p));
        }
        if let Some(nh) = next_header {
            anchors.push(self.anchor(nh, &self.header, self.frame_len));
        }
        Track::new(&anchors)
    }

    /// Noise power per symbol: the residual on the frame's known symbols once corrected.
    fn noise(&self, y: &[C64], body: &[C64], track: &Track) -> f64 {
        let mut resid = 0.0;
        let mut nknown = 0usize;
        for (k, s) in self.header.iter().enumerate() {
            resid += (track.correct(y[k], k) - *s).norm2();
            nknown += 1;
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
}

impl Track {
    fn new(anchors: &[Anchor]) -> Self {
        let (corr_all, e_all) = anchors.iter().fold((0.0, 0.0), |(c, e), a| {
            (c + a.corr.norm2().sqrt(), e + a.energy)
        });
        let gain = (corr_all / e_all).max(1e-12);
        let mut phases: Vec<(f64, f64)> = Vec::with_capacity(anchors.len());
        for a in anchors {
            let mut ph = a.corr.arg();
            if let Some(&(_, prev)) = phases.last() {
                let tau = std::f64::consts::TAU;
                ph += tau * ((prev - ph) / tau).round();
            }
            phases.push((a.t, ph));
        }
        Track { gain, phases }
    }

    fn phase_at(&self, t: f64) -> f64 {
        let phases = &self.phases;
        if t <= phases[0].0 || phases.len() == 1 {
            return phases[0].1;
        }
        let i = phases.partition_point(|&(x, _)| x <= t);
        if i >= phases.len() {
            return phases[phases.len() - 1].1;
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
