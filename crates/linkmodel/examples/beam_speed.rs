//! Forward throughput and model CPU per Gbit/s of a beam of 1, 16 and 64 terminals (model cost
//! only, no I/O): a 500 Msym/s carrier (HTS class, about 2 Gbit/s at 32APSK 9/10) offered 1500-byte
//! IPv4 packets for 2 s of virtual time, spread over the terminals' prefixes, at 105% of the
//! clear-sky ceiling; clear sky, then 64 terminals half of them under 6 dB of rain (a lower
//! MODCOD: a lower ceiling, more queue drops). `make bench-beam`, or
//! `cargo run --release -p linkmodel --example beam_speed`.
//! The one-terminal row is the link without `forward.beam` (the baseline).

use std::time::Instant;

use linkmodel::{Dir, LinkConfig, Model, Outcome};

/// The forward link of `n` terminals (`n` = 1: no beam), terminal k behind 10.1.k.0/24, the
/// odd ones in rain if `rain`.
fn config(n: usize, rain: bool) -> LinkConfig {
    let base = "symbol_rate_baud: 500.0e6, delay_ms: 270, acm: {refresh_ms: 100}";
    if n == 1 {
        return LinkConfig::from_yaml_str(&format!("forward: {{{base}}}")).expect("config");
    }
    let terms: Vec<String> = (0..n)
        .map(|k| {
            let rain = if rain && k % 2 == 1 {
                ", attenuation: {type: constant, value_db: 6}"
            } else {
                ""
            };
            format!("{{name: t{k}, prefixes: [10.1.{k}.0/24]{rain}}}")
        })
        .collect();
    let yaml = format!(
        "forward: {{{base}, beam: {{terminals: [{}]}}}}",
        terms.join(", ")
    );
    LinkConfig::from_yaml_str(&yaml).expect("config")
}

/// A 1514-byte Ethernet frame to 10.1.`k`.1.
fn packet(k: usize) -> Vec<u8> {
    let mut f = vec![0u8; 1514];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[30..34].copy_from_slice(&[10, 1, k as u8, 1]);
    f
}

fn main() {
    println!("terminals  rain  offered Gbit/s  delivered Gbit/s  model CPU s per delivered Gbit");
    for (n, rain) in [(1usize, false), (16, false), (64, false), (64, true)] {
        let mut m = Model::new(&config(n, rain), Dir::Forward).expect("model");
        let mut out: Vec<Outcome> = Vec::with_capacity(4096);
        let virtual_s = 2.0;
        let offered_bps = 1.05 * 2.2e9;
        let gap_ns = (1514.0 * 8.0 / offered_bps * 1e9) as u64;
        let end_ns = (virtual_s * 1e9) as u64;
        let (mut t, mut k, mut bytes) = (0u64, 0usize, 0u64);
        let start = Instant::now();
        while t < end_ns {
            m.enqueue(t, packet(k));
            k = (k + 1) % n;
            t += gap_ns;
            if k == 0 {
                m.poll(t, &mut out);
                for o in out.drain(..) {
                    if let Outcome::Deliver { frame, .. } = o {
                        bytes += frame.len() as u64;
                    }
                }
            }
        }
        let cpu_s = start.elapsed().as_secs_f64();
        // Deliveries lag the 270 ms delay: count the rate over the time after it.
        let gbps = bytes as f64 * 8.0 / (virtual_s - 0.27) / 1e9;
        println!(
            "{n:>9}  {:>4}  {:>14.2}  {gbps:>16.2}  {:>30.3}",
            if rain { "half" } else { "none" },
            offered_bps / 1e9,
            cpu_s / (bytes as f64 * 8.0 / 1e9)
        );
    }
}
