//! The crate's min-sum LDPC decoder (dvbs2phy::minsum) on a DVB-S2 code with BPSK over AWGN:
//! it corrects noisy codewords, reports failure on noise, and agrees with ldpc-toolbox's
//! layered sum-product decoder on a small fixed set of frames (deterministic seeds).

use dvbs2phy::ldpc::parity_check;
use dvbs2phy::minsum::{MinSum, DEFAULT_RULE};
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
