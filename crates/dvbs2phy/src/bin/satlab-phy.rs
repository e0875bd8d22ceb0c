//! satlab-phy: decodes DVB-S2 IQ written by emulator/phy/dvbs2_tx.py and prints one JSON line per
//! frame, then a summary line (frames, frame errors, PER, decoder throughput).
//!
//! satlab-phy --modcod ID --frame normal|short [--pilots] --iq FILE --ref FILE [OPTIONS]
//! (`satlab-phy --help` lists them)
//!
//! --esn0: the channel's Es/N0, used for the LLR scaling (genie noise variance, as in link-level
//! simulations); without it the noise is estimated per frame from the PLHEADER and pilots.
//! --bench: decode the file's frames and print only the summary with the throughput: frames_per_s
//! (wall time of demapping + LDPC + BCH, reading the file excluded) and frames_per_cpu_s (the
//! same frames over the decoding thread's CPU time: frames/s per core, also on a loaded machine).
//! Defaults: --decoder HLTanhf32 (see dvbs2phy::receiver), --max-iterations 50 (layered
//! schedule), --goldcode 0.

use std::path::PathBuf;
use std::process::ExitCode;

use dvbs2phy::iq;
use dvbs2phy::{Config, FrameSize, ModCod, Receiver};
use ldpc_toolbox::decoder::factory::DecoderImplementation;

/// Command line (clap); a usage error exits 2, like a decoding error.
#[derive(clap::Parser)]
#[command(version, about)]
struct Args {
    /// MODCOD number (EN 302 307-1 table 12)
    #[arg(long, value_name = "ID")]
    modcod: u32,
    /// FECFRAME size: normal or short
    #[arg(long, value_parser = FrameSize::parse)]
    frame: FrameSize,
    /// The frames carry pilot blocks
    #[arg(long)]
    pilots: bool,
    /// The IQ file (emulator/phy/dvbs2_tx.py)
    #[arg(long, value_name = "FILE")]
    iq: PathBuf,
    /// The transmitted BBFRAMEs to compare with
    #[arg(long = "ref", value_name = "FILE")]
    reference: PathBuf,
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
    /// ldpc-toolbox decoder
    #[arg(long, value_name = "NAME", default_value = "HLTanhf32", value_parser = decoder)]
    decoder: DecoderImplementation,
    /// Decode only the first N frames
    #[arg(long, value_name = "N")]
    frames: Option<usize>,
    /// Print only the summary with the decoder throughput
    #[arg(long)]
    bench: bool,
    /// No line per frame
    #[arg(long)]
    quiet: bool,
}

fn decoder(v: &str) -> Result<DecoderImplementation, &'static str> {
    v.parse().map_err(|_| "not an ldpc-toolbox decoder")
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

fn run(a: Args) -> Result<(), String> {
    let mc = ModCod::new(a.modcod, a.frame, a.pilots)?;
    let samples = iq::read(&a.iq)?;
    let reference =
        std::fs::read(&a.reference).map_err(|e| format!("{}: {e}", a.reference.display()))?;
    let ref_len = mc.kbch / 8;
    let mut rx = Receiver::new(Config {
        modcod: mc,
        goldcode: a.goldcode as usize,
        n0: a.esn0.map(|e| 10f64.powf(-e / 10.0)),
        max_iterations: a.max_iterations as usize,
        decoder: a.decoder,
    });
    let len = rx.frame_len();
    let (start, quality) = rx.find_start(&samples);
    if quality < 0.2 {
        return Err(format!(
            "{}: no PLHEADER of {} ({} frames{}) found in the first {} samples (best correlation {quality:.2}, at least 0.2 expected)",
            a.iq.display(),
            mc.label(),
            if a.frame == FrameSize::Normal { "normal" } else { "short" },
            if a.pilots { ", pilots" } else { "" },
            len
        ));
    }
    let mut n = (samples.len() - start) / len;
    n = n.min(reference.len() / ref_len);
    if let Some(f) = a.frames {
        n = n.min(f);
    }
    if n == 0 {
        return Err(format!(
            "{}: no whole frame after offset {start} ({len} symbols each)",
            a.iq.display()
        ));
    }
    let (mut errors, mut decode_s, mut iters) = (0usize, 0.0f64, 0usize);
    let cpu0 = thread_cpu_s();
    for i in 0..n {
        let s = start + i * len;
        let next = samples.get(s + len..s + len + 90);
        let r = rx.decode(
            i,
            &samples[s..s + len],
            next,
            &reference[i * ref_len..(i + 1) * ref_len],
        );
        errors += usize::from(!r.ok);
        decode_s += r.decode_s;
        iters += r.iterations;
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
    let cpu_s = thread_cpu_s() - cpu0;
    println!(
        "{}",
        serde_json::json!({
            "summary": true,
            "modcod": mc.id,
            "label": mc.label(),
            "frame": if a.frame == FrameSize::Normal { "normal" } else { "short" },
            "pilots": a.pilots,
            "esn0_db": a.esn0,
            "sync_offset": start,
            "frames": n,
            "frame_errors": errors,
            "per": errors as f64 / n as f64,
            "mean_iterations": iters as f64 / n as f64,
            "decoder": a.decoder.to_string(),
            "max_iterations": a.max_iterations,
            "decode_s": decode_s,
            "frames_per_s": n as f64 / decode_s,
            "cpu_s": cpu_s,
            "frames_per_cpu_s": n as f64 / cpu_s,
            "useful_mbit_per_s": n as f64 * (mc.kbch - 80) as f64 / decode_s / 1e6,
        })
    );
    Ok(())
}

/// CPU time of the calling thread, seconds.
fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; CLOCK_THREAD_CPUTIME_ID exists on
    // Linux.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
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
