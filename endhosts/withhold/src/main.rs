//! satlab-withhold: the reordering-robust receiver of Yang 2001 ("Improving the Performance of TCP in the Presence of Packet Reordering", chapter 3) on an
//! unmodified Linux receiver. Two NFQUEUE rules in the receiving host's network namespace hand
//! this program the flow's incoming segments (seen and accepted at once, before TCP processes
//! them) and its outgoing segments (the ACKs, which it passes, holds, paces, rewrites or drops;
//! see logic.rs). The rules are installed at start and removed at exit, with `--queue-bypass`
//! so that packets pass untouched if the program is gone. On SIGTERM/SIGINT everything held is
//! let out and the counters are printed as one JSON line (the last line of stdout).
//!
//! Usage: `satlab-withhold --help`; its settings come as flags or as a JSON file (`--config`,
//! config.rs; `--print-schema` prints the file's JSON Schema).

mod config;
mod logic;
mod tcp;

use binkit::exit::OrExit;
use config::{Config, Withhold, HISTORY_EPISODES, IAT_WEIGHT, IMMEDIATE_DUPACKS};
use config::{INITIAL_THRESHOLD_PACKETS, RTT_MS};
use logic::{Counters, Flow, Params, Verdict};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The name errors start with.
const PROGRAM: &str = "satlab-withhold";

/// Command line (clap): a JSON file (`--config`) or the flags, which say the same (config.rs has
/// the ranges of both); a usage error or an invalid file exits 2.
#[derive(clap::Parser)]
#[command(version, about)]
struct Cli {
    /// The configuration as a JSON file, instead of the flags below (its schema: --print-schema)
    #[arg(long, value_name = "FILE.json", conflicts_with_all = SETTING_FLAGS)]
    config: Option<PathBuf>,
    /// Check the configuration, print it as JSON and exit
    #[arg(long)]
    check: bool,
    /// Print the configuration file's JSON Schema and exit
    #[arg(long)]
    print_schema: bool,
    /// A receiving TCP port whose flows are withheld (repeat for more)
    #[arg(long = "port", value_name = "P",
          required_unless_present_any = ["config", "print_schema"],
          value_parser = clap::value_parser!(u16).range(1..))]
    ports: Vec<u16>,
    /// NFQUEUE number for the outgoing ACKs
    #[arg(long, default_value_t = config::DEFAULT_QUEUE_OUT)]
    queue_out: u16,
    /// NFQUEUE number for the incoming data
    #[arg(long, default_value_t = config::DEFAULT_QUEUE_IN)]
    queue_in: u16,
    /// DupACKs let through at once per reordering episode (0-2)
    #[arg(long, default_value_t = Withhold::default().immediate_dupacks,
          value_parser = clap::value_parser!(u32).range(range(&IMMEDIATE_DUPACKS)))]
    immediate_dupacks: u32,
    /// Reordering episodes remembered (1-1024)
    #[arg(long, default_value_t = Withhold::default().history_episodes,
          value_parser = clap::value_parser!(u32).range(range(&HISTORY_EPISODES)))]
    history: u32,
    /// EWMA weight of the inter-arrival time (0.001-1)
    #[arg(long, default_value_t = Withhold::default().iat_weight,
          value_parser = |v: &str| number_in(v, &IAT_WEIGHT))]
    iat_weight: f64,
    /// Initial dupACK threshold, packets (1-10000)
    #[arg(long, default_value_t = Withhold::default().initial_threshold_packets,
          value_parser = clap::value_parser!(u32).range(range(&INITIAL_THRESHOLD_PACKETS)))]
    initial_threshold: u32,
    /// Round-trip time, ms (1-60000)
    #[arg(long, default_value_t = Withhold::default().rtt_ms,
          value_parser = |v: &str| number_in(v, &RTT_MS))]
    rtt_ms: f64,
}

/// The flags `--config` replaces (clap's ids: the fields' names).
const SETTING_FLAGS: [&str; 8] = [
    "ports",
    "queue_out",
    "queue_in",
    "immediate_dupacks",
    "history",
    "iat_weight",
    "initial_threshold",
    "rtt_ms",
];

fn range(b: &config::Bound<u32>) -> std::ops::RangeInclusive<i64> {
    i64::from(b.lo)..=i64::from(b.hi)
}

fn number_in(v: &str, b: &config::Bound<f64>) -> Result<f64, String> {
    let x: f64 = v.parse().map_err(|_| format!("{v:?} is not a number"))?;
    if !(b.lo..=b.hi).contains(&x) {
        return Err(format!("{v} is out of [{}, {}]", b.lo, b.hi));
    }
    Ok(x)
}

struct Args {
    ports: Vec<u16>,
    queue_out: u16,
    queue_in: u16,
    params: Params,
}

impl Cli {
    /// The configuration the flags give (clap has checked each range).
    fn flags_config(&self) -> Config {
        if self.queue_in == self.queue_out {
            let e = "--queue-in: must differ from --queue-out";
            <Cli as clap::CommandFactory>::command()
                .error(clap::error::ErrorKind::ArgumentConflict, e)
                .exit();
        }
        Config {
            ports: self.ports.clone(),
            queue_out: self.queue_out,
            queue_in: self.queue_in,
            withhold: Withhold {
                immediate_dupacks: self.immediate_dupacks,
                history_episodes: self.history,
                iat_weight: self.iat_weight,
                initial_threshold_packets: self.initial_threshold,
                rtt_ms: self.rtt_ms,
            },
        }
    }
}

/// The run's arguments, from the file or the flags; `--print-schema` and `--check` end here.
fn parse_args() -> Args {
    let c: Cli = clap::Parser::parse();
    if c.print_schema {
        println!("{}", binkit::schema::pretty::<Config>());
        std::process::exit(0);
    }
    let cfg = match &c.config {
        Some(path) => Config::from_json_file(path).or_exit(PROGRAM, 2),
        None => c.flags_config(),
    };
    if c.check {
        println!(
            "{}",
            serde_json::to_string(&cfg).expect("a configuration serializes")
        );
        std::process::exit(0);
    }
    Args {
        params: cfg.withhold.params(),
        ports: cfg.ports,
        queue_out: cfg.queue_out,
        queue_in: cfg.queue_in,
    }
}

/// The iptables rules of the receiving ports; removed when dropped.
struct Rules(Vec<Vec<String>>);

impl Rules {
    fn install(a: &Args) -> Result<Rules, String> {
        let mut rules = Rules(vec![]);
        for p in &a.ports {
            for (chain, dir, q) in [
                ("OUTPUT", "--sport", a.queue_out),
                ("INPUT", "--dport", a.queue_in),
            ] {
                let spec: Vec<String> = [chain, "-p", "tcp", dir, &p.to_string(), "-j", "NFQUEUE"]
                    .into_iter()
                    .map(String::from)
                    .chain(["--queue-num".into(), q.to_string(), "--queue-bypass".into()])
                    .collect();
                iptables("-I", &spec)?;
                rules.0.push(spec);
            }
        }
        Ok(rules)
    }
}

impl Drop for Rules {
    fn drop(&mut self) {
        for spec in &self.0 {
            if let Err(e) = iptables("-D", spec) {
                eprintln!("satlab-withhold: {e}");
            }
        }
    }
}

fn iptables(op: &str, spec: &[String]) -> Result<(), String> {
    let out = Command::new("iptables")
        .arg("-w")
        .arg(op)
        .args(spec)
        .output()
        .map_err(|e| format!("iptables: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("iptables {op} {}: {}", spec.join(" "), err.trim()));
    }
    Ok(())
}

/// Opens the queue and finds its netlink socket: the `nfq` crate does not expose it, and poll(2)
/// needs it to sleep until a packet or the next paced release. The socket gets the lowest free
/// descriptor (single-threaded here), which is probed first and checked afterwards.
fn open_queue() -> Result<(nfq::Queue, libc::c_int), String> {
    let probe = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_DGRAM, 0) };
    if probe < 0 {
        return Err("socket: cannot probe the next descriptor".into());
    }
    unsafe { libc::close(probe) };
    let q = nfq::Queue::open().map_err(|e| format!("nfqueue: {e} (is this root?)"))?;
    let mut proto: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    let rc = unsafe {
        libc::getsockopt(
            probe,
            libc::SOL_SOCKET,
            libc::SO_PROTOCOL,
            &mut proto as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 || proto != libc::NETLINK_NETFILTER {
        return Err("nfqueue: could not find the queue's netlink socket".into());
    }
    Ok((q, probe))
}

type Key = ([u8; 4], u16, u16); // remote address, remote port, local port

fn add(t: &mut Counters, c: &Counters) {
    t.data_segments += c.data_segments;
    t.ooo_arrivals += c.ooo_arrivals;
    t.acks += c.acks;
    t.dupacks += c.dupacks;
    t.dupacks_immediate += c.dupacks_immediate;
    t.dupacks_held += c.dupacks_held;
    t.episodes += c.episodes;
    t.released_dup_threshold += c.released_dup_threshold;
    t.released_dup_timer += c.released_dup_timer;
    t.released_seq += c.released_seq;
    t.acks_rewritten += c.acks_rewritten;
    t.acks_dropped += c.acks_dropped;
    t.filtered_episodes += c.filtered_episodes;
    t.strides_recorded += c.strides_recorded;
}

fn report(flows: &HashMap<Key, Flow<nfq::Message>>, a: &Args) -> serde_json::Value {
    let mut t = Counters::default();
    let (mut thresholds, mut iats) = (vec![], vec![]);
    for f in flows.values() {
        add(&mut t, &f.counters);
        thresholds.push(f.threshold());
        iats.push(f.iat_ewma_ns().map(|ns| ns / 1e6));
    }
    serde_json::json!({ "withhold": {
        "flows": flows.len(),
        "data_segments": t.data_segments,
        "ooo_arrivals": t.ooo_arrivals,
        "acks": t.acks,
        "dupacks": t.dupacks,
        "dupacks_immediate": t.dupacks_immediate,
        "dupacks_held": t.dupacks_held,
        "episodes": t.episodes,
        "released_dup_threshold": t.released_dup_threshold,
        "released_dup_timer": t.released_dup_timer,
        "released_seq": t.released_seq,
        "acks_rewritten": t.acks_rewritten,
        "acks_dropped": t.acks_dropped,
        "filtered_episodes": t.filtered_episodes,
        "strides_recorded": t.strides_recorded,
        "final_thresholds": thresholds,
        "final_iat_ewma_ms": iats,
        "settings": {
            "immediate_dupacks": a.params.immediate_dupacks,
            "history": a.params.history,
            "iat_weight": a.params.iat_weight,
            "initial_threshold": a.params.initial_threshold,
            "rtt_ms": a.params.rtt_ns as f64 / 1e6,
        },
    }})
}

fn apply(q: &mut nfq::Queue, mut msg: nfq::Message, v: Verdict) -> Result<(), String> {
    match v {
        Verdict::Accept => msg.set_verdict(nfq::Verdict::Accept),
        Verdict::AcceptWithAck(ack) => {
            tcp::set_ack(msg.get_payload_mut(), ack);
            msg.set_verdict(nfq::Verdict::Accept);
        }
        Verdict::Drop => msg.set_verdict(nfq::Verdict::Drop),
    }
    q.verdict(msg).map_err(|e| format!("nfqueue verdict: {e}"))
}

/// Binds the two queue numbers: fail-open (packets pass if the program cannot keep up), a long
/// queue, and only the headers of the incoming data (IP up to 60 bytes + the TCP fixed part).
fn bind_queues(a: &Args) -> Result<(nfq::Queue, libc::c_int), String> {
    let (mut q, fd) = open_queue()?;
    for n in [a.queue_out, a.queue_in] {
        q.bind(n).map_err(|e| format!("nfqueue bind {n}: {e}"))?;
        q.set_fail_open(n, true)
            .map_err(|e| format!("nfqueue fail-open {n}: {e}"))?;
        q.set_queue_max_len(n, 8192)
            .map_err(|e| format!("nfqueue max len {n}: {e}"))?;
    }
    q.set_copy_range(a.queue_in, 80)
        .map_err(|e| format!("nfqueue copy range: {e}"))?;
    q.set_nonblocking(true);
    Ok((q, fd))
}

/// Sleeps until a packet is queued or the earliest paced release is due, 100 ms at the most.
fn wait(fd: libc::c_int, flows: &HashMap<Key, Flow<nfq::Message>>, t: u64) {
    let wait_ms = flows
        .values()
        .filter_map(|f| f.deadline())
        .min()
        .map_or(100, |d| {
            d.saturating_sub(t).div_ceil(1_000_000).min(100) as libc::c_int
        });
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    unsafe { libc::poll(&mut pfd, 1, wait_ms) };
}

/// The next queued packet; None when none is waiting.
fn recv(q: &mut nfq::Queue) -> Result<Option<nfq::Message>, String> {
    match q.recv() {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => Ok(None),
        Err(e) => Err(format!("nfqueue recv: {e}")),
    }
}

/// One queued packet at time `t`: incoming data is shown to its flow (a SYN starts one) and
/// accepted; an outgoing segment of a known flow is the flow's to pass, hold or rewrite.
fn dispatch(
    q: &mut nfq::Queue,
    flows: &mut HashMap<Key, Flow<nfq::Message>>,
    a: &Args,
    msg: nfq::Message,
    t: u64,
) -> Result<(), String> {
    let Some(s) = tcp::parse(msg.get_payload()) else {
        return apply(q, msg, Verdict::Accept);
    };
    if msg.get_queue_num() == a.queue_in {
        let key = (s.src, s.sport, s.dport);
        if s.syn {
            flows.insert(key, Flow::new(a.params.clone()));
        }
        if let Some(f) = flows.get_mut(&key) {
            f.data(t, s.seq, s.payload_len);
        }
        return apply(q, msg, Verdict::Accept);
    }
    match flows.get_mut(&(s.dst, s.dport, s.sport)) {
        Some(f) => {
            let pure = s.payload_len == 0 && !s.syn && !s.fin && !s.rst;
            f.outgoing(t, msg, s.ack, pure);
            Ok(())
        }
        None => apply(q, msg, Verdict::Accept),
    }
}

/// Applies the verdicts a flow has decided.
fn apply_drained(q: &mut nfq::Queue, f: &mut Flow<nfq::Message>) -> Result<(), String> {
    for (m, v) in f.drain() {
        apply(q, m, v)?;
    }
    Ok(())
}

fn run(a: &Args, stop: &AtomicBool) -> Result<serde_json::Value, String> {
    let (mut q, fd) = bind_queues(a)?;
    let rules = Rules::install(a)?;
    eprintln!(
        "satlab-withhold: ports {:?} queued (out {}, in {})",
        a.ports, a.queue_out, a.queue_in
    );
    let start = Instant::now();
    let now = || start.elapsed().as_nanos() as u64;
    let mut flows: HashMap<Key, Flow<nfq::Message>> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        wait(fd, &flows, now());
        while let Some(msg) = recv(&mut q)? {
            dispatch(&mut q, &mut flows, a, msg, now())?;
        }
        let t = now();
        for f in flows.values_mut() {
            f.tick(t);
            apply_drained(&mut q, f)?;
        }
    }
    for f in flows.values_mut() {
        f.flush();
        apply_drained(&mut q, f)?;
    }
    drop(rules);
    Ok(report(&flows, a))
}

fn main() -> ExitCode {
    let a = parse_args();
    match run(&a, binkit::signals::stop_on_term()) {
        Ok(out) => {
            println!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{PROGRAM}: {e}");
            ExitCode::FAILURE
        }
    }
}
