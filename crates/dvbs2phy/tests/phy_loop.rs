//! The PHY loop end to end: BBFRAMEs through GNU Radio's gr-dtv transmitter and gr-channels AWGN
//! (gr/dvbs2_loop.py, Debian's /usr/bin/python3) over ZeroMQ and back through the receiver.
//! CI-sized: short frames, a few per test (about a second each).

use std::time::Duration;

use dvbs2phy::loop_bench::bbframe;
use dvbs2phy::{Erasure, FrameSize, LoopConfig, LoopError, ModCod, PhyLoop, RfPath, Sdr, Underrun};

fn config(id: u32, pilots: bool, esn0_db: f64) -> LoopConfig {
    LoopConfig::new(ModCod::new(id, FrameSize::Short, pilots).unwrap(), esn0_db)
}

#[test]
fn above_threshold_frames_come_back_bit_exact_in_order() {
    // 8PSK 3/5 with pilots (QEF at 5.5 dB): 12 dB is far above the waterfall.
    let cfg = config(12, true, 12.0);
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 7;
    let sent: Vec<Vec<u8>> = (0..5).map(|_| bbframe(&mc, &mut state)).collect();
    for (i, f) in sent.iter().enumerate() {
        assert_eq!(lp.submit(f).unwrap(), i as u64);
    }
    for (i, f) in sent.iter().enumerate() {
        let got = lp.next_frame().unwrap();
        assert_eq!(got.seq, i as u64);
        assert_eq!(got.outcome.as_ref(), Ok(f), "frame {i}");
        assert!((got.esn0_est_db - 12.0).abs() < 1.5, "{}", got.esn0_est_db);
    }
    assert_eq!(lp.outstanding(), 0);
    // One frame at a time (nothing behind it to push its tail out: the loop's fillers do).
    let f = bbframe(&mc, &mut state);
    lp.submit(&f).unwrap();
    assert_eq!(lp.next_frame().unwrap().outcome, Ok(f));
}

#[test]
fn below_threshold_frames_are_erased() {
    // QPSK 1/2 (QEF at 1.0 dB) at -2 dB: the LDPC decoder cannot converge.
    let cfg = config(4, false, -2.0);
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 9;
    for _ in 0..3 {
        lp.submit(&bbframe(&mc, &mut state)).unwrap();
    }
    for _ in 0..3 {
        let got = lp.next_frame().unwrap();
        assert_eq!(got.outcome, Err(Erasure::LdpcNotConverged));
        assert_eq!(got.iterations, 50);
    }
}

#[test]
fn bad_settings_name_the_field_and_the_limit() {
    let err = |r: Result<PhyLoop, LoopError>| r.err().expect("refused").to_string();
    assert!(
        ModCod::new(11, FrameSize::Short, false).is_err(),
        "9/10 has no short frame"
    );
    let e = err(PhyLoop::start(config(4, false, 45.0)));
    assert!(e.contains("esn0_db 45 is outside [-10, 40]"), "{e}");
    let mut cfg = config(4, false, 5.0);
    cfg.in_flight = 0;
    let e = err(PhyLoop::start(cfg));
    assert!(e.contains("in_flight 0 is outside [1, 64]"), "{e}");
    let mut lp = PhyLoop::start(config(4, false, 5.0)).unwrap();
    let e = lp.submit(&[0u8; 100]).unwrap_err().to_string();
    assert!(e.contains("K_bch / 8 = 879 bytes"), "{e}");
    let e = lp.next_frame().unwrap_err().to_string();
    assert!(e.contains("no frame submitted"), "{e}");
}

#[test]
fn a_flowgraph_that_cannot_start_is_reported() {
    let mut cfg = config(4, false, 5.0);
    cfg.script = "/nonexistent/dvbs2_loop.py".into();
    let e = PhyLoop::start(cfg).err().expect("refused");
    assert!(matches!(e, LoopError::FlowgraphNotRunning(_)), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("flowgraph not running") && e.contains("No such file"),
        "{e}"
    );
}

#[test]
fn a_dead_flowgraph_is_reported() {
    let mut cfg = config(4, false, 5.0);
    cfg.timeout = Duration::from_secs(10);
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    // SAFETY: kill(2) on the flowgraph process this test started.
    assert_eq!(
        unsafe { libc::kill(lp.flowgraph_pid() as i32, libc::SIGKILL) },
        0
    );
    let mut state = 1;
    lp.submit(&bbframe(&mc, &mut state)).unwrap();
    let e = lp.next_frame().unwrap_err();
    assert!(matches!(e, LoopError::FlowgraphNotRunning(_)), "{e:?}");
    assert!(e.to_string().contains("it exited"), "{e}");
}

/// A directory of its own for a test, removed when the test ends, passed or failed.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("dvbs2phy-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A SigMF recording's metadata and the length of its data file, bytes.
fn sigmf_files(base: &std::path::Path) -> (serde_json::Value, u64) {
    let meta = std::fs::read_to_string(base.with_extension("sigmf-meta")).unwrap();
    let data = std::fs::metadata(base.with_extension("sigmf-data")).unwrap();
    (serde_json::from_str(&meta).unwrap(), data.len())
}

#[test]
fn sigmf_recording() {
    let dir = Scratch::new("sigmf");
    let base = dir.0.join("loop");
    let mut cfg = config(4, false, 10.0);
    cfg.sigmf = Some(base.clone());
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 3;
    let f = bbframe(&mc, &mut state);
    lp.submit(&f).unwrap();
    assert_eq!(lp.next_frame().unwrap().outcome, Ok(f));
    drop(lp); // the flowgraph stops and closes the file
    let (meta, data) = sigmf_files(&base);
    assert_eq!(meta["global"]["core:datatype"], "cf32_le");
    assert_eq!(meta["captures"][0]["core:sample_start"], 0);
    // At least the frame (and a filler that pushed its tail out), 8 bytes a sample.
    assert!(
        data >= 8 * mc.frame_symbols() as u64 && data.is_multiple_of(8),
        "{data}"
    );
}

#[test]
fn rf_path_frames_come_back_through_a_carrier_offset() {
    // 8PSK 3/5 with pilots at 12 dB through the RF path (RRC at 4 samples per symbol, timing
    // recovery) with a carrier offset of 3e-3 cycles per symbol (4.4 turns between pilot
    // blocks, which only the receiver's frequency tracking unwraps) and the sample clocks
    // 100 ppm apart (about 7 symbols of drift over the 12 frames, which the timing loop absorbs).
    // The SigMF recording is the transmitted waveform at 4 samples per symbol.
    let dir = Scratch::new("rf");
    let base = dir.0.join("rf");
    let mut cfg = config(12, true, 12.0);
    cfg.rf = Some(RfPath {
        freq_offset: 3e-3,
        clock_ppm: 100.0,
        ..RfPath::default()
    });
    cfg.sigmf = Some(base.clone());
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 11;
    let sent: Vec<Vec<u8>> = (0..12).map(|_| bbframe(&mc, &mut state)).collect();
    for f in &sent {
        lp.submit(f).unwrap();
    }
    for (i, f) in sent.iter().enumerate() {
        let got = lp.next_frame().unwrap();
        assert_eq!(got.seq, i as u64);
        // The first frame meets the timing loop and the carrier acquisition: it may be lost,
        // never delivered wrong.
        if i == 0 {
            assert!(got.outcome.as_ref().map_or(true, |b| b == f), "frame 0");
        } else {
            assert_eq!(got.outcome.as_ref(), Ok(f), "frame {i}");
            // The front end's loss: measured 0.3-0.8 dB at these settings.
            assert!((got.esn0_est_db - 12.0).abs() < 2.0, "{}", got.esn0_est_db);
        }
    }
    drop(lp);
    let (meta, data) = sigmf_files(&base);
    assert_eq!(meta["global"]["core:sample_rate"], 4e6);
    assert!(data >= 8 * 4 * 12 * mc.frame_symbols() as u64, "{data}");
}

#[test]
fn rf_settings_are_checked() {
    let err = |cfg: LoopConfig| PhyLoop::start(cfg).err().expect("refused").to_string();
    let rf = |f: fn(&mut RfPath)| {
        let mut r = RfPath::default();
        f(&mut r);
        Some(r)
    };
    let mut cfg = config(4, false, 5.0);
    cfg.rf = Some(RfPath::default());
    assert!(err(cfg).contains("rf needs pilots"));
    let mut cfg = config(4, true, 5.0);
    cfg.rf = rf(|r| r.sps = 1);
    assert!(err(cfg).contains("rf.sps 1 is outside [2, 16]"));
    let mut cfg = config(4, true, 5.0);
    cfg.rf = rf(|r| r.rolloff = 0.5);
    assert!(err(cfg).contains("rf.rolloff 0.5 is not one of 0.2, 0.25, 0.35"));
    let mut cfg = config(4, true, 5.0);
    cfg.rf = rf(|r| r.freq_offset = 0.02);
    assert!(err(cfg).contains("rf.freq_offset 0.02 is outside [-0.01, 0.01]"));
    let mut cfg = config(4, true, 5.0);
    cfg.rf = rf(|r| r.fll_bandwidth = 0.1);
    assert!(err(cfg).contains("rf.fll_bandwidth 0.1 is outside [0, 0.05]"));
    let mut cfg = config(4, true, 5.0);
    cfg.rf = rf(|r| r.clock_ppm = -300.0);
    assert!(err(cfg).contains("rf.clock_ppm -300 is outside [-200, 200]"));
}

#[test]
fn rf_path_frames_meet_their_own_esn0() {
    // The fade over the RF path: 8PSK 3/5 short frames with pilots (QEF at 5.5 dB) through a
    // carrier offset of 2e-3 cycles per symbol, alternately at 12 dB (delivered) and 1 dB
    // (erased), in one loop; then two at 40 dB, above the front end's own noise (about 37 dB
    // on the pilots): they get no noise and are counted as fade-floor frames. The receiver's
    // estimate of each frame's Es/N0 is the check that the frame met its target.
    let mut cfg = config(12, true, 12.0);
    cfg.per_frame_esn0 = true;
    cfg.rf = Some(RfPath {
        freq_offset: 2e-3,
        ..RfPath::default()
    });
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 13;
    let esn0 = |i: usize| match i {
        0..=21 if i.is_multiple_of(2) => 12.0,
        0..=21 => 1.0,
        _ => 40.0,
    };
    let sent: Vec<Vec<u8>> = (0..24).map(|_| bbframe(&mc, &mut state)).collect();
    for (i, f) in sent.iter().enumerate() {
        lp.submit_at(f, esn0(i)).unwrap();
    }
    let mut est = [Vec::new(), Vec::new()];
    for (i, f) in sent.iter().enumerate() {
        let got = lp.next_frame().unwrap();
        assert_eq!((got.seq, got.esn0_db), (i as u64, esn0(i)));
        // One frame's estimate scatters by +-0.5 dB (414 known symbols), on the symbol-level
        // channel too; the front end loses 0.1-0.8 dB at this offset.
        let off = got.esn0_est_db - esn0(i);
        match esn0(i) {
            // The first frame meets the timing loop and the carrier acquisition.
            _ if i == 0 => assert!(got.outcome.as_ref().map_or(true, |b| b == f), "frame 0"),
            12.0 => {
                assert_eq!(got.outcome.as_ref(), Ok(f), "frame {i}");
                assert!(off.abs() < 1.5, "frame {i}: estimate {off} dB off");
                est[0].push(off);
            }
            1.0 => {
                assert!(got.outcome.is_err(), "frame {i} at 1 dB delivered");
                assert!(off.abs() < 1.5, "frame {i}: estimate {off} dB off");
                est[1].push(off);
            }
            _ => assert_eq!(got.outcome.as_ref(), Ok(f), "frame {i}"),
        }
    }
    for e in est {
        let mean = e.iter().sum::<f64>() / e.len() as f64;
        assert!(mean.abs() < 1.0, "mean estimate {mean} dB off the target");
    }
    // The two at 40 dB, and the first frame when the timing loop's acquisition left it noisier
    // than 12 dB.
    assert!(
        (2..=3).contains(&lp.fade_floor_frames()),
        "{}",
        lp.fade_floor_frames()
    );
}

/// Pushes 16 frames through a loop whose stream loses `drop_frames` frames' worth of samples
/// (times `sps` samples per symbol) from the middle of frame 6 on; checks that every frame
/// comes back once, in order, each delivered frame the one sent with that number, and that
/// the frames after the underrun are delivered. Returns the frames lost or erased.
fn frames_after_an_underrun(mut cfg: LoopConfig, sps: u64, drop_frames: f64) -> usize {
    let mc = cfg.modcod;
    let len = mc.frame_symbols() as f64;
    cfg.underrun = Some(Underrun {
        at_sample: (6.5 * len) as u64 * sps,
        // Not a whole number of symbols on the RF path: the timing loop meets a jump too.
        samples: (drop_frames * len) as u64 * sps + sps / 2,
    });
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 5;
    let sent: Vec<Vec<u8>> = (0..16).map(|_| bbframe(&mc, &mut state)).collect();
    for f in &sent {
        lp.submit(f).unwrap();
    }
    let mut missing = 0;
    for (i, f) in sent.iter().enumerate() {
        let got = lp.next_frame().unwrap();
        assert_eq!(got.seq, i as u64, "every frame once, in order");
        match got.outcome {
            Ok(bb) => assert_eq!(&bb, f, "frame {i} delivered as another frame"),
            Err(_) if (4..=10).contains(&i) => missing += 1,
            Err(e) => panic!("frame {i}, away from the underrun: {e:?}"),
        }
    }
    assert_eq!(lp.resyncs(), 1);
    assert_eq!(lp.outstanding(), 0);
    missing
}

#[test]
fn frames_after_an_underrun_are_found_and_matched() {
    // 8PSK 3/5 at 12 dB: every frame decodes but those the underrun cuts. 2.4 frames dropped
    // from the middle of frame 6: frames 6 (cut), 7 and 8 (gone), maybe 9 (its PLHEADER cut).
    let missing = frames_after_an_underrun(config(12, true, 12.0), 1, 2.4);
    assert!((3..=4).contains(&missing), "{missing} frames missing");
}

#[test]
fn frames_after_an_underrun_on_the_rf_path_are_found_and_matched() {
    // The same at the sample rate before the front end (timing loop and carrier tracking
    // re-acquire), with a carrier offset of 2e-3 cycles per symbol; 0.3 frames dropped.
    let mut cfg = config(12, true, 12.0);
    cfg.rf = Some(RfPath {
        freq_offset: 2e-3,
        ..RfPath::default()
    });
    let missing = frames_after_an_underrun(cfg, 4, 0.3);
    assert!((1..=2).contains(&missing), "{missing} frames missing");
}

#[test]
fn underrun_settings_are_checked() {
    let mut cfg = config(4, false, 5.0);
    cfg.underrun = Some(Underrun {
        at_sample: 0,
        samples: 0,
    });
    let e = PhyLoop::start(cfg).err().expect("refused").to_string();
    assert!(e.contains("underrun.samples 0 is outside [1, 1e7]"), "{e}");
}

fn sdr_config() -> LoopConfig {
    let mut cfg = config(12, true, 12.0);
    cfg.rf = Some(RfPath {
        sdr: Some(Sdr {
            // No SoapySDR module here, and no driver of that name anywhere: nothing is opened.
            tx_args: "driver=satlab-absent-tx".into(),
            rx_args: "driver=satlab-absent-rx".into(),
            center_freq_hz: 1.2e9,
            tx_gain_db: 0.0,
            rx_gain_db: 0.0,
            symbol_rate_baud: 1e6,
        }),
        ..RfPath::default()
    });
    cfg
}

#[test]
fn an_sdr_that_is_not_there_is_refused_at_once_by_its_arguments() {
    let t0 = std::time::Instant::now();
    let e = PhyLoop::start(sdr_config()).err().expect("refused");
    assert!(matches!(e, LoopError::FlowgraphNotRunning(_)), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("--sdr-tx 'driver=satlab-absent-tx': no SoapySDR device opened"),
        "{e}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}

#[test]
fn sdr_settings_are_checked() {
    let err = |f: fn(&mut RfPath)| {
        let mut cfg = sdr_config();
        f(cfg.rf.as_mut().unwrap());
        PhyLoop::start(cfg).err().expect("refused").to_string()
    };
    let e = err(|r| r.sdr.as_mut().unwrap().center_freq_hz = 10e9);
    assert!(
        e.contains("rf.sdr.center_freq_hz 10000000000 is outside [1e6, 6e9]"),
        "{e}"
    );
    let e = err(|r| r.sdr.as_mut().unwrap().rx_gain_db = -1.0);
    assert!(e.contains("rf.sdr.rx_gain_db -1 is outside [0, 90]"), "{e}");
    let e = err(|r| r.sdr.as_mut().unwrap().symbol_rate_baud = 1e8);
    assert!(e.contains("rf.sdr sample rate 400000000"), "{e}");
    let e = err(|r| r.sdr.as_mut().unwrap().tx_args.clear());
    assert!(e.contains("must name a device"), "{e}");
    let e = err(|r| r.freq_offset = 1e-3);
    assert!(e.contains("not with rf.sdr"), "{e}");
}

/// Pushes 16 frames with `pause` before each (an idle modulator between them) and returns, per
/// frame in order, whether it came back bit-exact; checks every frame comes back once, in order,
/// each delivered frame the one sent with its number.
fn paced_frames(cfg: LoopConfig, pause: Duration) -> (Vec<bool>, PhyLoop) {
    let mc = cfg.modcod;
    let mut lp = PhyLoop::start(cfg).unwrap();
    let mut state = 11;
    let sent: Vec<Vec<u8>> = (0..16).map(|_| bbframe(&mc, &mut state)).collect();
    for f in &sent {
        std::thread::sleep(pause);
        lp.submit(f).unwrap();
    }
    let mut ok = Vec::new();
    for (i, f) in sent.iter().enumerate() {
        let got = lp.next_frame().unwrap();
        assert_eq!(got.seq, i as u64, "every frame once, in order");
        if let Ok(bb) = &got.outcome {
            assert_eq!(bb, f, "frame {i} delivered as another frame");
        }
        ok.push(got.outcome.is_ok());
    }
    assert_eq!(lp.outstanding(), 0);
    (ok, lp)
}

#[test]
fn continuous_transmission_fills_the_pauses_with_dummy_frames_the_loop_skips() {
    // 8PSK 3/5 short frames (5.6 ms at 1 Mbaud) with 12 ms pauses: dummy PLFRAMEs (3.3 ms) go
    // out between the frames and before the first; the loop skips them and delivers every frame.
    let mut cfg = config(12, true, 12.0);
    cfg.continuous = Some(1e6);
    let (ok, lp) = paced_frames(cfg, Duration::from_millis(12));
    assert!(ok.iter().all(|&o| o), "{ok:?}");
    // How many dummies go out depends on the wall clock (about 30 here when idle, fewer when
    // the flowgraph runs late on a loaded machine): that some did and were skipped is the point.
    assert!(lp.dummies() >= 1, "{} dummies", lp.dummies());
    assert_eq!(lp.resyncs(), 0);
}

#[test]
fn continuous_transmission_on_the_rf_path_survives_an_underrun() {
    // The same through the RF path (2e-3 cycles per symbol of carrier offset) with 1001 samples
    // dropped about 6 frames in: the search finds the next PLHEADER, a data frame's or a
    // dummy's, among the dummies; the frames the gap touched are missing (at most 2 with the
    // 0.04 frames dropped, plus the first while timing and carrier lock), the rest delivered.
    let mut cfg = config(12, true, 12.0);
    cfg.continuous = Some(1e6);
    cfg.rf = Some(RfPath {
        freq_offset: 2e-3,
        ..RfPath::default()
    });
    cfg.underrun = Some(Underrun {
        at_sample: 4 * 40_000,
        samples: 1001,
    });
    let (ok, lp) = paced_frames(cfg, Duration::from_millis(8));
    let missing = ok.iter().filter(|&&o| !o).count();
    assert!(missing <= 3, "{ok:?}");
    assert!(ok[10..].iter().all(|&o| o), "{ok:?}");
    // 5-15 seen (the wall clock's, as above).
    assert!(lp.dummies() >= 1, "{} dummies", lp.dummies());
    assert_eq!(lp.resyncs(), 1);
}

#[test]
fn continuous_settings_are_checked() {
    let mut cfg = config(12, true, 12.0);
    cfg.continuous = Some(10.0);
    let e = PhyLoop::start(cfg).err().expect("refused").to_string();
    assert!(
        e.contains("continuous 10 baud is outside [1e3, 1e8]"),
        "{e}"
    );
    let mut cfg = sdr_config();
    cfg.continuous = Some(1e6);
    let e = PhyLoop::start(cfg).err().expect("refused").to_string();
    assert!(
        e.contains("an SDR pair always transmits continuously"),
        "{e}"
    );
}
