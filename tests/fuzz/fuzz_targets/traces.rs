//! The time-series text files of crates/linkmodel: attenuation traces (`attenuation::Trace::parse`,
//! `<uint tick> <dB>`), delay files (`delay::parse_delay_file`, `<uint tick> <ms>`) and
//! error-pattern files (`bit_errors::Pattern::parse`, `<packet_index> <bit_offset>...`). A parsed
//! trace is evaluated as the emulator does, at any instant, looped or not: the value must be
//! finite and between the trace's smallest and largest values (linear interpolation).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use linkmodel::attenuation::{Source, Trace};
use linkmodel::bit_errors::Pattern;
use linkmodel::delay::{parse_delay_file, DelaySource};

fuzz_target!(|data: &[u8]| {
    // The emulator reads these files with read_to_string: only UTF-8 reaches the parsers.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.txt");
    if let Ok(trace) = Trace::parse(text, path) {
        for looped in [false, true] {
            for x in instants(&trace.points) {
                within(&trace.points, trace.at(x, looped), 1e-9);
            }
            // As the emulator evaluates a `file` source: nanoseconds over a tick of 100 ms.
            let src = Source::File {
                trace: trace.clone(),
                looped,
                tick_ns: 1e8,
            };
            for t_ns in [0, 1, 99_999_999, 100_000_000, 3_600_000_000_000, u64::MAX] {
                within(&trace.points, src.at(t_ns), 1e-9);
            }
        }
    }
    if let Ok(points) = parse_delay_file(text, path) {
        for looped in [false, true] {
            let src = DelaySource::File {
                points: points.clone(),
                refresh_ns: 1e8,
                looped,
            };
            for t_ns in [0, 1, 150_000_000, 3_600_000_000_000, u64::MAX] {
                let ms = src.at(t_ns) as f64 / 1e6;
                within(&points, ms, 1e-6);
            }
        }
    }
    let _ = Pattern::parse(text, path);
});

/// Fractional ticks around the first points and the end of the trace, and far beyond it.
fn instants(points: &[(u64, f64)]) -> Vec<f64> {
    let mut xs = vec![0.0, 0.5, 1e6, 1e18, f64::MAX];
    let ends = points.iter().take(8).chain(points.iter().rev().take(2));
    for &(t, _) in ends {
        let t = t as f64;
        xs.extend([t - 0.5, t, t + 0.25, t + 0.75, t * 2.0 + 0.5]);
    }
    xs
}

/// `v` is finite and within the values of `points` (tolerance `eps` for rounding).
fn within(points: &[(u64, f64)], v: f64, eps: f64) {
    let lo = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = points.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    assert!(
        v.is_finite() && v >= lo - eps && v <= hi + eps,
        "{v} outside [{lo}, {hi}]"
    );
}
