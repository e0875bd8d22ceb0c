//! The link configuration parser: `LinkConfig::from_yaml_str` (serde_yaml, then resolution and
//! validation, which loads every trace and table the configuration names; the emulator's own
//! configuration file wraps the same sections). A configuration it accepts must build both
//! directions of the link model and carry a few packets without panicking.
#![no_main]

use std::path::{Component, Path};

use libfuzzer_sys::fuzz_target;
use linkmodel::{Dir, Direction, LinkConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Validation reads the files the configuration names. Let the fuzzer name only relative paths
    // below the working directory (tests/fuzz: the seeds name corpus/traces/..., corpus/tables/...)
    // so it never reads /dev/zero, a FIFO or /proc/kmsg and hangs. serde_yaml here is the same
    // deserializer from_yaml_str runs first, so an input this skips fails there before any read.
    if let Ok(cfg) = serde_yaml::from_str::<LinkConfig>(text) {
        if !file_paths(&cfg).all(harmless) {
            return;
        }
    }
    let Ok(mut cfg) = LinkConfig::from_yaml_str(text) else {
        return;
    };
    for dir in [Dir::Forward, Dir::Return] {
        // Direction::new would create the record file: no files written by the fuzzer.
        cfg.direction_mut(dir).bit_errors.record_file = None;
        let mut d = Direction::new(&cfg, dir).expect("a validated configuration builds");
        let mut out = Vec::new();
        for i in 0..4u64 {
            d.enqueue(i * 1_000_000, vec![0x45; 60 + 480 * i as usize]);
            d.poll(i * 1_000_000, &mut out);
        }
        for t in [300_000_000, 2_000_000_000, 60_000_000_000u64] {
            d.poll(t, &mut out);
        }
        let _ = d.status(60_000_000_000);
    }
});

/// Every file the configuration names and validation reads.
fn file_paths(cfg: &LinkConfig) -> impl Iterator<Item = &Path> {
    [&cfg.forward, &cfg.return_].into_iter().flat_map(|d| {
        [
            d.uplink.attenuation.file.as_deref(),
            d.downlink.attenuation.file.as_deref(),
            d.delay_file.as_ref().map(|f| f.path.as_path()),
            d.modcod_table.as_deref(),
            d.per_table.as_deref(),
            d.bit_errors.pattern_file.as_deref(),
        ]
        .into_iter()
        .flatten()
    })
}

/// A relative path without `..` that is a regular file or does not exist.
fn harmless(p: &Path) -> bool {
    p.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.symlink_metadata().map_or(true, |m| m.is_file())
}
