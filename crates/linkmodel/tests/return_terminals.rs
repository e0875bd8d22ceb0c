//! A return beam's terminals with their own return link (`forward.beam.terminals[].return`): a
//! fixed MODCOD or one chosen from the terminal's own uplink, slots sized by it; and the
//! contention counts split into collisions with the beam's terminals and with the background.
//! Virtual time.

use linkmodel::testkit::beam_terminals_yaml;
use linkmodel::{DamaStatus, Dir, Model, Outcome, TerminalStatus};

mod common;
use common::{cfg, err, MS};

/// A beam whose terminal k has the extra YAML `extra(k)`, on an RCS2 return link at 4 Mbaud,
/// 20 ms each way, its MODCOD by ACM (default `return.acm`) unless a terminal fixes it, with DAMA
/// `dama` (26.5 ms superframes).
fn yaml(n: usize, extra: impl Fn(usize) -> &'static str, dama: &str) -> String {
    format!(
        "forward: {{delay_ms: 20, beam: {{terminals: [{}]}}}}\n\
         return: {{delay_ms: 20, acm: {{refresh_ms: 100}},\n  \
         queue: {{limit_packets: 10000, limit_bytes: 20000000}},\n  \
         dama: {{{dama}}}}}",
        beam_terminals_yaml(n, extra)
    )
}

/// A 1500-byte IPv4 frame from 10.0.k.1.
fn packet_from(k: u8) -> Vec<u8> {
    let mut f = vec![0u8; 1500];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[26..30].copy_from_slice(&[10, 0, k, 1]);
    f
}

/// Every terminal of `m` (`n`) kept backlogged for `secs`; the bytes delivered from each after
/// `from_s`, as kbit/s.
fn saturate(m: &mut Model, n: usize, secs: f64, from_s: f64) -> Vec<f64> {
    let mut bytes = vec![0u64; n];
    let mut out = Vec::new();
    for ms in 0..(secs * 1e3) as u64 {
        let t = ms * MS;
        let st = m.status(t);
        for (k, term) in st.terminals.iter().enumerate() {
            if term.queue_packets < 20 {
                m.enqueue(t, packet_from(k as u8));
            }
        }
        m.poll(t, &mut out);
        for o in out.drain(..) {
            if let (Outcome::Deliver { frame, .. }, true) = (o, ms as f64 >= from_s * 1e3) {
                bytes[frame[28] as usize] += frame.len() as u64;
            }
        }
    }
    let window = secs - from_s;
    bytes
        .iter()
        .map(|&b| b as f64 * 8.0 / window / 1e3)
        .collect()
}

fn modcod(t: &TerminalStatus) -> u32 {
    t.modcod.as_ref().expect("an rcs2 terminal has a MODCOD").id
}

fn slot_bytes(t: &TerminalStatus) -> u32 {
    t.dama.as_ref().expect("terminal dama").slot_bytes
}

/// Each terminal may take all 10 slots of a frame (2 carriers: room for both), RBDC far above.
const TEN_SLOTS: &str = "carriers: 2, timeslots_per_frame: 10, rbdc_max_kbps: 20000";

#[test]
fn terminals_at_fixed_modcods_carry_their_modcods_payload_per_slot() {
    // 16QAM 5/6: floor(2.87 x 536 / 8) = 192 bytes a burst; QPSK 1/3: floor(0.56 x 536 / 8) = 37.
    let extra = |k| match k {
        0 => ", return: {modcod: 12}",
        _ => ", return: {modcod: 3}",
    };
    let mut m = Model::new(&cfg(&yaml(2, extra, TEN_SLOTS)), Dir::Return).unwrap();
    let rates = saturate(&mut m, 2, 4.0, 1.0);
    let st = m.status(4000 * MS);
    let t = &st.terminals;
    assert_eq!((modcod(&t[0]), modcod(&t[1])), (12, 3));
    assert_eq!((slot_bytes(&t[0]), slot_bytes(&t[1])), (192, 37));
    for term in t {
        assert_eq!(
            term.dama.as_ref().unwrap().granted_slots,
            10,
            "{}",
            term.name
        );
    }
    // 10 slots a 26.5 ms superframe: 579.6 and 111.7 kbit/s of slot payload; GSE headers take
    // a few percent (more of the small bursts: a 1500-byte packet is 41 fragments of 37 bytes).
    let ceiling = [192.0, 37.0].map(|b| 10.0 * b * 8.0 / 26.5);
    eprintln!("return rates {rates:?} kbit/s, slot payload ceilings {ceiling:?}");
    assert!((0.85..=1.0).contains(&(rates[0] / ceiling[0])), "{rates:?}");
    assert!((0.75..=1.0).contains(&(rates[1] / ceiling[1])), "{rates:?}");
    assert!(rates[0] > 4.0 * rates[1], "{rates:?}");
}

#[test]
fn a_terminal_in_its_own_rain_steps_down_on_the_rcs2_table() {
    // Uplink and the gateway's downlink both 20 dB clear sky: 17 dB together, 16QAM 5/6 (12.56
    // dB needed). 10 dB of rain on terminal 1's uplink: 10 dB + 20 dB = 9.6 dB, 8PSK 3/4 (9.31);
    // terminal 2's uplink C/N 3 dB: 2.9 dB, QPSK 1/2 (2.34).
    let extra = |k| match k {
        0 => "",
        1 => ", return: {attenuation: {type: constant, value_db: 10}}",
        _ => ", return: {clear_sky_db: 3}",
    };
    let mut m = Model::new(&cfg(&yaml(3, extra, TEN_SLOTS)), Dir::Return).unwrap();
    let rates = saturate(&mut m, 3, 3.0, 1.0);
    let st = m.status(3000 * MS);
    let ids: Vec<u32> = st.terminals.iter().map(modcod).collect();
    assert_eq!(ids, [12, 9, 4]);
    let bytes: Vec<u32> = st.terminals.iter().map(slot_bytes).collect();
    // floor(efficiency x 536 / 8): 2.87, 1.93, 0.87 bit/symbol.
    assert_eq!(bytes, [192, 129, 58]);
    assert!(
        rates[0] > rates[1] && rates[1] > rates[2],
        "rates follow the slot payloads: {rates:?}"
    );
}

#[test]
fn without_return_settings_every_terminal_has_the_return_directions_link() {
    let mut m = Model::new(&cfg(&yaml(2, |_| "", TEN_SLOTS)), Dir::Return).unwrap();
    saturate(&mut m, 2, 1.5, 1.0);
    let st = m.status(1500 * MS);
    assert_eq!(
        st.terminals.iter().map(modcod).collect::<Vec<_>>(),
        [12, 12]
    );
}

#[test]
fn bad_terminal_return_settings_are_refused_naming_the_field() {
    let e = err(&yaml(
        2,
        |k| [", return: {}", ", return: {modcod: 99}"][k],
        TEN_SLOTS,
    ));
    assert!(
        e.starts_with("forward.beam.terminals[1].return.modcod: "),
        "{e}"
    );
    let e = err(&yaml(1, |_| ", return: {clear_sky_db: 70}", TEN_SLOTS));
    assert!(
        e.starts_with("forward.beam.terminals[0].return.clear_sky_db: "),
        "{e}"
    );
    let e = err(&yaml(
        1,
        |_| ", return: {attenuation: {type: file}}",
        TEN_SLOTS,
    ));
    assert!(
        e.starts_with("forward.beam.terminals[0].return.attenuation.file: "),
        "{e}"
    );
    let no_dama = format!(
        "forward: {{beam: {{terminals: [{}]}}}}",
        beam_terminals_yaml(1, |_| ", return: {modcod: 5}")
    );
    assert_eq!(
        err(&no_dama),
        "forward.beam.terminals[0].return: a terminal's own return link needs return.dama (the \
         return beam)"
    );
    // 400 kbit/s of CRA fits 10 slots of 192 bytes (580 kbit/s) but not of 37 (112 kbit/s).
    let cra = format!("{TEN_SLOTS}, cra_kbps: 400");
    let e = err(&yaml(2, |k| ["", ", return: {modcod: 3}"][k], &cra));
    assert!(e.starts_with("return.dama.cra_kbps: "), "{e}");
    assert!(e.ends_with("(terminal \"t1\")"), "{e}");
}

/// Superframe `sf`'s start, ns (26.5 ms superframes).
fn superframe_ns(sf: u64) -> u64 {
    (sf as f64 * 26.5e6).round() as u64
}

#[test]
fn contention_losses_are_split_between_the_beam_and_the_background() {
    // 3 terminals contending every superframe in 8 slots (no grant ever comes back), background
    // 0.5 a slot: a request shares its slot with another terminal with probability
    // 1 - (7/8)^2 = 0.234; it meets only the background with (7/8)^2 x (1 - exp(-0.5)) = 0.301.
    let dama = "cra_kbps: 0, rbdc_max_kbps: 1024, request_delay_superframes: 100000, \
                contention: {slots_per_superframe: 8, background_load: 0.5, \
                backoff_superframes: 0}";
    let mut m = Model::new(&cfg(&yaml(3, |_| "", dama)), Dir::Return).unwrap();
    let mut out = Vec::new();
    for k in 0..3 {
        m.enqueue(MS, packet_from(k));
    }
    let superframes = 4000;
    m.poll(superframe_ns(superframes), &mut out);
    let st = m.status(superframe_ns(superframes));
    let s = superframes as f64;
    let beam_lost: fn(&DamaStatus) -> u64 = |d| d.contention_beam_collisions;
    let background_lost: fn(&DamaStatus) -> u64 =
        |d| d.contention_collisions - d.contention_beam_collisions;
    for (p, count) in [(0.234, beam_lost), (0.301, background_lost)] {
        let sd = (s * p * (1.0 - p)).sqrt();
        for t in &st.terminals {
            let d = t.dama.as_ref().unwrap();
            assert_eq!(d.contention_attempts, superframes, "a try every superframe");
            let got = count(d) as f64;
            assert!(
                (got - s * p).abs() <= 5.0 * sd,
                "{}: {got} of {s}, p {p}",
                t.name
            );
        }
    }
    let sum = st.dama.expect("summed dama");
    let beam: u64 = st
        .terminals
        .iter()
        .map(|t| t.dama.as_ref().unwrap().contention_beam_collisions)
        .sum();
    assert_eq!(sum.contention_beam_collisions, beam);
}
