//! satlab-phy: decodes DVB-S2 IQ written by emulator/phy/dvbs2_tx.py and prints one JSON line per
//! frame, then a summary line (frames, frame errors, PER, decoder throughput).
//!
//! satlab-phy --modcod ID --frame normal|short [--pilots] --iq FILE --ref FILE
//!            [--esn0 DB] [--goldcode N] [--max-iterations N] [--decoder NAME] [--frames N]
//!            [--bench] [--quiet]
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

struct Args {
    modcod: u32,
    frame: FrameSize,
    pilots: bool,
    iq: PathBuf,
    reference: PathBuf,
    esn0: Option<f64>,
    goldcode: usize,
    max_iterations: usize,
    decoder: DecoderImplementation,
    frames: Option<usize>,
    bench: bool,
    quiet: bool,
}

fn parse_num<T: std::str::FromStr>(name: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{name} {v:?} is not a valid number"))
}

fn parse(argv: &[String]) -> Result<Args, String> {
    let mut modcod = None;
    let mut frame = None;
    let mut pilots = false;
    let mut iq = None;
    let mut reference = None;
    let mut esn0 = None;
    let mut goldcode = 0usize;
    let mut max_iterations = 50usize;
    let mut decoder = DecoderImplementation::HLTanhf32;
    let mut frames = None;
    let mut bench = false;
    let mut quiet = false;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut val = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--modcod" => modcod = Some(parse_num::<u32>("--modcod", &val()?)?),
            "--frame" => frame = Some(FrameSize::parse(&val()?)?),
            "--pilots" => pilots = true,
            "--iq" => iq = Some(PathBuf::from(val()?)),
            "--ref" => reference = Some(PathBuf::from(val()?)),
            "--esn0" => {
                let v: f64 = parse_num("--esn0", &val()?)?;
                if !(-10.0..=40.0).contains(&v) {
                    return Err(format!("--esn0 {v} is outside [-10, 40] dB"));
                }
                esn0 = Some(v);
            }
            "--goldcode" => {
                goldcode = parse_num("--goldcode", &val()?)?;
                if goldcode > 262_141 {
                    return Err(format!("--goldcode {goldcode} is outside [0, 262141]"));
                }
            }
            "--max-iterations" => {
                max_iterations = parse_num("--max-iterations", &val()?)?;
                if !(1..=1000).contains(&max_iterations) {
                    return Err(format!(
                        "--max-iterations {max_iterations} is outside [1, 1000]"
                    ));
                }
            }
            "--decoder" => {
                let v = val()?;
                decoder = v
                    .parse()
                    .map_err(|_| format!("--decoder {v:?} is not an ldpc-toolbox decoder"))?;
            }
            "--frames" => frames = Some(parse_num("--frames", &val()?)?),
            "--bench" => bench = true,
            "--quiet" => quiet = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(Args {
        modcod: modcod.ok_or("--modcod is required")?,
        frame: frame.ok_or("--frame is required (normal or short)")?,
        pilots,
        iq: iq.ok_or("--iq is required")?,
        reference: reference.ok_or("--ref is required")?,
        esn0,
        goldcode,
        max_iterations,
        decoder,
        frames,
        bench,
        quiet,
    })
}

fn run(a: Args) -> Result<(), String> {
    let mc = ModCod::new(a.modcod, a.frame, a.pilots)?;
    let samples = iq::read(&a.iq)?;
    let reference =
        std::fs::read(&a.reference).map_err(|e| format!("{}: {e}", a.reference.display()))?;
    let ref_len = mc.kbch / 8;
    let mut rx = Receiver::new(Config {
        modcod: mc,
        goldcode: a.goldcode,
        n0: a.esn0.map(|e| 10f64.powf(-e / 10.0)),
        max_iterations: a.max_iterations,
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
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match parse(&argv).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is_empty() => {
            println!(
                "{}",
                include_str!("satlab-phy.rs")
                    .lines()
                    .take_while(|l| l.starts_with("//!"))
                    .map(|l| l.trim_start_matches("//!").trim_start_matches(" "))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("satlab-phy: {e}");
            ExitCode::from(2)
        }
    }
}
