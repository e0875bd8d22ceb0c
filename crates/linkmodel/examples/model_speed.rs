//! How many packets per second one Direction processes (model cost only, no I/O).
//! `cargo run --release -p linkmodel --example model_speed`

use std::time::Instant;

use linkmodel::{Dir, Direction, LinkConfig, Outcome};

fn main() {
    for (name, yaml) in [
        ("clean 40 Msym/s", "forward: {acm: {mode: acm}}"),
        (
            "uniform BER 1e-6",
            "forward: {bit_errors: {model: uniform, ber: 1.0e-6}}",
        ),
        (
            "reordering",
            "forward: {reorder: {probability: 0.01, extra_delay_ms: 5, jitter_ms: 0.2}}",
        ),
    ] {
        let cfg = LinkConfig::from_yaml_str(yaml).expect("config");
        let mut d = Direction::new(&cfg, Dir::Forward).expect("direction");
        let mut out: Vec<Outcome> = Vec::with_capacity(1024);
        let n: u64 = 2_000_000;
        // Offer 1500-byte packets at 95% of 174 Mbit/s: one every 72 us of virtual time.
        let gap_ns = 72_000;
        let start = Instant::now();
        let mut delivered = 0u64;
        let mut t = 0;
        for _ in 0..n {
            d.enqueue(t, vec![0u8; 1500]);
            d.poll(t, &mut out);
            delivered += out.len() as u64;
            out.clear(); // the I/O side would hand the Vecs back to its pool
            t += gap_ns;
        }
        let el = start.elapsed().as_secs_f64();
        println!(
            "{name}: {:.0} packets/s of model time per core ({} outcomes, {:.1} s virtual)",
            n as f64 / el,
            delivered,
            t as f64 / 1e9
        );
    }
}
