//! satlab-phy: decodes DVB-S2 IQ written by emulator/phy/dvbs2_tx.py and prints one JSON line per
//! frame, then a summary line (frames, frame errors, PER, decoder throughput).
//!
//! satlab-phy --modcod ID --frame normal|short [--pilots] --iq FILE --ref FILE [OPTIONS]
//! (`satlab-phy --help` lists them)
//! satlab-phy --loop-bench --modcod ID --frame normal|short [--pilots] --esn0 DB --frames N
//! [--in-flight K --sigmf PATH]: starts the PHY loop (dvbs2phy::phy_loop: the GNU Radio
//! flowgraph gr/dvbs2_loop.py over ZeroMQ), pushes N BBFRAMEs through it and prints one JSON
//! line: frames/s through the loop, the decoder's frames/s per core and the useful rate.
//! satlab-phy --check [--decoder NAME --minsum-scale F --minsum-offset B --max-iterations N]:
//! exits 0 if the decoder options are valid, else 2 with a message naming the option and its
//! limits (the only check of their ranges: `satlab phy calibrate` asks this before it starts).
//!
//! --esn0: the channel's Es/N0, used for the LLR scaling (genie noise variance, as in link-level
//! simulations); without it the noise is estimated per frame from the PLHEADER and pilots.
//! --bench: decode the file's frames and print only the summary with the throughput: frames_per_s
//! (wall time of demapping + LDPC + BCH, reading the file excluded) and frames_per_cpu_s (the
//! same frames over the decoding thread's CPU time: frames/s per core, also on a loaded machine).
//! The summary's ns_per_edge_iteration is the CPU time over (iterations x edges of the code's
//! Tanner graph), the decoder's cost independent of the code (demapping and BCH included).
//! Defaults: --decoder minsum (layered offset min-sum 360 rows at a time, dvbs2phy::minsum_qc;
//! minsum-rows: the same one row at a time, dvbs2phy::minsum; an ldpc-toolbox decoder's name,
//! e.g. HLTanhf32, selects that one), --minsum-scale 1 --minsum-offset 0.4,
//! --max-iterations 50 (layered schedule), --goldcode 0.

use std::path::PathBuf;
use std::process::ExitCode;

use dvbs2phy::constellation::C64;
use dvbs2phy::cpu::thread_cpu_s;
use dvbs2phy::iq;
use dvbs2phy::minsum::{CheckRule, DEFAULT_RULE};
use dvbs2phy::{
    loop_bench, Config, Decoder, FrameSize, LoopConfig, ModCod, Receiver, RfPath, Sdr, Underrun,
};

/// Command line (clap); a usage error exits 2, like a decoding error.
#[derive(clap::Parser)]
#[command(version, about)]
struct Args {
    /// MODCOD number (EN 302 307-1 table 12)
    #[arg(long, value_name = "ID", required_unless_present = "check")]
    modcod: Option<u32>,
    /// FECFRAME size: normal or short
    #[arg(long, value_parser = FrameSize::parse, required_unless_present = "check")]
    frame: Option<FrameSize>,
    /// The frames carry pilot blocks
    #[arg(long)]
    pilots: bool,
    /// The IQ file (emulator/phy/dvbs2_tx.py)
    #[arg(long, value_name = "FILE", required_unless_present_any = ["check", "loop_bench"])]
    iq: Option<PathBuf>,
    /// The transmitted BBFRAMEs to compare with
    #[arg(long = "ref", value_name = "FILE", required_unless_present_any = ["check", "loop_bench"])]
    reference: Option<PathBuf>,
    /// Only check the decoder options (exit 0, or 2 naming the option and its limits)
    #[arg(long)]
    check: bool,
    /// The channel's Es/N0, dB, for the LLR scaling (-10 to 40)
    #[arg(long, value_name = "DB", allow_negative_numbers = true,
          value_parser = |v: &str| number_in(v, -10.0, 40.0))]
    esn0: Option<f64>,
    /// Gold code of the physical-layer scrambling (0-262141)
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=262_141))]
    goldcode: u32,
    /// LDPC iterations at most (1-1000)
    #[arg(long, value_name = "N", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    max_iterations: u32,
    /// LDPC decoder: minsum or minsum-rows (ours) or an ldpc-toolbox decoder (HLTanhf32, ...)
    #[arg(long, value_name = "NAME", default_value = "minsum")]
    decoder: String,
    /// Min-sum's normalisation factor of the check messages (0.5-1)
    #[arg(long, value_name = "F", default_value_t = DEFAULT_RULE.scale,
          value_parser = |v: &str| number_in(v, 0.5, 1.0).map(|x| x as f32))]
    minsum_scale: f32,
    /// Min-sum's offset of the check messages, LLR units (0-2)
    #[arg(long, value_name = "B", default_value_t = DEFAULT_RULE.offset,
          value_parser = |v: &str| number_in(v, 0.0, 2.0).map(|x| x as f32))]
    minsum_offset: f32,
    /// Decode only the first N frames (--loop-bench: frames to push, default 100)
    #[arg(long, value_name = "N")]
    frames: Option<usize>,
    /// Unwrap the carrier phase along the estimated frequency offset (IQ from an RF path)
    #[arg(long)]
    track_frequency: bool,
    /// Print only the summary with the decoder throughput
    #[arg(long)]
    bench: bool,
    /// No line per frame
    #[arg(long)]
    quiet: bool,
    /// PHY loop benchmark: --frames BBFRAMEs through the GNU Radio flowgraph and back (needs
    /// --esn0)
    #[arg(long, requires = "esn0", conflicts_with_all = ["iq", "reference", "check"])]
    loop_bench: bool,
    /// PHY loop: frames pushed ahead of the decoder (1-64)
    #[arg(long, value_name = "K", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=64))]
    in_flight: u32,
    /// PHY loop: the waveform mode (`kind: dvbs2_waveform`): the flowgraph at 40 dB, each
    /// frame's noise up to --esn0 added by the loop (what per-frame Es/N0 costs)
    #[arg(long, requires = "loop_bench")]
    per_frame_esn0: bool,
    /// PHY loop: the emulator's synchronous use (`kind: dvbs2_waveform`): each frame (with a
    /// filler frame behind it) decoded before the next is pushed; implies --per-frame-esn0
    #[arg(long, requires = "loop_bench")]
    one_at_a_time: bool,
    /// PHY loop: continuous transmission at this symbol rate (1e3 to 1e8 baud): dummy PLFRAMEs
    /// whenever no frame is ready (always on with --sdr-tx, at --symbol-rate)
    #[arg(long, value_name = "BAUD", requires = "loop_bench",
          value_parser = |v: &str| number_in(v, 1e3, 1e8))]
    continuous: Option<f64>,
    /// PHY loop: a pause before each frame after the first, ms (0 to 10000): an idle modulator
    #[arg(long, value_name = "MS", default_value_t = 0, requires = "loop_bench",
          value_parser = clap::value_parser!(u64).range(0..=10_000))]
    pause_ms: u64,
    /// PHY loop: also write the IQ to PATH.sigmf-data and PATH.sigmf-meta
    #[arg(long, value_name = "PATH")]
    sigmf: Option<PathBuf>,
    /// PHY loop: the RF path (pulse shaping, channel at the sample rate, timing recovery;
    /// crates/dvbs2phy/gr/rf_path.py) instead of the symbol-level channel; needs --pilots
    #[arg(long, requires_all = ["loop_bench", "pilots"])]
    rf: bool,
    /// PHY loop, --rf: samples per symbol (2-16)
    #[arg(long, value_name = "N", default_value_t = 4, requires = "rf",
          value_parser = clap::value_parser!(u32).range(2..=16))]
    sps: u32,
    /// PHY loop, --rf: RRC roll-off (0.2, 0.25 or 0.35)
    #[arg(long, value_name = "R", default_value_t = 0.2, requires = "rf",
          value_parser = |v: &str| match v { "0.2" | "0.25" | "0.35" => Ok(v.parse::<f64>().unwrap()),
              _ => Err(format!("{v} is not one of 0.2, 0.25, 0.35")) })]
    rolloff: f64,
    /// PHY loop, --rf: carrier frequency offset, cycles per symbol (-0.01 to 0.01)
    #[arg(long, value_name = "F", default_value_t = 0.0, requires = "rf",
          allow_negative_numbers = true, value_parser = |v: &str| number_in(v, -0.01, 0.01))]
    freq_offset: f64,
    /// PHY loop, --rf: the band-edge FLL's loop bandwidth (0 = no FLL, up to 0.05)
    #[arg(long, value_name = "B", default_value_t = 0.0, requires = "rf",
          value_parser = |v: &str| number_in(v, 0.0, 0.05))]
    fll_bandwidth: f64,
    /// PHY loop, --rf: the receiver's sample clock off the transmitter's, ppm (-200 to 200)
    #[arg(long, value_name = "PPM", default_value_t = 0.0, requires = "rf",
          allow_negative_numbers = true, value_parser = |v: &str| number_in(v, -200.0, 200.0))]
    clock_ppm: f64,
    /// PHY loop: an SDR underrun, emulated: drop --underrun-samples samples once from this
    /// sample of the stream after the channel (at the sample rate with --rf)
    #[arg(long, value_name = "N", requires_all = ["loop_bench", "underrun_samples"])]
    underrun_at: Option<u64>,
    /// PHY loop: how many samples the underrun drops (1 to 1e7)
    #[arg(long, value_name = "N", requires = "underrun_at")]
    underrun_samples: Option<u64>,
    /// PHY loop, --rf: a SoapySDR transmitter in place of gr-channels (device arguments,
    /// "driver=..."); wire it to the receiver by coax through fixed attenuation, never radiate
    #[arg(long, value_name = "ARGS", requires_all = ["rf", "sdr_rx", "center_freq_hz"])]
    sdr_tx: Option<String>,
    /// PHY loop, --sdr-tx: the SoapySDR receiver's device arguments
    #[arg(long, value_name = "ARGS", requires = "sdr_tx")]
    sdr_rx: Option<String>,
    /// PHY loop, --sdr-tx: the centre frequency, Hz (1e6 to 6e9)
    #[arg(long, value_name = "HZ", requires = "sdr_tx")]
    center_freq_hz: Option<f64>,
    /// PHY loop, --sdr-tx: transmit gain, dB (0 to 90)
    #[arg(long, value_name = "DB", default_value_t = 0.0, requires = "sdr_tx")]
    tx_gain_db: f64,
    /// PHY loop, --sdr-tx: receive gain, dB (0 to 90)
    #[arg(long, value_name = "DB", default_value_t = 0.0, requires = "sdr_tx")]
    rx_gain_db: f64,
    /// PHY loop, --sdr-tx: symbols per second (the sample rate is this times --sps)
    #[arg(long, value_name = "BAUD", default_value_t = 1e6, requires = "sdr_tx")]
    symbol_rate: f64,
}

impl Args {
    /// --iq (present unless --check).
    fn iq_path(&self) -> &std::path::Path {
        self.iq.as_deref().unwrap_or(std::path::Path::new(""))
    }
}

/// A number in [lo, hi].
fn number_in(v: &str, lo: f64, hi: f64) -> Result<f64, String> {
    let x: f64 = v
        .parse()
        .map_err(|_| format!("{v:?} is not a valid number"))?;
    if !(lo..=hi).contains(&x) {
        return Err(format!("{v} is outside [{lo}, {hi}]"));
    }
    Ok(x)
}

/// Decodes the frames of the IQ file against the reference, printing a line per frame and the
/// summary.
fn run(a: Args) -> Result<(), String> {
    let rule = CheckRule {
        scale: a.minsum_scale,
        offset: a.minsum_offset,
    };
    // clap has checked the numbers' ranges.
    let decoder = Decoder::parse(&a.decoder, rule)?;
    if a.check {
        return Ok(());
    }
    if a.loop_bench {
        return loop_bench(&a, decoder);
    }
    let (Some(id), Some(frame), Some(iq_path), Some(ref_path)) =
        (a.modcod, a.frame, &a.iq, &a.reference)
    else {
        unreachable!("clap requires --modcod, --frame, --iq and --ref without --check");
    };
    let mc = ModCod::new(id, frame, a.pilots)?;
    let samples = iq::read(iq_path)?;
    let reference = std::fs::read(ref_path).map_err(|e| format!("{}: {e}", ref_path.display()))?;
    let mut rx = Receiver::new(Config {
        modcod: mc,
        goldcode: a.goldcode as usize,
        n0: a.esn0.map(|e| 10f64.powf(-e / 10.0)),
        max_iterations: a.max_iterations as usize,
        decoder,
        track_frequency: a.track_frequency,
    });
    let start = sync(&rx, &samples, &a, &mc)?;
    let n = frame_count(
        &a,
        &rx,
        samples.len() - start,
        reference.len() / (mc.kbch / 8),
        start,
    )?;
    let totals = decode_frames(&mut rx, &samples[start..], &reference, n, &a, &mc);
    print_summary(&a, decoder, &mc, start, rx.edges(), &totals);
    Ok(())
}

/// The RF path's settings in the bench's line (null without --rf).
fn rf_json(a: &Args) -> serde_json::Value {
    if !a.rf {
        return serde_json::Value::Null;
    }
    serde_json::json!({
        "sps": a.sps,
        "rolloff": a.rolloff,
        "freq_offset": a.freq_offset,
        "fll_bandwidth": a.fll_bandwidth,
        "clock_ppm": a.clock_ppm,
    })
}

/// --loop-bench: the PHY loop's figures as one JSON line.
/// The SDR pair of --sdr-tx/--sdr-rx, if given.
fn sdr(a: &Args) -> Option<Sdr> {
    Some(Sdr {
        tx_args: a.sdr_tx.clone()?,
        rx_args: a.sdr_rx.clone()?,
        center_freq_hz: a.center_freq_hz?,
        tx_gain_db: a.tx_gain_db,
        rx_gain_db: a.rx_gain_db,
        symbol_rate_baud: a.symbol_rate,
    })
}

fn loop_bench(a: &Args, decoder: Decoder) -> Result<(), String> {
    let (Some(id), Some(frame), Some(esn0)) = (a.modcod, a.frame, a.esn0) else {
        unreachable!("clap requires --modcod, --frame and --esn0 with --loop-bench");
    };
    let mc = ModCod::new(id, frame, a.pilots)?;
    let mut cfg = LoopConfig::new(mc, esn0);
    cfg.goldcode = a.goldcode;
    cfg.max_iterations = a.max_iterations as usize;
    cfg.decoder = decoder;
    cfg.in_flight = a.in_flight as usize;
    cfg.sigmf = a.sigmf.clone();
    cfg.per_frame_esn0 = a.per_frame_esn0 || a.one_at_a_time;
    cfg.rf = a.rf.then_some(RfPath {
        sps: a.sps,
        rolloff: a.rolloff,
        freq_offset: a.freq_offset,
        fll_bandwidth: a.fll_bandwidth,
        clock_ppm: a.clock_ppm,
        sdr: sdr(a),
    });
    if let (Some(at_sample), Some(samples)) = (a.underrun_at, a.underrun_samples) {
        cfg.underrun = Some(Underrun { at_sample, samples });
    }
    let frames = a.frames.unwrap_or(100);
    cfg.continuous = a.continuous;
    let how = loop_bench::Submit {
        one_at_a_time: a.one_at_a_time,
        pause: std::time::Duration::from_millis(a.pause_ms),
    };
    let r = loop_bench::run(cfg, frames, how).map_err(|e| e.to_string())?;
    let n = r.frames as f64;
    println!(
        "{}",
        serde_json::json!({
            "loop_bench": true,
            "modcod": mc.id,
            "label": mc.label(),
            "frame": frame_name(frame),
            "pilots": a.pilots,
            "esn0_db": esn0,
            "per_frame_esn0": a.per_frame_esn0 || a.one_at_a_time,
            "one_at_a_time": a.one_at_a_time,
            "rf": rf_json(a),
            "in_flight": a.in_flight,
            "frames": r.frames,
            "ok": r.ok,
            "ldpc_not_converged": r.ldpc_not_converged,
            "bch_failed": r.bch_failed,
            "residual_errors": r.residual_errors,
            "lost": r.lost,
            "resyncs": r.resyncs,
            "continuous_baud": a.continuous,
            "pause_ms": a.pause_ms,
            "dummies": r.dummies,
            "max_round_trip_s": a.one_at_a_time.then_some(r.max_round_trip_s),
            "fade_floor_frames": r.fade_floor_frames,
            "mean_iterations": r.mean_iterations,
            "mean_esn0_est_db": r.mean_esn0_est_db,
            "start_s": r.start_s,
            "wall_s": r.wall_s,
            "frames_per_s": r.frames_per_s(),
            "decoder_frames_per_s": n / r.decode_s,
            "decoder_frames_per_cpu_s": n / r.decode_cpu_s,
            "useful_mbit_per_s": r.useful_bit_per_s(&mc) / 1e6,
        })
    );
    Ok(())
}

/// "normal" or "short", as the command line and the summary spell it.
fn frame_name(size: FrameSize) -> &'static str {
    if size == FrameSize::Normal {
        "normal"
    } else {
        "short"
    }
}

/// The sample where the first frame's PLHEADER starts, or an error if no correlation is strong
/// enough.
fn sync(rx: &Receiver, samples: &[C64], a: &Args, mc: &ModCod) -> Result<usize, String> {
    let (start, quality) = rx.find_start(samples);
    if quality < 0.2 {
        return Err(format!(
            "{}: no PLHEADER of {} ({} frames{}) found in the first {} samples (best correlation {quality:.2}, at least 0.2 expected)",
            a.iq_path().display(),
            mc.label(),
            frame_name(mc.frame),
            if a.pilots { ", pilots" } else { "" },
            rx.frame_len()
        ));
    }
    Ok(start)
}

/// How many frames to decode: whole frames in the IQ file after `start` that the reference
/// covers, at most --frames; an error if none.
fn frame_count(
    a: &Args,
    rx: &Receiver,
    samples_after_start: usize,
    reference_frames: usize,
    start: usize,
) -> Result<usize, String> {
    let len = rx.frame_len();
    let mut n = (samples_after_start / len).min(reference_frames);
    if let Some(f) = a.frames {
        n = n.min(f);
    }
    if n == 0 {
        return Err(format!(
            "{}: no whole frame after offset {start} ({len} symbols each)",
            a.iq_path().display()
        ));
    }
    Ok(n)
}

/// What the decoded frames add up to.
struct Totals {
    frames: usize,
    errors: usize,
    iterations: usize,
    /// Wall time of the decoding (demapping + LDPC + BCH), s.
    decode_s: f64,
    /// This thread's CPU time over the same frames, s.
    cpu_s: f64,
}

/// Decodes `n` frames from `samples` (starting at the first frame), printing a line per frame
/// unless --bench or --quiet.
fn decode_frames(
    rx: &mut Receiver,
    samples: &[C64],
    reference: &[u8],
    n: usize,
    a: &Args,
    mc: &ModCod,
) -> Totals {
    let (len, ref_len) = (rx.frame_len(), mc.kbch / 8);
    let mut t = Totals {
        frames: n,
        errors: 0,
        iterations: 0,
        decode_s: 0.0,
        cpu_s: 0.0,
    };
    let cpu0 = thread_cpu_s();
    for i in 0..n {
        let s = i * len;
        let next = samples.get(s + len..s + len + 90);
        let r = rx.decode(
            i,
            &samples[s..s + len],
            next,
            &reference[i * ref_len..(i + 1) * ref_len],
        );
        t.errors += usize::from(!r.ok);
        t.decode_s += r.decode_s;
        t.iterations += r.iterations;
        if !a.bench && !a.quiet {
            println!(
                "{}",
                serde_json::json!({
                    "frame": r.index,
                    "ok": r.ok,
                    "ldpc_ok": r.ldpc_ok,
                    "iterations": r.iterations,
                    "bch_corrected": r.bch_corrected,
                    "bit_errors": r.bit_errors,
                    "esn0_est_db": (r.esn0_est_db * 100.0).round() / 100.0,
                })
            );
        }
    }
    // Decoding is single-threaded: this thread's CPU time, which on a loaded machine is less
    // than the wall time, gives the throughput per core.
    t.cpu_s = thread_cpu_s() - cpu0;
    t
}

/// The summary line.
fn print_summary(a: &Args, decoder: Decoder, mc: &ModCod, start: usize, edges: usize, t: &Totals) {
    let n = t.frames as f64;
    let edge_iterations = (t.iterations * edges) as f64;
    println!(
        "{}",
        serde_json::json!({
            "summary": true,
            "modcod": mc.id,
            "label": mc.label(),
            "frame": frame_name(mc.frame),
            "pilots": a.pilots,
            "esn0_db": a.esn0,
            "sync_offset": start,
            "frames": t.frames,
            "frame_errors": t.errors,
            "per": t.errors as f64 / n,
            "mean_iterations": t.iterations as f64 / n,
            "decoder": a.decoder,
            "minsum_scale": decoder.rule().map(|r| short_f64(r.scale)),
            "minsum_offset": decoder.rule().map(|r| short_f64(r.offset)),
            "max_iterations": a.max_iterations,
            "decode_s": t.decode_s,
            "frames_per_s": n / t.decode_s,
            "cpu_s": t.cpu_s,
            "frames_per_cpu_s": n / t.cpu_s,
            "ns_per_edge_iteration": (edge_iterations > 0.0).then(|| t.cpu_s * 1e9 / edge_iterations),
            "useful_mbit_per_s": n * (mc.kbch - 80) as f64 / t.decode_s / 1e6,
        })
    );
}

/// An f32 as the f64 of its shortest decimal (0.4, not 0.4000000059604645).
fn short_f64(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::NAN)
}

fn main() -> ExitCode {
    match run(clap::Parser::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("satlab-phy: {e}");
            ExitCode::from(2)
        }
    }
}
