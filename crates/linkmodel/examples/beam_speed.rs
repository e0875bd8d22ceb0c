//! Forward throughput, model CPU per delivered Gbit/s and memory of a beam of 1, 16, 64 and 1000
//! terminals (model cost only, no I/O): a 500 Msym/s carrier (HTS class, about 2.2 Gbit/s at
//! 32APSK 9/10) offered 1500-byte IPv4 packets for 6 s of virtual time, in turn to every
//! terminal's prefix, at 99 % of the carrier's MODCOD-weighted ceiling (the harmonic mean of the
//! terminals' useful rates: equal offers, each taking airtime in proportion to 1 / its rate);
//! clear sky, then half of the terminals under 6 dB of rain (a lower MODCOD, a lower ceiling).
//! The model is polled every 50 us of virtual time. Packets move as in the emulator's data plane
//! (`emulator/src/dataplane.rs`): each is copied into a buffer from a pool (from its receive ring
//! there), and a delivered one is copied out (`sendmmsg` there) and its buffer goes back to the
//! pool: no allocation per packet. `make bench-beam`, or
//! `cargo run --release -p linkmodel --example beam_speed`.
//!
//! Each row runs in a child process of its own (`beam_speed <terminals> <rain>`), so its peak
//! RSS is its own, three times, the rows in turn (the machine may be shared: a row's CPU figure
//! is the least of its three). The one-terminal row is the link without `forward.beam` (the
//! baseline); "x 1" is a row's CPU per Gbit over the baseline's, measured in the same run.

use std::process::Command;
use std::time::Instant;

use linkmodel::testkit::beam_terminals_yaml;
use linkmodel::{Dir, LinkConfig, Model, Outcome};

/// The forward link of `n` terminals (`n` = 1: no beam), terminal k behind 10.k/256.k%256.0/24,
/// the odd ones in rain if `rain`.
fn config(n: usize, rain: bool) -> LinkConfig {
    let base = "symbol_rate_baud: 500.0e6, delay_ms: 270, acm: {refresh_ms: 100}";
    if n == 1 {
        return LinkConfig::from_yaml_str(&format!("forward: {{{base}}}")).expect("config");
    }
    let terms = beam_terminals_yaml(n, |k| {
        if rain && k % 2 == 1 {
            ", attenuation: {type: constant, value_db: 6}"
        } else {
            ""
        }
    });
    let yaml = format!("forward: {{{base}, beam: {{terminals: [{terms}]}}}}");
    LinkConfig::from_yaml_str(&yaml).expect("config")
}

/// The 1514-byte Ethernet frames to each of `n` terminals (terminal k: 10.k/256.k%256.1).
fn templates(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|k| {
            let mut f = vec![0u8; 1514];
            f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
            f[14] = 0x45;
            f[30..34].copy_from_slice(&[10, (k / 256) as u8, (k % 256) as u8, 1]);
            f
        })
        .collect()
}

/// A copy of `template` in a buffer from `pool`.
fn packet(template: &[u8], pool: &mut Vec<Vec<u8>>) -> Vec<u8> {
    let mut f = pool.pop().unwrap_or_else(|| Vec::with_capacity(2048));
    f.clear();
    f.extend_from_slice(template);
    f
}

/// Peak resident memory of this process, MB.
fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// One row: prints "build_s ceiling_gbps delivered_gbps losses cpu_s_per_gbit rss_mb".
fn run(n: usize, rain: bool) {
    let start = Instant::now();
    let mut m = Model::new(&config(n, rain), Dir::Forward).expect("model");
    let build_s = start.elapsed().as_secs_f64();
    let st = m.status(0);
    let rates: Vec<f64> = if st.terminals.is_empty() {
        vec![st.useful_rate_bps]
    } else {
        st.terminals.iter().map(|t| t.useful_rate_bps).collect()
    };
    let ceiling_bps = rates.len() as f64 / rates.iter().map(|r| 1.0 / r).sum::<f64>();
    let mut out: Vec<Outcome> = Vec::with_capacity(4096);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut wire: Vec<u8> = Vec::with_capacity(2048);
    let frames = templates(n);
    let virtual_s = 6.0;
    let gap_ns = 1514.0 * 8.0 / (0.99 * ceiling_bps) * 1e9;
    let poll_ns = 50_000;
    let end_ns = (virtual_s * 1e9) as u64;
    let (mut sent, mut k, mut bytes, mut losses) = (0u64, 0usize, 0u64, 0u64);
    let mut next_poll = poll_ns;
    let start = Instant::now();
    loop {
        let t = (sent as f64 * gap_ns) as u64;
        if t >= end_ns {
            break;
        }
        while next_poll <= t {
            m.poll(next_poll, &mut out);
            for o in out.drain(..) {
                let frame = match o {
                    Outcome::Deliver { frame, .. } => {
                        bytes += frame.len() as u64;
                        wire.clear();
                        wire.extend_from_slice(&frame);
                        std::hint::black_box(&wire);
                        frame
                    }
                    Outcome::Lost { frame, .. } => {
                        losses += 1;
                        frame
                    }
                };
                pool.push(frame);
            }
            next_poll += poll_ns;
        }
        m.enqueue(t, packet(&frames[k], &mut pool));
        k = (k + 1) % n;
        sent += 1;
    }
    let cpu_s = start.elapsed().as_secs_f64();
    // Deliveries lag the 270 ms delay: count the rate over the time after it.
    let gbps = bytes as f64 * 8.0 / (virtual_s - 0.27) / 1e9;
    println!(
        "{build_s} {} {gbps} {losses} {} {}",
        ceiling_bps / 1e9,
        cpu_s / (bytes as f64 * 8.0 / 1e9),
        peak_rss_mb()
    );
}

/// The figures of row (`n`, `rain`), run in a child process.
fn run_child(n: usize, rain: &str) -> [f64; 6] {
    let exe = std::env::current_exe().expect("own path");
    let o = Command::new(exe)
        .args([n.to_string(), rain.to_string()])
        .output()
        .expect("row");
    let f: Vec<f64> = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .map(|v| v.parse().unwrap_or(f64::NAN))
        .collect();
    f.try_into()
        .unwrap_or_else(|_| panic!("row {n} {rain}: {}", String::from_utf8_lossy(&o.stderr)))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, n, rain] = &args[..] {
        run(n.parse().expect("terminals"), rain == "half");
        return;
    }
    println!(
        "terminals  rain  build s  ceiling Gbit/s  delivered Gbit/s  fill %  losses  \
         CPU s/Gbit  x 1  peak RSS MB"
    );
    let rows = [
        (1usize, "none"),
        (16, "none"),
        (64, "none"),
        (64, "half"),
        (1000, "none"),
        (1000, "half"),
    ];
    let mut best = vec![[f64::NAN; 6]; rows.len()];
    for _ in 0..3 {
        for (i, &(n, rain)) in rows.iter().enumerate() {
            let f = run_child(n, rain);
            // The first run, or one with less CPU.
            if best[i][4].is_nan() || f[4] < best[i][4] {
                best[i] = f;
            }
        }
    }
    let base = best[0][4];
    for (&(n, rain), f) in rows.iter().zip(&best) {
        let [build, ceil, got, losses, cpu, rss] = *f;
        println!(
            "{n:>9}  {rain:>4}  {build:>7.3}  {ceil:>14.2}  {got:>16.2}  {:>6.1}  {losses:>6}  \
             {cpu:>10.4}  {:>3.2}  {rss:>11.0}",
            100.0 * got / ceil,
            cpu / base
        );
    }
}
