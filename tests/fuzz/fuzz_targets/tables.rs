//! The table files of crates/linkmodel: MODCOD tables (`modcod::ModcodTable::parse`,
//! `id MOD rate efficiency esn0_db`) and PER tables (`per::parse`, `modcod_id,esn0_db,per`). Every
//! row of a parsed MODCOD table gets a frame geometry as the link model computes it, and a PER
//! curve gives a probability in [0, 1] at any Es/N0.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use linkmodel::config::FrameSize;
use linkmodel::modcod::{dvbs2_shape, rcs2_shape, ModcodTable};
use linkmodel::per;

fuzz_target!(|data: &[u8]| {
    // The emulator reads these files with read_to_string: only UTF-8 reaches the parsers.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let path = Path::new("fuzz.txt");
    if let Ok(table) = ModcodTable::parse(text, path) {
        for m in &table.rows {
            assert_eq!(table.index_of(m.id).map(|i| table.rows[i].id), Some(m.id));
            for size in [FrameSize::Normal, FrameSize::Short] {
                for pilots in [false, true] {
                    if let Some(s) = dvbs2_shape(m, size, pilots) {
                        assert!(s.data_bytes > 0 && s.symbols > 0);
                        assert!(s.useful_rate_bps(40e6).is_finite());
                    }
                }
            }
            for burst in [64, 536, 100_000] {
                let _ = rcs2_shape(m, burst);
            }
            let _ = m.name();
        }
    }
    if let Ok(curves) = per::parse(text, path) {
        for c in curves.values().take(16) {
            for esn0 in [-1e9, -50.0, -3.3, 0.0, 4.0, 12.75, 80.0, 1e9, f64::NAN] {
                let p = c.per(esn0);
                assert!((0.0..=1.0).contains(&p), "PER {p} at {esn0} dB");
            }
        }
    }
});
