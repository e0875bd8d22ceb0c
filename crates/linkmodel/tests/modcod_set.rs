//! `modcod_set`: the embedded DVB-S2X table selected in the link configuration.

use linkmodel::{Dir, Direction};

mod common;
use common::{cfg, err};

fn forward_modcod(yaml: &str) -> (u32, String, f64) {
    let d = Direction::new(&cfg(yaml), Dir::Forward).unwrap();
    let st = d.status(0);
    let m = st.modcod.unwrap();
    (m.id, m.name, st.useful_rate_bps)
}

#[test]
fn dvbs2x_set_is_selectable_and_used_by_acm() {
    // Clear sky 20 dB + 20 dB = 16.99 dB. DVB-S2: 32APSK 9/10 (16.05 dB). DVB-S2X: the highest
    // threshold below is 256APSK 29/45-L (16.98 dB, EN 302 307-2 Table 20a), 5.07 bit/symbol.
    let (id, name, s2_rate) = forward_modcod("forward: {pilots: false}");
    assert_eq!((id, name.as_str()), (28, "32APSK 9/10"));
    let (id, name, s2x_rate) = forward_modcod("forward: {modcod_set: dvbs2x, pilots: false}");
    assert_eq!((id, name.as_str()), (204, "256APSK 29/45-L"));
    // 40 Msym/s x 5.065690 bit/symbol (the data field rate, no pilots)
    assert!((s2x_rate - 40e6 * 5.065690).abs() < 100.0, "{s2x_rate}");
    assert!(s2x_rate > s2_rate);
    // 3 dB of rain on the downlink: 20 dB and 17 dB -> 15.24 dB total: 64APSK 11/15 (14.81 dB)
    // is the highest threshold below (64APSK 7/9 needs 15.47 dB).
    let (id, _, _) = forward_modcod(
        "forward: {modcod_set: dvbs2x, downlink: {attenuation: {type: constant, value_db: 3}}}",
    );
    assert_eq!(id, 186);
    // CCM on a DVB-S2X MODCOD; short frames skip what has no short frame (ACM) and refuse it
    // (CCM).
    let (id, _, _) = forward_modcod("forward: {modcod_set: dvbs2x, acm: {mode: ccm, modcod: 200}}");
    assert_eq!(id, 200);
    assert_eq!(
        err("forward: {modcod_set: dvbs2x, frame: short, acm: {mode: ccm, modcod: 200}}"),
        "forward.acm.modcod: MODCOD id 200 (128APSK 3/4) does not exist with this frame size / burst length"
    );
    let (id, _, _) = forward_modcod("forward: {modcod_set: dvbs2x, frame: short}");
    assert_eq!(
        id, 27,
        "32APSK 8/9 is the best with a short frame at 16.99 dB"
    );
}

#[test]
fn modcod_set_errors_name_the_field() {
    assert_eq!(
        err("return: {modcod_set: dvbs2x}"),
        "return.modcod_set: only for kind dvbs2 (rcs2 uses modcod_table or the embedded RCS2 table)"
    );
    assert_eq!(
        err("forward: {modcod_set: dvbs2x, modcod_table: t.txt}"),
        "forward.modcod_set: give either modcod_table or modcod_set, not both"
    );
    assert!(err("forward: {modcod_set: dvbs3}").contains("unknown variant `dvbs3`"));
}
