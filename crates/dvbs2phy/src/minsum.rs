//! A fast LDPC decoder for the DVB-S2 codes: layered min-sum in f32, offset or normalised.
//!
//! Check rule: the min-sum approximation of the sum-product rule with its magnitude corrected,
//! `max(scale x min - offset, 0)`, where min is the smallest magnitude of the check's other
//! incoming messages and the sign is the product of their signs: the normalised (scale < 1,
//! offset 0) and offset (scale 1, offset > 0) BP-based algorithms of Chen and Fossorier, "Near
//! optimum universal belief propagation based decoding of low-density parity check codes", IEEE
//! Trans. Commun. 50(3), 2002. Schedule: horizontal layered, one check row at a time in the
//! matrix's order (Hocevar, "A reduced complexity decoder architecture via layered decoding of
//! LDPC codes", SiPS 2004), so a check sees the updates of the checks before it in the same
//! iteration; in DVB-S2's row order that also runs the accumulator's staircase (row r holds the
//! parity bits r - 1 and r, EN 302 307-1 5.3.2) front to back in one pass. Early stop: the hard
//! decisions satisfy every check (tested on the channel LLRs and after each iteration).
//!
//! Default rule: offset min-sum, offset 0.4 (LLR units: the receiver's LLRs are true
//! log-likelihood ratios, scaled by the channel's N0). Measured on the waveform chain: the
//! normalised rule with the usual factor 0.75 leaves runs of wrong parity bits of the
//! accumulator (degree-2 bits: a run leaves only the two checks at its ends unsatisfied, and
//! every hop along it shrinks the message by the factor) that 50 iterations do not clear:
//! 8PSK 3/5 short frames at EN 302 307-1 Table 13 QEF + 0.3 dB lost 6 of 60 frames (47.9
//! iterations on average) where ldpc-toolbox's sum-product decoder lost none (11); factor 0.8:
//! no loss, 26.6 iterations; offset 0.4: no loss, 14.7 iterations. On the normal-frame rate
//! 1/2 code (BPSK, 20 frames at the waterfall) factor 0.8 left 6 frames undecoded, offset 0.4
//! none. `satlab-phy --minsum-scale/--minsum-offset` and `satlab phy calibrate` expose both;
//! the loss against sum-product is measured in emulator/README.md.
//!
//! Layout for the CPU: the edges are stored check-major (one contiguous run of 16-bit bit
//! indices per row), what each check last sent compressed to two magnitudes, the position of
//! the smaller and a sign bit per edge (min-sum sends nothing else), the posterior LLRs in one
//! f32 array. About 6-8 ns per edge and iteration on this (shared) machine against 34 for
//! ldpc-toolbox's HLTanhf32 (emulator/README.md, "Waveform-level PER calibration"). The
//! receiver's default is the same decoder 360 rows at a time (crate::minsum_qc, 4-5 times
//! faster); this one, `--decoder minsum-rows`, is its reference.

use ldpc_toolbox::decoder::{DecoderOutput, LdpcDecoder};
use ldpc_toolbox::sparse::SparseMatrix;

/// How a check corrects the min-sum magnitude: `max(scale x min - offset, 0)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CheckRule {
    /// Normalisation factor, (0, 1].
    pub scale: f32,
    /// Offset, LLR units, >= 0.
    pub offset: f32,
}

/// The default rule, offset min-sum (why: module documentation).
pub const DEFAULT_RULE: CheckRule = CheckRule {
    scale: 1.0,
    offset: 0.4,
};

/// Posterior LLRs are kept within +-LLR_MAX: on frames that do not converge the messages of a
/// consistent subgraph grow by about the column degree per iteration and would reach
/// infinity (then NaN) within the 50 iterations.
pub(crate) const LLR_MAX: f32 = 1.0e6;

/// What a check row last sent, compressed (min-sum sends only two magnitudes): edge
/// i of the row got `second` if i == `at`, else `first`, with sign bit i of `signs`.
#[derive(Debug, Clone, Copy, Default)]
struct RowMessages {
    first: f32,
    second: f32,
    at: u32,
    signs: u32,
}

impl RowMessages {
    fn message(&self, i: usize) -> f32 {
        let mag = if i == self.at as usize {
            self.second
        } else {
            self.first
        };
        f32::from_bits(mag.to_bits() | ((self.signs >> i) & 1) << 31)
    }
}

/// The decoder's state for one code (allocated once, reused for every frame).
#[derive(Debug, Clone)]
pub struct MinSum {
    /// Row r's edges are `row_start[r]..row_start[r + 1]`.
    row_start: Vec<u32>,
    /// The bit (column) of each edge (DVB-S2 codewords have at most 64800 bits).
    cols: Vec<u16>,
    /// Check-to-bit messages of each row.
    sent: Vec<RowMessages>,
    /// Posterior LLR of each bit (positive: bit 0, ldpc-toolbox's convention).
    llr: Vec<f32>,
    /// One row's bit-to-check messages (scratch).
    row: Vec<f32>,
    rule: CheckRule,
}

impl MinSum {
    /// A decoder for the parity-check matrix `h` (at most 65536 columns and 32 ones per row,
    /// as every DVB-S2 code) with the check rule `rule`.
    pub fn new(h: &SparseMatrix, rule: CheckRule) -> Self {
        assert!(h.num_cols() <= 1 << 16, "at most 65536 codeword bits");
        let mut row_start = Vec::with_capacity(h.num_rows() + 1);
        let mut cols = Vec::new();
        let mut max_row = 0;
        row_start.push(0);
        for r in 0..h.num_rows() {
            let before = cols.len();
            let mut row: Vec<u16> = h.iter_row(r).map(|&c| c as u16).collect();
            row.sort_unstable();
            cols.extend(row);
            max_row = max_row.max(cols.len() - before);
            row_start.push(cols.len() as u32);
        }
        assert!(
            max_row <= 32,
            "at most 32 ones per row (the sign bits of a u32)"
        );
        MinSum {
            row_start,
            cols,
            sent: vec![RowMessages::default(); h.num_rows()],
            llr: vec![0.0; h.num_cols()],
            row: vec![0.0; max_row],
            rule,
        }
    }

    /// Edges of the Tanner graph (ones of H): the work of one iteration.
    pub fn edges(&self) -> usize {
        self.cols.len()
    }

    /// Updates one check row (one layer) in place.
    fn layer(&mut self, r: usize) {
        let (s, e) = (self.row_start[r] as usize, self.row_start[r + 1] as usize);
        let cols = &self.cols[s..e];
        let old = self.sent[r];
        let t = &mut self.row[..e - s];
        let (mut min1, mut min2, mut at) = (f32::MAX, f32::MAX, 0u32);
        let mut signs = 0u32;
        for (i, (&c, ti)) in cols.iter().zip(t.iter_mut()).enumerate() {
            let v = self.llr[c as usize] - old.message(i);
            *ti = v;
            signs |= (v.to_bits() >> 31) << i;
            // Branch-free: the comparisons are unpredictable on noisy frames.
            let a = v.abs();
            let below = a < min1;
            min2 = if below { min1 } else { min2.min(a) };
            at = if below { i as u32 } else { at };
            min1 = min1.min(a);
        }
        // Edge i's sign: the product of the other edges' signs = the row's parity times its own.
        let parity = if signs.count_ones() % 2 == 1 {
            u32::MAX
        } else {
            0
        };
        let new = RowMessages {
            first: (min1 * self.rule.scale - self.rule.offset).max(0.0),
            second: (min2 * self.rule.scale - self.rule.offset).max(0.0),
            at,
            signs: signs ^ parity,
        };
        for (i, (&c, &v)) in cols.iter().zip(t.iter()).enumerate() {
            self.llr[c as usize] = (v + new.message(i)).clamp(-LLR_MAX, LLR_MAX);
        }
        self.sent[r] = new;
    }

    /// Every check satisfied by the hard decisions of the posterior LLRs (stops at the first
    /// unsatisfied row, which before convergence is one of the first).
    fn syndrome_ok(&self) -> bool {
        self.row_start.windows(2).all(|w| {
            let cols = &self.cols[w[0] as usize..w[1] as usize];
            cols.iter()
                .fold(0u32, |p, &c| p ^ u32::from(self.llr[c as usize] <= 0.0))
                == 0
        })
    }

    fn hard_decisions(&self) -> Vec<u8> {
        self.llr.iter().map(|&l| u8::from(l <= 0.0)).collect()
    }
}

impl LdpcDecoder for MinSum {
    /// ldpc-toolbox's contract: `Ok` with the codeword when every check is satisfied (after
    /// `iterations` iterations, 0 if the channel's hard decisions already are a codeword),
    /// `Err` with the last hard decisions after `max_iterations`.
    fn decode(
        &mut self,
        llrs: &[f64],
        max_iterations: usize,
    ) -> Result<DecoderOutput, DecoderOutput> {
        assert_eq!(llrs.len(), self.llr.len(), "one LLR per codeword bit");
        for (l, &x) in self.llr.iter_mut().zip(llrs) {
            *l = (x as f32).clamp(-LLR_MAX, LLR_MAX);
        }
        self.sent.fill(RowMessages::default());
        let rows = self.row_start.len() - 1;
        let mut iterations = 0;
        let mut ok = self.syndrome_ok();
        while !ok && iterations < max_iterations {
            for r in 0..rows {
                self.layer(r);
            }
            iterations += 1;
            ok = self.syndrome_ok();
        }
        let out = DecoderOutput {
            codeword: self.hard_decisions(),
            iterations,
        };
        if ok {
            Ok(out)
        } else {
            Err(out)
        }
    }
}
