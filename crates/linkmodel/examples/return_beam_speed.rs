//! The return link of a beam (`forward.beam` + `return.dama`, model cost only, no I/O): 100 and
//! 1000 terminals on a pool of 16 carriers (RCS2 at 4 Mbaud, QPSK 5/6: 107-byte slots, 180 per
//! 26.5 ms frame: 93 Mbit/s of slots), 250 ms each way, RBDC only (up to 1024 kbit/s). Every
//! terminal is idle, then sends 1500-byte packets at 400 kbit/s (100 terminals) or 80 kbit/s
//! (1000) for 2 s, the starts 7 ms apart. Measured per terminal: the superframes from its first
//! RBDC request to its first RBDC grant (modelled: `request_delay_superframes`), and its first
//! packet's delay over the modelled one (its wait for the next superframe + the request delay +
//! the one-way delay; the excess is the packet's own 15 slots at the granted rate, which end in
//! the grant's first or second superframe). `make bench-beam` runs it after the
//! forward beam, or `cargo run --release -p linkmodel --example return_beam_speed`.

use std::time::Instant;

use linkmodel::testkit::beam_terminals_yaml;
use linkmodel::{Dir, LinkConfig, Model, Outcome};

const SF_NS: f64 = 26.5e6;
const MS: u64 = 1_000_000;

fn config(n: usize) -> LinkConfig {
    let yaml = format!(
        "forward: {{delay_ms: 250, beam: {{terminals: [{}]}}}}\n\
         return: {{delay_ms: 250, acm: {{mode: ccm, modcod: 7}}, \
         dama: {{carriers: 16, cra_kbps: 0, rbdc_max_kbps: 1024}}}}",
        beam_terminals_yaml(n, |_| "")
    );
    LinkConfig::from_yaml_str(&yaml).expect("config")
}

/// A 1500-byte frame from terminal k (10.k/256.k%256.1), its send time in bytes 50..58.
fn packet(k: usize, sent_ns: u64) -> Vec<u8> {
    let mut f = vec![0u8; 1500];
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    f[14] = 0x45;
    f[26..30].copy_from_slice(&[10, (k / 256) as u8, (k % 256) as u8, 1]);
    f[50..58].copy_from_slice(&sent_ns.to_be_bytes());
    f
}

/// Per terminal: the first superframe with an RBDC request, with an RBDC grant, and the first
/// delivered packet's (send, delivery) times.
#[derive(Clone, Default)]
struct Seen {
    requested_sf: Option<u64>,
    granted_sf: Option<u64>,
    first: Option<(u64, u64)>,
}

fn run(n: usize, rate_bps: f64) {
    let t0 = Instant::now();
    let mut m = Model::new(&config(n), Dir::Return).expect("model");
    let start_s = t0.elapsed().as_secs_f64();
    let begin = |k: usize| 500 * MS + k as u64 * 7 * MS;
    let interval = 12_000.0 / rate_bps * 1e9;
    let mut next: Vec<f64> = (0..n).map(|k| begin(k) as f64).collect();
    let mut seen = vec![Seen::default(); n];
    let (mut out, mut delay_sf) = (Vec::new(), 0);
    let (mut offered, mut delivered) = (0u64, 0u64);
    let end = begin(n - 1) + 3000 * MS;
    let t1 = Instant::now();
    let mut sf_seen = u64::MAX;
    for ms in 0..end / MS {
        let t = ms * MS;
        for (k, nx) in next.iter_mut().enumerate() {
            while *nx <= t as f64 && *nx < (begin(k) + 2000 * MS) as f64 {
                m.enqueue(*nx as u64, packet(k, *nx as u64));
                offered += 1500;
                *nx += interval;
            }
        }
        m.poll(t, &mut out);
        for o in out.drain(..) {
            if let Outcome::Deliver { frame, .. } = o {
                delivered += frame.len() as u64;
                let k = frame[27] as usize * 256 + frame[28] as usize;
                let sent = u64::from_be_bytes(frame[50..58].try_into().unwrap());
                seen[k].first.get_or_insert((sent, t));
            }
        }
        // Status once a superframe (the first ms of each).
        if (t as f64 / SF_NS) as u64 == sf_seen {
            continue;
        }
        sf_seen = (t as f64 / SF_NS) as u64;
        let st = m.status(t);
        let d = st.dama.as_ref().expect("dama");
        delay_sf = d.request_delay_superframes;
        for (s, term) in seen.iter_mut().zip(&st.terminals) {
            let td = term.dama.as_ref().expect("terminal dama");
            if td.requested_rbdc_kbps > 0.0 {
                s.requested_sf.get_or_insert(d.superframe);
            }
            if td.rbdc_kbps > 0.0 {
                s.granted_sf.get_or_insert(d.superframe);
            }
        }
    }
    let cpu_s = t1.elapsed().as_secs_f64();
    let lags: Vec<i64> = seen
        .iter()
        .filter_map(|s| Some(s.granted_sf? as i64 - s.requested_sf? as i64))
        .collect();
    // The first packet waits for the next superframe start (its request), the request delay and
    // the one-way delay; the excess is its own transmission in the granted slots.
    let modelled_ms = delay_sf as f64 * SF_NS / 1e6 + 250.0;
    let excess: Vec<f64> = seen
        .iter()
        .filter_map(|s| s.first)
        .map(|(sent, got)| {
            let next_sf = ((sent as f64 / SF_NS).floor() + 1.0) * SF_NS;
            (got as f64 - next_sf) / 1e6 - modelled_ms
        })
        .collect();
    let (lo, hi) = excess
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    println!(
        "| {n} | {start_s:.3} | {:.2} | {} to {} (modelled {delay_sf}) | {lo:.1} to {hi:.1} | {:.3} |",
        delivered as f64 / offered as f64 * 100.0,
        lags.iter().min().unwrap_or(&-1),
        lags.iter().max().unwrap_or(&-1),
        cpu_s / (end as f64 / 1e9),
    );
}

fn main() {
    println!("\nReturn beam (DAMA, 16 carriers, RBDC only, 250 ms each way)\n");
    println!(
        "| terminals | start s | delivered % | request -> grant, superframes | first packet \
         over modelled, ms | CPU s per virtual s |"
    );
    println!("|---:|---:|---:|---|---|---:|");
    run(100, 400e3);
    run(1000, 80e3);
}
