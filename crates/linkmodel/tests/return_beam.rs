//! The return link of a beam (`forward.beam` + `return.dama`): the terminals, told apart by
//! source prefix, share one MF-TDMA pool through the gateway's DAMA controller. Virtual time.

use std::time::Instant;

use linkmodel::testkit::beam_terminals_yaml;
use linkmodel::{Dir, Model, Outcome, TerminalStatus};

mod common;
use common::{cfg, err, MS};

/// A beam of `n` terminals (terminal k behind 10.0.k.0/24) whose return link is RCS2 at 4 Mbaud,
/// QPSK 5/6 (107-byte slots), 20 ms each way (a request round trip of 3 superframes), DAMA
/// `dama` (YAML flow mapping entries) with 26.5 ms superframes.
fn beam_yaml(n: usize, dama: &str) -> String {
    format!(
        "forward: {{delay_ms: 20, beam: {{terminals: [{}]}}}}\n\
         return: {{delay_ms: 20, acm: {{mode: ccm, modcod: 7}},\n  \
         queue: {{limit_packets: 10000, limit_bytes: 20000000}},\n  \
         dama: {{{dama}}}}}",
        beam_terminals_yaml(n, |_| "")
    )
}

fn model(n: usize, dama: &str) -> Model {
    Model::new(&cfg(&beam_yaml(n, dama)), Dir::Return).unwrap()
}

/// A 1500-byte IPv4 frame from 10.0.k.1.
fn packet_from(k: u8) -> Vec<u8> {
    let mut f = vec![0u8; 1500];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[26..30].copy_from_slice(&[10, 0, k, 1]);
    f
}

/// Offers terminal k `rates_bps[k]` of 1500-byte frames for `secs`, polling every ms; returns
/// the rate delivered from each, kbit/s, between `from_s` and the end (by delivery time), and
/// the mean granted kbit/s of each (status every superframe in the same window).
fn run(m: &mut Model, rates_bps: &[f64], secs: f64, from_s: f64) -> (Vec<f64>, Vec<f64>) {
    let n = rates_bps.len();
    let mut next = vec![0.0f64; n];
    let (mut bytes, mut granted, mut samples) = (vec![0u64; n], vec![0.0; n], 0);
    let mut out = Vec::new();
    let end = (secs * 1e3) as u64;
    for ms in 0..end {
        let t = ms * MS;
        for k in 0..n {
            while rates_bps[k] > 0.0 && next[k] <= t as f64 {
                m.enqueue(next[k] as u64, packet_from(k as u8));
                next[k] += 12_000.0 / rates_bps[k] * 1e9;
            }
        }
        m.poll(t, &mut out);
        let counting = ms as f64 >= from_s * 1e3;
        for o in out.drain(..) {
            if let (Outcome::Deliver { frame, .. }, true) = (o, counting) {
                bytes[frame[28] as usize] += frame.len() as u64;
            }
        }
        if counting && ms % 26 == 0 {
            samples += 1;
            for (g, t) in granted.iter_mut().zip(m.status(t).terminals) {
                *g += t.dama.expect("terminal dama").granted_kbps;
            }
        }
    }
    let window = secs - from_s;
    let rates = bytes
        .iter()
        .map(|&b| b as f64 * 8.0 / window / 1e3)
        .collect();
    let grants = granted.iter().map(|g| g / samples as f64).collect();
    (rates, grants)
}

/// Goodput over grant at QPSK 5/6: a 1500-byte packet fills 15 slots of 107 bytes with its GSE
/// fragment headers (dama.rs tests: 0.963).
const GOODPUT: f64 = 0.963;

#[test]
fn two_terminals_with_cra_get_exactly_their_cra() {
    let mut m = model(2, "cra_kbps: 256, rbdc_max_kbps: 0");
    let (rates, grants) = run(&mut m, &[1e6, 1e6], 3.0, 0.5);
    for k in 0..2 {
        assert!(
            (rates[k] / (256.0 * GOODPUT) - 1.0).abs() < 0.03,
            "terminal {k}: {rates:?} kbit/s"
        );
        assert!((grants[k] / 256.0 - 1.0).abs() < 0.02, "{grants:?}");
    }
    assert!((rates[0] - rates[1]).abs() < 12.0, "{rates:?}");
}

#[test]
fn rbdc_grants_follow_each_terminals_rate() {
    let mut m = model(2, "cra_kbps: 0, rbdc_max_kbps: 4096");
    let (rates, grants) = run(&mut m, &[400e3, 1200e3], 4.0, 1.0);
    for (k, offered) in [400.0, 1200.0].into_iter().enumerate() {
        assert!(
            (rates[k] / offered - 1.0).abs() < 0.05,
            "terminal {k}: {rates:?}"
        );
        // The request is the last superframe's arrivals as a rate plus the backlog over a round
        // trip (dama.rs): each 1500-byte packet waiting adds 151 kbit/s at this 80 ms round trip,
        // and one or two wait at a superframe start.
        assert!(
            (offered..offered + 2.0 * 151.0).contains(&grants[k]),
            "terminal {k}: {grants:?}"
        );
    }
}

/// 30 slots per 26.5 ms frame on one carrier: a pool of 969 kbit/s of slots.
const SHORT_POOL: &str = "carriers: 1, timeslots_per_frame: 30, cra_kbps: 0, rbdc_max_kbps: 2048";
const POOL_KBPS: f64 = 30.0 * 107.0 * 8.0 / 26.5;

#[test]
fn a_pool_smaller_than_the_demand_is_shared_max_min_fairly() {
    // Three terminals ask for 2 Mbit/s each, one for 100 kbit/s: the small one gets all it asks
    // for, the others a third of the rest each.
    let mut m = model(4, SHORT_POOL);
    let (rates, grants) = run(&mut m, &[2e6, 2e6, 2e6, 100e3], 4.0, 1.0);
    assert!((rates[3] / 100.0 - 1.0).abs() < 0.05, "{rates:?}");
    let total: f64 = grants.iter().sum();
    assert!((total / POOL_KBPS - 1.0).abs() < 0.01, "{grants:?}");
    let share = (POOL_KBPS - grants[3]) / 3.0;
    for k in 0..3 {
        assert!((grants[k] / share - 1.0).abs() < 0.03, "{grants:?}");
        assert!(
            (rates[k] / (share * GOODPUT) - 1.0).abs() < 0.05,
            "{rates:?}"
        );
    }
}

#[test]
fn an_idle_terminal_does_not_block_the_others() {
    let mut m = model(3, SHORT_POOL);
    let (rates, grants) = run(&mut m, &[0.0, 2e6, 0.0], 3.0, 0.5);
    assert_eq!((rates[0], rates[2]), (0.0, 0.0));
    assert_eq!((grants[0], grants[2]), (0.0, 0.0));
    assert!((grants[1] / POOL_KBPS - 1.0).abs() < 0.01, "{grants:?}");
    assert!(
        (rates[1] / (POOL_KBPS * GOODPUT) - 1.0).abs() < 0.03,
        "{rates:?}"
    );
}

#[test]
fn packets_go_to_the_terminal_of_their_source_and_unmatched_ones_to_the_first() {
    // No CRA: nothing leaves before the first request's round trip.
    let mut m = model(3, "cra_kbps: 0");
    let mut stray = packet_from(9);
    stray[26] = 192; // 192.0.9.1: no terminal's
    for p in [packet_from(2), packet_from(2), stray] {
        m.enqueue(0, p);
    }
    let st = m.status(0);
    let queued: Vec<u64> = st.terminals.iter().map(|t| t.queue_packets).collect();
    assert_eq!(queued, [1, 0, 2]);
    assert_eq!(st.queue_packets, 3);
    let mut out = Vec::new();
    m.poll(2000 * MS, &mut out);
    assert_eq!(out.len(), 3);
    let st = m.status(2000 * MS);
    let names: Vec<&str> = st.terminals.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t0", "t1", "t2"]);
    let delivered: Vec<u64> = st
        .terminals
        .iter()
        .map(|t| t.counters.delivered_packets)
        .collect();
    assert_eq!(delivered, [1, 0, 2]);
    assert!(st
        .terminals
        .iter()
        .all(|t| t.modcod.as_ref().unwrap().id == 7));
}

#[test]
fn the_directions_dama_status_is_the_terminals_sum() {
    let mut m = model(3, "cra_kbps: 128");
    let mut out = Vec::new();
    m.poll(100 * MS, &mut out);
    let st = m.status(100 * MS);
    let dama = st.dama.as_ref().expect("summed dama");
    let grants: Vec<f64> = st.terminals.iter().map(grant).collect();
    assert_eq!(dama.cra_kbps, grants[0] + grants[1] + grants[2]);
    assert!(grants.iter().all(|&g| g > 0.0), "{grants:?}");
}

fn grant(t: &TerminalStatus) -> f64 {
    t.dama.as_ref().unwrap().cra_kbps
}

#[test]
fn a_pool_that_cannot_hold_every_terminals_cra_is_refused() {
    // 30 slots of 107 bytes per superframe; 300 kbit/s = 10 slots per terminal: 3 fit, 4 do not.
    let dama = "carriers: 1, timeslots_per_frame: 30, cra_kbps: 300";
    model(3, dama);
    let e = err(&beam_yaml(4, dama));
    assert!(
        e.starts_with(
            "return.dama.cra_kbps: 300 kbit/s for each of the 4 terminals of forward.beam take \
             40 slots a superframe; the pool of 1 carriers x 30 timeslots x 1 frames has 30"
        ),
        "{e}"
    );
}

#[test]
fn a_thousand_terminals_start_fast_and_tick_cheaply() {
    let c = cfg(&beam_yaml(1000, "carriers: 8, cra_kbps: 0"));
    let t0 = Instant::now();
    let mut m = Model::new(&c, Dir::Return).unwrap();
    let start = t0.elapsed();
    // Debug builds are slower than the emulator's release build: 2 s either way.
    assert!(start.as_secs_f64() < 2.0, "{start:?}");
    // One second of virtual time (38 superframes of 1000 terminals), terminal 5 sending.
    let t1 = Instant::now();
    let (rates, _) = run(&mut m, &[0.0, 0.0, 0.0, 0.0, 0.0, 500e3], 1.0, 0.5);
    assert!(rates[5] > 400.0, "{rates:?}");
    eprintln!(
        "1000 terminals: start {:.3} s, 1 s of virtual time in {:.3} s",
        start.as_secs_f64(),
        t1.elapsed().as_secs_f64()
    );
}

#[test]
fn a_control_naming_a_terminal_changes_that_terminals_return_link_only() {
    let mut m = model(2, "cra_kbps: 64");
    let cmd = linkmodel::ControlCommand {
        attenuation_db: Some(5.0),
        terminal: Some("t1".into()),
        ..Default::default()
    };
    m.control(MS, &cmd).unwrap();
    let att: Vec<f64> = m
        .status(MS)
        .terminals
        .iter()
        .map(|t| t.attenuation_db)
        .collect();
    assert_eq!(att, [0.0, 5.0]);
    let unknown = linkmodel::ControlCommand {
        terminal: Some("zz".into()),
        ..cmd
    };
    let e = m.control(MS, &unknown).unwrap_err().to_string();
    assert_eq!(e, "terminal: no terminal of forward.beam is named \"zz\"");
}

/// A beam of `n` terminals whose requests go by contention in `k` slots a superframe against a
/// `background` load, with no backoff; RBDC only and a request round trip far longer than the
/// test, so no grant ever comes: from its first packet on, a terminal sends a request by
/// contention in every superframe (it never has a slot to send it in-band).
fn contending_beam(n: usize, k: u32, background: f64) -> Model {
    model(
        n,
        &format!(
            "cra_kbps: 0, rbdc_max_kbps: 1024, request_delay_superframes: 100000, \
             contention: {{slots_per_superframe: {k}, background_load: {background}, \
             backoff_superframes: 0}}"
        ),
    )
}

/// Superframe `sf`'s start, ns (26.5 ms superframes).
fn superframe_ns(sf: u64) -> u64 {
    (sf as f64 * 26.5e6).round() as u64
}

/// The terminals of `m` (`n` of them) idle for 10 superframes, then a packet for each at once,
/// then `superframes` superframe starts: each terminal's (requests sent by contention, collided).
fn burst_and_contend(m: &mut Model, n: usize, superframes: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    m.poll(superframe_ns(10), &mut out);
    let idle = m.status(superframe_ns(10)).dama.expect("summed dama");
    assert_eq!(idle.contention_attempts, 0, "an idle terminal asks nothing");
    let burst = superframe_ns(10) + MS;
    for k in 0..n {
        m.enqueue(burst, packet_from(k as u8));
    }
    for sf in 11..=10 + superframes {
        m.poll(superframe_ns(sf), &mut out);
    }
    contention_counts(m, superframe_ns(10 + superframes))
}

/// Each terminal's (requests sent by contention, collided) at `t_ns`.
fn contention_counts(m: &Model, t_ns: u64) -> Vec<(u64, u64)> {
    m.status(t_ns)
        .terminals
        .iter()
        .map(|t| {
            let d = t.dama.as_ref().expect("terminal dama");
            (d.contention_attempts, d.contention_collisions)
        })
        .collect()
}

/// Each terminal's requests that got through are Binomial(`superframes`, `p`): every superframe
/// its slot is drawn afresh (and the other terminals' slots and the background with it), so its
/// tries are independent. Five standard deviations allowed.
fn assert_binomial(counts: &[(u64, u64)], superframes: u64, p: f64) {
    let s = superframes as f64;
    let sd = (s * p * (1.0 - p)).sqrt();
    let through: Vec<u64> = counts.iter().map(|&(a, c)| a - c).collect();
    eprintln!(
        "contention: expected {:.1} of {s} through per terminal, got {through:?}",
        s * p
    );
    for (k, &(attempts, collisions)) in counts.iter().enumerate() {
        assert_eq!(
            attempts, superframes,
            "terminal {k}: a try every superframe"
        );
        let through = (attempts - collisions) as f64;
        assert!(
            (through - s * p).abs() <= 5.0 * sd,
            "terminal {k}: {through} of {s} got through, slotted ALOHA expects {:.1} (sd {sd:.1})",
            s * p
        );
    }
}

#[test]
fn terminals_bursting_at_once_collide_in_their_contention_slots_as_slotted_aloha_predicts() {
    // 8 terminals in 4 slots: a request is alone with probability (1 - 1/4)^7 = 0.133, where a
    // background load of 0 alone would let every one through.
    let (n, k, superframes) = (8, 4, 4000);
    let counts = burst_and_contend(&mut contending_beam(n, k, 0.0), n, superframes);
    let p = (1.0 - 1.0 / f64::from(k)).powi(n as i32 - 1);
    assert_binomial(&counts, superframes, p);
}

#[test]
fn the_background_load_adds_its_collisions_to_the_beams_own() {
    // 3 terminals in 8 slots, 0.5 background requests a slot: alone among the beam's with
    // probability (7/8)^2 = 0.766, free of the background with exp(-0.5) = 0.607: 0.464 in all.
    let (n, k, superframes) = (3, 8, 4000);
    let counts = burst_and_contend(&mut contending_beam(n, k, 0.5), n, superframes);
    let p = (1.0 - 1.0 / f64::from(k)).powi(n as i32 - 1) * (-0.5f64).exp();
    assert_binomial(&counts, superframes, p);
}

#[test]
fn a_lone_contending_terminal_of_a_beam_never_collides_without_background() {
    // Two terminals, one contention slot, only terminal 1 has data: its requests never meet
    // the idle terminal's (there are none).
    let mut m = contending_beam(2, 1, 0.0);
    let mut out = Vec::new();
    m.enqueue(MS, packet_from(1));
    m.poll(superframe_ns(200), &mut out);
    let counts = contention_counts(&m, superframe_ns(200));
    assert_eq!(counts, [(0, 0), (200, 0)]);
}
