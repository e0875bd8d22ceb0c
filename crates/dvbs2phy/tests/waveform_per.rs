//! Per-frame Es/N0 in the PHY loop (the emulator's `kind: dvbs2_waveform`): frames at two Es/N0
//! values, interleaved frame by frame through one flowgraph, must fail as often as the
//! waveform-calibrated PER table says (crates/linkmodel/src/data/per/dvbs2-short.csv), within
//! binomial confidence intervals on both sides: the table's own counts and this run's.

use dvbs2phy::loop_bench::bbframe;
use dvbs2phy::{FrameSize, LoopConfig, ModCod, PhyLoop};

/// z of a two-sided 99.9 % interval: the test fails by chance once in a thousand runs per point.
const Z: f64 = 3.29;

/// Wilson score interval of `k` errors in `n` frames.
fn wilson(k: usize, n: usize) -> (f64, f64) {
    let (k, n) = (k as f64, n as f64);
    let p = k / n;
    let d = 1.0 + Z * Z / n;
    let c = (p + Z * Z / (2.0 * n)) / d;
    let h = Z * (p * (1.0 - p) / n + Z * Z / (4.0 * n * n)).sqrt() / d;
    ((c - h).max(0.0), (c + h).min(1.0))
}

/// The table row of MODCOD `id` at `esn0` as (frame errors, frames), from its comment
/// ("... 39/100 frames, ...").
fn table_counts(id: u32, esn0: f64) -> (usize, usize) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../linkmodel/src/data/per/dvbs2-short.csv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let key = format!("{id},{esn0:.2},");
    let line = text
        .lines()
        .find(|l| l.starts_with(&key))
        .unwrap_or_else(|| panic!("no row {key} in {path}"));
    // The count is the word before "frames" (the MODCOD's name has a slash too).
    let words: Vec<&str> = line.split_whitespace().collect();
    let counts = words
        .windows(2)
        .find(|w| w[1].starts_with("frames"))
        .map(|w| w[0])
        .unwrap_or_else(|| panic!("no k/n count in {line:?}"));
    let (k, n) = counts.split_once('/').unwrap();
    (k.parse().unwrap(), n.parse().unwrap())
}

#[test]
fn frame_error_rates_at_two_esn0_values_match_the_per_table() {
    // QPSK 1/4, short frames, no pilots: the table's settings. -3.45 dB is mid-waterfall
    // (39/100 in the table), -3.25 dB its foot (100/2000); 0.2 dB apart, the PER differs
    // eightfold, so a loop off by a tenth of a dB, or applying one frame's noise to its
    // neighbour, lands outside the intervals.
    let (id, points) = (1, [-3.45, -3.25]);
    let frames_per_point = 300;
    let mc = ModCod::new(id, FrameSize::Short, false).unwrap();
    let mut cfg = LoopConfig::new(mc, points[0]);
    cfg.per_frame_esn0 = true;
    cfg.seed = 11;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 5;
    let mut sent = std::collections::VecDeque::new();
    let mut errors = [0usize; 2];
    for i in 0..2 * frames_per_point {
        let f = bbframe(&mc, &mut state);
        lp.submit_at(&f, points[i % 2]).unwrap();
        sent.push_back(f);
        // Four frames in flight, as the emulator runs the loop.
        if lp.outstanding() >= 4 || i + 1 == 2 * frames_per_point {
            while lp.outstanding() > usize::from(i + 1 < 2 * frames_per_point) * 3 {
                let got = lp.next_frame().unwrap();
                let want = sent.pop_front().unwrap();
                let point = (got.seq % 2) as usize;
                assert!((got.esn0_db - points[point]).abs() < 1e-9);
                if got.outcome.as_ref() != Ok(&want) {
                    errors[point] += 1;
                }
            }
        }
    }
    for (p, &esn0) in points.iter().enumerate() {
        let (tk, tn) = table_counts(id, esn0);
        let (lo, hi) = wilson(errors[p], frames_per_point);
        let (tlo, thi) = wilson(tk, tn);
        eprintln!(
            "QPSK 1/4 short at {esn0} dB: loop {}/{frames_per_point} [{lo:.3}, {hi:.3}], table {tk}/{tn} [{tlo:.3}, {thi:.3}]",
            errors[p]
        );
        assert!(
            lo <= thi && tlo <= hi,
            "at {esn0} dB the loop's FER {}/{frames_per_point} [{lo:.3}, {hi:.3}] disagrees with the table's {tk}/{tn} [{tlo:.3}, {thi:.3}]",
            errors[p]
        );
    }
}

#[test]
fn submit_at_needs_per_frame_mode_and_a_valid_esn0() {
    let mc = ModCod::new(4, FrameSize::Short, false).unwrap();
    let mut state = 1;
    let f = bbframe(&mc, &mut state);
    let mut lp = PhyLoop::start(LoopConfig::new(mc, 10.0)).unwrap();
    let e = lp.submit_at(&f, 5.0).unwrap_err().to_string();
    assert!(e.contains("per_frame_esn0"), "{e}");
    let mut cfg = LoopConfig::new(mc, 10.0);
    cfg.per_frame_esn0 = true;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let e = lp.submit_at(&f, 41.0).unwrap_err().to_string();
    assert!(e.contains("esn0_db 41") && e.contains("[-10, 40]"), "{e}");
    // A clean frame still comes back bit-exact after one at a low Es/N0.
    lp.submit_at(&f, -5.0).unwrap();
    lp.submit_at(&f, 12.0).unwrap();
    assert!(lp.next_frame().unwrap().outcome.is_err());
    assert_eq!(lp.next_frame().unwrap().outcome, Ok(f));
}

#[test]
fn the_waveform_channel_switches_modcod_per_frame_and_keeps_order() {
    use dvbs2phy::{WaveformChannel, WaveformConfig};
    // ACM's pattern: QPSK 1/2 and 8PSK 3/5 alternating, one loop each, started on first use.
    let mut ch = WaveformChannel::new(WaveformConfig::new(FrameSize::Short, false));
    let mut state = 3;
    let plan = [
        (4, 12.0),
        (12, 12.0),
        (4, 12.0),
        (4, -3.0),
        (12, 12.0),
        (12, 12.0),
    ];
    let mut sent = Vec::new();
    for &(id, esn0) in &plan {
        let f = bbframe(
            &ModCod::new(id, FrameSize::Short, false).unwrap(),
            &mut state,
        );
        ch.submit(id, esn0, &f).unwrap();
        sent.push(f);
    }
    assert_eq!(ch.modcods_started(), vec![4, 12]);
    for (i, (&(id, esn0), f)) in plan.iter().zip(&sent).enumerate() {
        let got = ch.next_frame().unwrap();
        assert_eq!((got.seq, got.modcod_id), (i as u64, id));
        if esn0 > 0.0 {
            assert_eq!(got.frame.outcome.as_ref(), Ok(f), "frame {i}");
        } else {
            assert!(got.frame.outcome.is_err(), "frame {i} at {esn0} dB decoded");
        }
    }
    assert_eq!(ch.outstanding(), 0);
    let e = ch.submit(11, 10.0, &sent[0]).unwrap_err().to_string();
    assert!(e.contains("9/10") || e.contains("short"), "{e}");
}

#[test]
fn decode_one_returns_each_frame_at_once_in_its_own_fate() {
    use dvbs2phy::{WaveformChannel, WaveformConfig};
    use std::time::Instant;
    // The emulator's synchronous use: one frame at a time, normal frames with pilots (its
    // defaults), QPSK 1/2 then 8PSK 3/5, clean and then far below the threshold.
    let mut ch = WaveformChannel::new(WaveformConfig::new(FrameSize::Normal, true));
    ch.start_loop(4).unwrap();
    let mut state = 9;
    let qpsk = ModCod::new(4, FrameSize::Normal, true).unwrap();
    let n = 20;
    let t0 = Instant::now();
    for i in 0..n {
        let f = bbframe(&qpsk, &mut state);
        let got = ch.decode_one(4, 10.0, &f).unwrap();
        assert_eq!(got.frame.outcome, Ok(f), "frame {i}");
        assert_eq!(ch.outstanding(), 0);
    }
    // The first frame waits for the loop's sync; the rest are the per-frame stall.
    eprintln!(
        "decode_one: {n} normal QPSK 1/2 frames at 10 dB in {:.3} s ({:.1} frames/s)",
        t0.elapsed().as_secs_f64(),
        n as f64 / t0.elapsed().as_secs_f64()
    );
    let f = bbframe(&qpsk, &mut state);
    assert!(ch.decode_one(4, -3.0, &f).unwrap().frame.outcome.is_err());
    let psk8 = ModCod::new(12, FrameSize::Normal, true).unwrap();
    let f = bbframe(&psk8, &mut state);
    assert_eq!(ch.decode_one(12, 12.0, &f).unwrap().frame.outcome, Ok(f));
    // Submitted frames first go back through next_frame.
    ch.submit(4, 10.0, &bbframe(&qpsk, &mut state)).unwrap();
    let e = ch.decode_one(4, 10.0, &bbframe(&qpsk, &mut state));
    assert!(
        e.unwrap_err().to_string().contains("1 frames outstanding"),
        "decode_one must refuse while frames are outstanding"
    );
}
