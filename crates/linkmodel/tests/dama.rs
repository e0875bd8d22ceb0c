//! DAMA on the return link (`return.dama`) through a whole Direction in virtual time: a backlog
//! offered to an idle terminal goes out at CRA for one request round trip, then at CRA + the
//! granted RBDC; configuration errors name the field.

use linkmodel::{Dir, Direction, Outcome};

mod common;
use common::{cfg, err, MS};

/// A 4 Mbaud RCS2 return link at QPSK 5/6 (107-byte slots of 536 symbols), 250 ms each way,
/// DAMA with `dama` (YAML flow mapping entries).
fn return_link(dama: &str) -> String {
    format!(
        "forward: {{delay_ms: 250}}\n\
         return: {{delay_ms: 250, acm: {{mode: ccm, modcod: 7}},\n  \
         queue: {{limit_packets: 10000, limit_bytes: 20000000}},\n  \
         dama: {{{dama}}}}}"
    )
}

/// Offers 4000 packets of 1500 bytes at time 0 and runs 4 s; the bytes delivered in each 26.5 ms
/// superframe of arrival time (from the first possible arrival, 250 ms).
fn delivered_per_superframe(yaml: &str) -> (Vec<u64>, Direction) {
    let mut d = Direction::new(&cfg(yaml), Dir::Return).unwrap();
    for _ in 0..4000 {
        d.enqueue(0, vec![0u8; 1500]);
    }
    let mut per_sf = vec![0u64; 160];
    let mut out = Vec::new();
    for t in (0..4000 * MS).step_by(MS as usize / 2) {
        d.poll(t, &mut out);
        for o in out.drain(..) {
            if let Outcome::Deliver { frame, .. } = o {
                let sf = ((t - 250 * MS) as f64 / 26.5e6) as usize;
                per_sf[sf] += frame.len() as u64;
            }
        }
    }
    (per_sf, d)
}

fn kbps(bytes: u64, superframes: usize) -> f64 {
    bytes as f64 * 8.0 / (superframes as f64 * 0.0265) / 1e3
}

#[test]
fn an_idle_terminal_ramps_from_cra_to_the_rbdc_grant_after_the_request_round_trip() {
    let (per_sf, d) = delivered_per_superframe(&return_link(
        "cra_kbps: 256, rbdc_max_kbps: 2048, rbdc_timeout_superframes: 16",
    ));
    let st = d.status(4000 * MS).dama.expect("dama status");
    // ceil(500 ms / 26.5 ms) + 1 scheduling superframe.
    assert_eq!(st.request_delay_superframes, 20);
    assert_eq!(st.slot_bytes, 107);
    // The first round trip (superframes 0-19): CRA only. A 1500-byte packet spans 15 slots of
    // 107 bytes, whose GSE fragment headers take 3.7 %: goodput = 0.963 x grant.
    let first = kbps(per_sf[1..19].iter().sum(), 18);
    assert!(
        (240.0..=256.0).contains(&first),
        "CRA phase {first} kbit/s {:?}",
        &per_sf[..24]
    );
    // From superframe 20 on: CRA + the 2048 kbit/s RBDC maximum.
    let granted = kbps(per_sf[22..100].iter().sum(), 78);
    // The ramp: the backlog arrived just after superframe 0 started, so the first request leaves
    // at superframe 1 and its grant is used from superframe 21: at most one packet per superframe
    // (CRA) arrives before, five (CRA + RBDC) from then on.
    assert!(
        per_sf[..21].iter().all(|&b| b <= 1500) && per_sf[21..26].iter().all(|&b| b >= 6000),
        "{:?}",
        &per_sf[..26]
    );
    assert!(
        (2195.0..=2240.0).contains(&granted),
        "granted phase {granted} kbit/s"
    );
    assert_eq!(st.requested_rbdc_kbps, 2048.0);
    assert!((st.granted_kbps - 2304.0).abs() < 40.0, "{st:?}");
}

#[test]
fn cra_only_and_rbdc_only_carry_what_is_configured() {
    // CRA only: 512 kbit/s from the first superframe, never more (goodput 0.963 x grant).
    let (per_sf, _) = delivered_per_superframe(&return_link("cra_kbps: 512, rbdc_max_kbps: 0"));
    let cra = kbps(per_sf[1..130].iter().sum(), 129);
    assert!((485.0..=500.0).contains(&cra), "CRA only {cra} kbit/s");
    // RBDC only: nothing for one round trip, then the 1024 kbit/s maximum.
    let (per_sf, _) = delivered_per_superframe(&return_link("cra_kbps: 0, rbdc_max_kbps: 1024"));
    assert_eq!(per_sf[..20].iter().sum::<u64>(), 0, "{:?}", &per_sf[..22]);
    let rbdc = kbps(per_sf[22..130].iter().sum(), 108);
    assert!((975.0..=995.0).contains(&rbdc), "RBDC only {rbdc} kbit/s");
}

#[test]
fn without_dama_bursts_go_back_to_back() {
    let yaml = "return: {delay_ms: 250, acm: {mode: ccm, modcod: 7}, \
                queue: {limit_packets: 10000, limit_bytes: 20000000}}";
    let (per_sf, d) = delivered_per_superframe(yaml);
    assert!(d.status(0).dama.is_none());
    // 4 Mbaud x 1.60 bit/symbol, less GSE: about 6.4 Mbit/s from the start.
    let rate = kbps(per_sf[1..20].iter().sum(), 19);
    assert!(rate > 6000.0, "{rate} kbit/s");
}

#[test]
fn dama_errors_name_the_field() {
    for (yaml, want) in [
        (
            return_link("cra_kbps: 9000"),
            "return.dama.cra_kbps: 9000 kbit/s does not fit",
        ),
        (
            return_link("carriers: 0"),
            "return.dama.carriers: value 0 is outside",
        ),
        (
            return_link("rbdc_timeout_superframes: 0"),
            "return.dama.rbdc_timeout_superframes: value 0",
        ),
        (
            return_link("timeslots_per_frame: 400"),
            "return.dama.timeslots_per_frame: 400 slots",
        ),
        (
            "forward: {dama: {}}".to_string(),
            "forward.dama: only for the return direction",
        ),
        (
            "return: {kind: fixed, rate_bps: 1e6, dama: {}}".to_string(),
            "return.dama: only for the return direction",
        ),
    ] {
        let e = err(&yaml);
        assert!(e.starts_with(want), "{e}");
    }
}
