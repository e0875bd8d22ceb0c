//! `failed_frames`: frames that fail decoding close to their MODCOD's threshold arrive with bit
//! errors; further below it they are erased (emulator/CONFIG.md, "Failed frames").

use linkmodel::{Dir, Direction, LossCause, Outcome};

mod common;
use common::{cfg, err, MS};

/// CCM 32APSK 9/10 (required Es/N0 16.05 dB, the assumed waterfall: PER 1 below 15.817 dB; the
/// cases below sit on its points, so it is set rather than left to the calibrated default) with
/// the total Es/N0 set by the downlink (the uplink's 60 dB adds 0.0001 dB of noise).
fn direction(downlink_db: f64, failed_frames: &str) -> Direction {
    let yaml = format!(
        "forward: {{delay_ms: 0, per_curves: waterfall, acm: {{mode: ccm, modcod: 28}}, \
         uplink: {{clear_sky_db: 60}}, downlink: {{clear_sky_db: {downlink_db}}}{failed_frames}}}"
    );
    Direction::new(&cfg(&yaml), Dir::Forward).unwrap()
}

/// Ethernet + IPv4 + UDP frame of 1000 bytes.
fn udp() -> Vec<u8> {
    let mut f = vec![0u8; 1000];
    f[12] = 0x08;
    f[14] = 0x45;
    f[14 + 9] = 17;
    f
}

/// (delivered intact, delivered corrupted, lost to erasure) of 300 packets.
fn run(d: &mut Direction) -> (usize, usize, usize) {
    for _ in 0..300 {
        d.enqueue(0, udp());
    }
    let mut out = Vec::new();
    d.poll(1000 * MS, &mut out);
    assert_eq!(out.len(), 300);
    let mut n = (0, 0, 0);
    for o in &out {
        match o {
            Outcome::Deliver {
                corrupted: None, ..
            } => n.0 += 1,
            Outcome::Deliver {
                corrupted: Some(_), ..
            } => n.1 += 1,
            Outcome::Lost {
                cause: LossCause::FrameErasure,
                ..
            } => n.2 += 1,
            Outcome::Lost { cause, .. } => panic!("unexpected loss {cause:?}"),
        }
    }
    n
}

#[test]
fn failed_frames_within_the_window_are_delivered_with_bit_errors() {
    // 0.3 dB below the threshold every frame fails; the window is 0.5 dB.
    let mut d = direction(
        15.75,
        ", failed_frames: {corrupt_within_db: 0.5, ber: 1.0e-3}",
    );
    let (intact, corrupted, erased) = run(&mut d);
    let c = d.status(1000 * MS).counters;
    assert_eq!(c.frame_erasures, 0);
    // At 1e-3 a 986-byte packet escapes with probability e^-7.9: all but a few are hit.
    assert!(corrupted > 250, "{intact} {corrupted} {erased}");
    assert_eq!(c.corrupted_packets, corrupted as u64);
    // 7 whole packets and one first fragment per 7264-byte frame: the fragmented packets are
    // lost (GSE's CRC-32 on reassembly), about one in eight.
    assert!((20..=45).contains(&erased), "{erased}");
    assert_eq!(c.erased_packets, erased as u64);
}

#[test]
fn failed_frames_below_the_window_are_erased() {
    // 1 dB below the threshold: outside the 0.5-dB window, every frame is erased.
    let mut d = direction(
        15.05,
        ", failed_frames: {corrupt_within_db: 0.5, ber: 1.0e-3}",
    );
    assert_eq!(run(&mut d), (0, 0, 300));
    assert_eq!(d.status(1000 * MS).counters.corrupted_packets, 0);
}

#[test]
fn without_the_section_every_failed_frame_is_erased() {
    let mut d = direction(15.75, "");
    assert_eq!(run(&mut d), (0, 0, 300));
}

#[test]
fn decoded_frames_take_no_residual_errors() {
    // 1 dB above the threshold no frame fails: the residual stage never runs.
    let mut d = direction(17.05, ", failed_frames: {corrupt_within_db: 10, ber: 0.5}");
    assert_eq!(run(&mut d), (300, 0, 0));
}

#[test]
fn bounds_name_the_field_and_the_limit() {
    for (section, msg) in [
        (
            "{ber: 0.6}",
            "forward.failed_frames.ber: value 0.6 is outside the allowed range [0, 0.5]",
        ),
        (
            "{corrupt_within_db: 11}",
            "forward.failed_frames.corrupt_within_db: value 11 is outside the allowed range [0, 10] dB",
        ),
    ] {
        let yaml = format!("forward: {{failed_frames: {section}}}");
        let e = err(&yaml);
        assert!(e.contains(msg), "{e}");
    }
}
