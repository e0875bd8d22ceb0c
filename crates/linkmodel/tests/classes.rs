//! Per-class queues (`queue.classes`) through a whole Direction in virtual time, and their
//! configuration errors.

use linkmodel::{Dir, Direction, Outcome};

mod common;
use common::{cfg, err, MS};

/// Ethernet + IPv4 + UDP frame of `len` bytes, DSCP `dscp`, with `idx` in the payload.
fn udp(len: usize, dscp: u8, idx: u32) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[12] = 0x08;
    f[14] = 0x45;
    f[15] = dscp << 2;
    f[16..18].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    f[14 + 9] = 17;
    f[42..46].copy_from_slice(&idx.to_be_bytes());
    f
}

/// Offers a bulk flow at twice the link's rate (DSCP 0, 1514 bytes) and one 200-byte DSCP 46
/// (EF) packet every 10 ms for 2 s, on a 10 Mbit/s fixed-rate link with 10 ms delay and a
/// 200-packet queue; returns the mean and largest one-way delay (ms) of the EF packets delivered
/// and the bulk's mean.
fn ef_and_bulk_delays(queue_yaml: &str) -> (f64, f64, f64, Direction) {
    let yaml =
        format!("forward: {{kind: fixed, rate_bps: 1.0e7, delay_ms: 10, queue: {queue_yaml}}}");
    let mut d = Direction::new(&cfg(&yaml), Dir::Forward).unwrap();
    let bulk_gap = 1514 * 8 * 1_000_000_000 / 20_000_000; // ns between bulk packets at 20 Mbit/s
    let mut sent_at = std::collections::HashMap::new();
    let (mut ef, mut bulk) = (Vec::new(), Vec::new());
    let mut out = Vec::new();
    let (mut next_bulk, mut next_ef, mut idx) = (0u64, 0u64, 0u32);
    let end = 2000 * MS;
    let mut t = 0;
    while t <= end + 500 * MS {
        if t <= end {
            while next_bulk <= t {
                d.enqueue(next_bulk, udp(1514, 0, idx));
                sent_at.insert(idx, next_bulk);
                idx += 1;
                next_bulk += bulk_gap;
            }
            while next_ef <= t {
                d.enqueue(next_ef, udp(200, 46, idx));
                sent_at.insert(idx, next_ef);
                idx += 1;
                next_ef += 10 * MS;
            }
        }
        d.poll(t, &mut out);
        for o in out.drain(..) {
            if let Outcome::Deliver { frame, .. } = o {
                let i = u32::from_be_bytes(frame[42..46].try_into().unwrap());
                let delay_ms = (t - sent_at[&i]) as f64 / 1e6;
                if frame.len() == 200 {
                    ef.push(delay_ms);
                } else {
                    bulk.push(delay_ms);
                }
            }
        }
        t += 100_000; // poll every 0.1 ms
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = ef.iter().cloned().fold(0.0, f64::max);
    assert!(!ef.is_empty(), "no EF packet delivered");
    (mean(&ef), max, mean(&bulk), d)
}

#[test]
fn ef_keeps_its_delay_while_bulk_fills_the_queue() {
    // The bulk class is capped below the whole queue so that EF packets always find room (with
    // the default cap, the queue's own limit, bulk would fill the shared buffer and EF packets
    // arriving then would be dropped).
    let classes = "{limit_packets: 200, limit_bytes: 400000, classes: [\
        {name: ef, dscp: [46], priority: 0}, {name: bulk, priority: 1, limit_packets: 190}]}";
    let (ef_mean, ef_max, bulk_mean, d) = ef_and_bulk_delays(classes);
    // One bulk packet on the air ahead of it at most (1.2 ms at 10 Mbit/s) + its own 0.16 ms
    // + 10 ms delay + the 0.1 ms poll step.
    assert!(
        ef_mean < 11.5 && ef_max < 11.6,
        "EF {ef_mean} ms mean, {ef_max} max"
    );
    // The bulk queue is full: 190 packets x 1.2 ms = 230 ms of queueing.
    assert!(bulk_mean > 200.0, "bulk {bulk_mean} ms");
    let st = d.status(0);
    let (e, b) = (&st.classes[0], &st.classes[1]);
    assert_eq!((e.name.as_str(), b.name.as_str()), ("ef", "bulk"));
    assert_eq!((e.dropped_packets, e.sent_packets), (0, 201));
    assert!(b.dropped_packets > 1000, "{b:?}");
    assert_eq!(
        st.counters.queue_drops,
        e.dropped_packets + b.dropped_packets
    );
    assert!(e.queue_delay_max_ms < 1.3, "{e:?}");
    assert!(
        b.queue_delay_sum_ms / b.sent_packets as f64 > 200.0,
        "{b:?}"
    );

    // The same run without classes: the EF packets wait behind the full drop-tail queue.
    let (fifo_mean, _, _, d) = ef_and_bulk_delays("{limit_packets: 200, limit_bytes: 400000}");
    // (and most of them are dropped by the full queue).
    assert!(fifo_mean > 200.0, "EF without classes {fifo_mean} ms");
    assert!(d.status(0).classes.is_empty());
}

#[test]
fn weighted_classes_share_a_saturated_link() {
    // Two bulk flows at one priority level, weights 3 : 1, each offered above the link rate.
    let yaml = "forward: {kind: fixed, rate_bps: 1.0e7, delay_ms: 1, queue: {classes: [\
        {name: gold, dscp: [10], weight: 3}, {name: bronze, weight: 1}]}}";
    let mut d = Direction::new(&cfg(yaml), Dir::Forward).unwrap();
    let mut out = Vec::new();
    let (mut got, mut idx, mut t) = ([0u64; 2], 0u32, 0u64);
    while t <= 3000 * MS {
        for (k, dscp) in [(0usize, 10u8), (1, 0)] {
            while d.status(t).classes[k].queue_packets < 40 {
                d.enqueue(t, udp(1514, dscp, idx));
                idx += 1;
            }
        }
        d.poll(t, &mut out);
        for o in out.drain(..) {
            if let Outcome::Deliver { frame, .. } = o {
                got[usize::from(frame[15] >> 2 != 10)] += frame.len() as u64;
            }
        }
        t += MS;
    }
    let share = got[0] as f64 / (got[0] + got[1]) as f64;
    assert!((share - 0.75).abs() < 0.01, "gold share {share} ({got:?})");
}

#[test]
fn class_configuration_errors_name_the_field_and_the_limit() {
    let q =
        |classes: &str| format!("forward: {{queue: {{limit_packets: 100, classes: {classes}}}}}");
    // A row gives the whole message or its start.
    for (classes, want) in [
        (
            "[{name: a, dscp: [46]}]",
            "forward.queue.classes: no default class: exactly one class must have neither dscp nor flows (it takes every packet no rule selects)",
        ),
        (
            "[{name: a}, {name: b}]",
            "forward.queue.classes: 2 default classes (a, b)",
        ),
        (
            "[{name: a, dscp: [64]}, {name: b}]",
            "forward.queue.classes[0].dscp[0]: value 64 is outside the allowed range [0, 63]",
        ),
        (
            "[{name: a, dscp: [46]}, {name: b, dscp: [46]}, {name: c}]",
            "forward.queue.classes[1].dscp[0]: DSCP 46 already selects class \"a\"",
        ),
        (
            "[{name: a, weight: 0}]",
            "forward.queue.classes[0].weight: value 0 is outside the allowed range [1, 1000]",
        ),
        (
            "[{name: a, priority: 8}]",
            "forward.queue.classes[0].priority: value 8 is outside the allowed range [0, 7]",
        ),
        (
            "[{name: a, limit_packets: 101}]",
            "forward.queue.classes[0].limit_packets: value 101 is outside the allowed range [1, 100] packets (at most queue.limit_packets)",
        ),
        (
            "[{name: A}]",
            "forward.queue.classes[0].name: \"A\" is not",
        ),
        (
            "[{name: a, dscp: [1]}, {name: a}]",
            "forward.queue.classes[1].name: class name \"a\" is used twice",
        ),
        (
            "[{name: a, flows: [{}]}, {name: b}]",
            "forward.queue.classes[0].flows[0]: a flow rule needs at least one of protocol, src_port, dst_port",
        ),
        (
            "[{name: a, flows: [{protocol: 1, dst_port: 80}]}, {name: b}]",
            "forward.queue.classes[0].flows[0].protocol: ports only exist for TCP (6) and UDP (17), not protocol 1",
        ),
    ] {
        let e = err(&q(classes));
        assert!(e.starts_with(want), "{classes}: {e}");
    }
    let many: Vec<String> = (0..17)
        .map(|i| format!("{{name: c{i}, dscp: [{i}]}}"))
        .collect();
    assert_eq!(
        err(&q(&format!("[{}]", many.join(", ")))),
        "forward.queue.classes: 17 classes given, at most 16 allowed"
    );
    assert!(err(&q("[{name: a, colour: red}]")).contains("unknown field `colour`"));
    // a valid set: rules, limits, priorities
    cfg(&q(
        "[{name: voice, dscp: [46], flows: [{protocol: 17, dst_port: 5060}], priority: 0, limit_packets: 20},\
          {name: web, flows: [{protocol: 6, dst_port: 443}], priority: 1, weight: 4},\
          {name: rest, priority: 1}]",
    ));
}
