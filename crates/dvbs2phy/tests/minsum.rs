//! The crate's min-sum LDPC decoders on DVB-S2 codes with BPSK over AWGN: row by row
//! (dvbs2phy::minsum) and 360 rows at a time (dvbs2phy::minsum_qc). They correct noisy
//! codewords, report failure on noise, and agree with each other and with ldpc-toolbox's
//! layered sum-product decoder on small fixed sets of frames (deterministic seeds).

use dvbs2phy::ldpc::parity_check;
use dvbs2phy::minsum::{MinSum, DEFAULT_RULE};
use dvbs2phy::minsum_qc::QcMinSum;
use dvbs2phy::{FrameSize, ModCod};
use ldpc_toolbox::decoder::factory::{DecoderFactory, DecoderImplementation};
use ldpc_toolbox::decoder::LdpcDecoder;
use ldpc_toolbox::sparse::SparseMatrix;

mod common;
use common::Rng;

/// A random codeword: random information bits, then the accumulator (EN 302 307-1 5.3.2.2):
/// row r of H holds the parity bit k + r and bits before it only, so each parity bit is the
/// XOR of the row's other bits.
fn codeword(h: &SparseMatrix, rng: &mut Rng) -> Vec<u8> {
    let (m, n) = (h.num_rows(), h.num_cols());
    let k = n - m;
    let mut cw: Vec<u8> = (0..n)
        .map(|j| u8::from(j < k && rng.next_u64() & 1 == 1))
        .collect();
    for r in 0..m {
        let p = h
            .iter_row(r)
            .filter(|&&c| c != k + r)
            .fold(0, |p, &c| p ^ cw[c]);
        cw[k + r] = p;
    }
    cw
}

/// BPSK over AWGN at Es/N0 `esn0_db`: LLR = 2 y / sigma^2 (positive: bit 0).
fn channel(cw: &[u8], esn0_db: f64, rng: &mut Rng) -> Vec<f64> {
    let sigma2 = 10f64.powf(-esn0_db / 10.0) / 2.0;
    cw.iter()
        .map(|&b| {
            let y = 1.0 - 2.0 * f64::from(b) + sigma2.sqrt() * rng.gauss_pair().0;
            2.0 * y / sigma2
        })
        .collect()
}

/// The short-frame QPSK 1/2 code (LDPC rate 4/9, 16200 bits).
fn short_qpsk_half() -> SparseMatrix {
    parity_check(&ModCod::new(4, FrameSize::Short, false).unwrap())
}

#[test]
fn corrects_a_noisy_codeword_at_high_esn0() {
    let h = short_qpsk_half();
    let mut dec = MinSum::new(&h, DEFAULT_RULE);
    let mut rng = Rng(7);
    let cw = codeword(&h, &mut rng);
    // 2 dB per BPSK symbol: about 4 % of the channel's hard decisions are wrong.
    let llrs = channel(&cw, 2.0, &mut rng);
    let wrong = llrs
        .iter()
        .zip(&cw)
        .filter(|(l, &b)| u8::from(**l <= 0.0) != b)
        .count();
    assert!(
        wrong > 200,
        "{wrong} channel errors: the test must have some"
    );
    let out = dec.decode(&llrs, 50).expect("decodes");
    assert_eq!(out.codeword, cw);
    assert!(out.iterations >= 1);
}

#[test]
fn reports_failure_on_noise() {
    let h = short_qpsk_half();
    let mut dec = MinSum::new(&h, DEFAULT_RULE);
    let mut rng = Rng(11);
    let llrs: Vec<f64> = (0..h.num_cols())
        .map(|_| 4.0 * rng.gauss_pair().0)
        .collect();
    let out = dec.decode(&llrs, 20).expect_err("no codeword");
    assert_eq!(out.iterations, 20);
}

/// On the same frames both decoders deliver the transmitted codeword where the channel is
/// good and both fail where it is hopeless (rate 4/9: 1.5 dB per BPSK symbol decodes, -3 dB
/// is below the code's threshold).
#[test]
fn agrees_with_ldpc_toolbox() {
    let h = short_qpsk_half();
    let mut ours = MinSum::new(&h, DEFAULT_RULE);
    let mut reference = DecoderImplementation::HLTanhf32.build_decoder(h.clone());
    let mut rng = Rng(3);
    for (esn0, decodable) in [(1.5, true), (1.5, true), (1.5, true), (-3.0, false)] {
        let cw = codeword(&h, &mut rng);
        let llrs = channel(&cw, esn0, &mut rng);
        let a = ours.decode(&llrs, 50);
        let b = reference.decode(&llrs, 50);
        assert_eq!(a.is_ok(), decodable, "ours at {esn0} dB");
        assert_eq!(b.is_ok(), decodable, "ldpc-toolbox at {esn0} dB");
        if decodable {
            assert_eq!(a.unwrap().codeword, cw);
            assert_eq!(b.unwrap().codeword, cw);
        }
    }
}

#[test]
fn a_codeword_needs_no_iteration() {
    let h = short_qpsk_half();
    let mut dec = MinSum::new(&h, DEFAULT_RULE);
    let cw = codeword(&h, &mut Rng(5));
    let llrs: Vec<f64> = cw.iter().map(|&b| 1.0 - 2.0 * f64::from(b)).collect();
    let out = dec.decode(&llrs, 50).expect("a codeword");
    assert_eq!((out.codeword, out.iterations), (cw, 0));
}

/// Every DVB-S2 code, normal and short frames: a codeword needs no iteration, and one with a
/// weak wrong bit in every 300 is corrected (every code's layout, including the groups with two
/// edges to one block and the short rate 3/4 code of dvbs2phy::ldpc).
#[test]
fn qc_corrects_every_code() {
    for frame in [FrameSize::Normal, FrameSize::Short] {
        for id in 1..=11 {
            let Ok(mc) = ModCod::new(id, frame, false) else {
                continue;
            };
            let h = parity_check(&mc);
            let mut dec = QcMinSum::new(&h, DEFAULT_RULE).expect("quasi-cyclic");
            let cw = codeword(&h, &mut Rng(u64::from(id)));
            let mut llrs: Vec<f64> = cw.iter().map(|&b| 4.0 - 8.0 * f64::from(b)).collect();
            let out = dec.decode(&llrs, 50).expect("a codeword");
            assert_eq!((&out.codeword, out.iterations), (&cw, 0), "{}", mc.label());
            for l in llrs.iter_mut().step_by(300) {
                *l = -*l / 4.0;
            }
            let out = dec.decode(&llrs, 50).expect("corrects");
            assert!(
                out.codeword == cw && out.iterations >= 1,
                "{} {frame:?}",
                mc.label()
            );
        }
    }
}

/// The two min-sum decoders on the same frames of the short QPSK 1/2 code: both deliver the
/// codeword at 1.5 dB (some 400 wrong channel decisions a frame), both fail below the
/// threshold, and at the waterfall (-2.8 dB: PER about 0.6) they lose nearly the same frames
/// (the schedules differ, so single frames may go either way: 9 of 300 frames at -2.9, -2.8
/// and -2.7 dB did, 176 against 177 lost).
#[test]
fn qc_agrees_with_the_row_decoder() {
    let h = short_qpsk_half();
    let mut rows = MinSum::new(&h, DEFAULT_RULE);
    let mut qc = QcMinSum::new(&h, DEFAULT_RULE).expect("quasi-cyclic");
    let mut rng = Rng(17);
    let mut lost = [0usize; 2];
    for (esn0, frames) in [(1.5, 4), (-3.0, 2), (-2.8, 40)] {
        for _ in 0..frames {
            let cw = codeword(&h, &mut rng);
            let llrs = channel(&cw, esn0, &mut rng);
            let a = qc.decode(&llrs, 50);
            let b = rows.decode(&llrs, 50);
            if esn0 == -2.8 {
                lost[0] += usize::from(a.as_ref().map_or(true, |o| o.codeword != cw));
                lost[1] += usize::from(b.as_ref().map_or(true, |o| o.codeword != cw));
                continue;
            }
            assert_eq!(a.is_ok(), esn0 > 0.0, "min-sum by row groups at {esn0} dB");
            assert_eq!(b.is_ok(), esn0 > 0.0, "min-sum by rows at {esn0} dB");
            if esn0 > 0.0 {
                assert_eq!(a.unwrap().codeword, cw);
            }
        }
    }
    assert!(lost[0] > 0 && lost[0] < 40, "the waterfall: {lost:?}");
    assert!(
        lost[0].abs_diff(lost[1]) <= 3,
        "groups, rows: {lost:?} of 40 frames lost"
    );
}
