//! Uncoded symbol error rate of every DVB-S2 constellation (EN 302 307-1 5.4, with its APSK radii)
//! under AWGN with minimum-distance decisions: Monte Carlo through the receiver's constellation
//! tables and slicer, against theory: the closed form for QPSK, and for 8PSK, 16APSK and 32APSK a
//! numerical reference computed independently here by integrating the Gaussian density over each
//! point's decision region on a fine grid.

use dvbs2phy::constellation::{Constellation, C64};
use dvbs2phy::{FrameSize, ModCod};

mod common;
use common::Rng;

fn monte_carlo_ser(c: &Constellation, esn0_db: f64, symbols: usize, seed: u64) -> f64 {
    let sigma = (10f64.powf(-esn0_db / 10.0) / 2.0).sqrt(); // per dimension, Es = 1
    let mut rng = Rng(seed);
    let mut errors = 0usize;
    for _ in 0..symbols {
        let label = (rng.next_u64() % c.points.len() as u64) as usize;
        let (nx, ny) = rng.gauss_pair();
        let y = c.points[label] + C64::new(sigma * nx, sigma * ny);
        errors += usize::from(c.slice(y) != label);
    }
    errors as f64 / symbols as f64
}

/// Q(x) = erfc(x / sqrt 2) / 2, erfc by the Numerical Recipes Chebyshev fit (|rel err| < 1.2e-7).
fn q(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z.abs());
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    0.5 * if z >= 0.0 { erfc } else { 2.0 - erfc }
}

/// SER by integrating, for each point, the 2-D Gaussian density over the points that decide for
/// another label (midpoint rule on a grid of step sigma/25 over +-7 sigma).
fn quadrature_ser(points: &[C64], esn0_db: f64) -> f64 {
    let sigma = (10f64.powf(-esn0_db / 10.0) / 2.0).sqrt();
    let h = sigma / 25.0;
    let n = (7.0 * sigma / h).ceil() as i64;
    let norm = h * h / (std::f64::consts::TAU * sigma * sigma);
    let mut total = 0.0;
    for (label, s) in points.iter().enumerate() {
        let mut wrong = 0.0;
        for i in -n..=n {
            for j in -n..=n {
                let (dx, dy) = (i as f64 * h, j as f64 * h);
                let y = C64::new(s.re + dx, s.im + dy);
                let d_own = (y - *s).norm2();
                if points
                    .iter()
                    .enumerate()
                    .any(|(l, p)| l != label && (y - *p).norm2() < d_own)
                {
                    wrong += (-(dx * dx + dy * dy) / (2.0 * sigma * sigma)).exp() * norm;
                }
            }
        }
        total += wrong;
    }
    total / points.len() as f64
}

fn check(id: u32, esn0_db: f64, reference: f64, seed: u64) {
    let mc = ModCod::new(id, FrameSize::Normal, false).unwrap();
    let c = Constellation::of(&mc);
    let e = c.points.iter().map(|p| p.norm2()).sum::<f64>() / c.points.len() as f64;
    assert!((e - 1.0).abs() < 1e-12, "{}: mean energy {e}", mc.label());
    let symbols = 400_000;
    let ser = monte_carlo_ser(&c, esn0_db, symbols, seed);
    // Binomial standard deviation of the estimate; 5 sigma plus 2 % for the reference's grid.
    let sd = (reference * (1.0 - reference) / symbols as f64).sqrt();
    assert!(
        (ser - reference).abs() < 5.0 * sd + 0.02 * reference,
        "{} at {esn0_db} dB: Monte Carlo SER {ser:.5} vs theory {reference:.5} (sd {sd:.5})",
        mc.label()
    );
}

/// `check` against the quadrature SER of the MODCOD's constellation.
fn check_against_quadrature(id: u32, esn0_db: f64, seed: u64) {
    let mc = ModCod::new(id, FrameSize::Normal, false).unwrap();
    let reference = quadrature_ser(&Constellation::of(&mc).points, esn0_db);
    check(id, esn0_db, reference, seed);
}

#[test]
fn qpsk_matches_closed_form() {
    for esn0 in [4.0, 7.0] {
        let a = q(10f64.powf(esn0 / 20.0));
        check(4, esn0, 2.0 * a - a * a, 11);
    }
}

#[test]
fn closed_form_and_quadrature_agree_on_qpsk() {
    // The quadrature itself against the closed form, so the APSK references below are trusted.
    let mc = ModCod::new(4, FrameSize::Normal, false).unwrap();
    let a = q(10f64.powf(5.0 / 20.0));
    let exact = 2.0 * a - a * a;
    let quad = quadrature_ser(&Constellation::of(&mc).points, 5.0);
    assert!((quad - exact).abs() < 0.01 * exact, "{quad} vs {exact}");
}

#[test]
fn psk8_matches_quadrature() {
    check_against_quadrature(13, 11.0, 12);
}

#[test]
fn apsk16_matches_quadrature_for_every_ring_ratio() {
    for id in [18, 23] {
        check_against_quadrature(id, 14.0, 13 + u64::from(id));
    }
}

#[test]
fn apsk32_matches_quadrature_for_every_ring_ratio() {
    for id in [24, 28] {
        check_against_quadrature(id, 18.0, 17 + u64::from(id));
    }
}

#[test]
fn apsk_radii_follow_the_code_rate() {
    // EN 302 307-1 Tables 9 and 10: R2/R1 of 16APSK 2/3 is 3.15, of 9/10 2.57; 32APSK 3/4 R3/R1 5.27.
    let ring = |id: u32| {
        let c = Constellation::of(&ModCod::new(id, FrameSize::Normal, false).unwrap());
        let mut r: Vec<f64> = c.points.iter().map(|p| p.norm2().sqrt()).collect();
        r.sort_by(f64::total_cmp);
        (r[0], r[r.len() - 1])
    };
    let (a, b) = ring(18);
    assert!((b / a - 3.15).abs() < 1e-9);
    let (a, b) = ring(23);
    assert!((b / a - 2.57).abs() < 1e-9);
    let (a, b) = ring(24);
    assert!((b / a - 5.27).abs() < 1e-9);
}
