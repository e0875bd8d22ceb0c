//! satlab-gateway: the edge router bump at both satellite edges (gateway/README.md).
//!
//! A transparent L2 bump between the local router's satellite-side interface (`ports.inside`) and
//! the satellite link (`ports.outside`): routing and ARP stay the kernel's. It paces its egress at
//! the link's current useful rate (link telemetry) so the bottleneck queue forms here, where
//! drop-tail / RED / RED+ECN act; it runs the IP-ERN router (XCP laws on ERN traffic), stamps the
//! CETEN fields, and sends ETEN notices for packets the incoming link corrupted or erased.

mod aqm;
mod config;
mod dataplane;
mod ewma;
mod http;
mod macfilter;
mod notifier;
// port.rs and sys.rs are copies of the emulator's (emulator/src/), kept identical so a later
// shared crate can replace both; not every helper (TAP ports, kernel drop counts) is used here.
#[allow(dead_code)]
mod process;
mod stage;
mod state;
#[allow(dead_code)]
mod telemetry;
mod xcp;

use binkit::{cli, exit::OrExit};
use netio::{port, sys};
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

/// Command line; clap's usage errors exit 2, like a configuration error.
#[derive(clap::Parser)]
#[command(version, about)]
struct Args {
    /// The gateway configuration (gateway/README.md)
    #[arg(
        long,
        value_name = "FILE.yaml",
        required_unless_present = "print_schema"
    )]
    config: Option<PathBuf>,
    /// Check the configuration, print a one-line summary and exit
    #[arg(long)]
    check: bool,
    /// Print the configuration's JSON Schema and exit
    #[arg(long)]
    print_schema: bool,
}

/// The name errors start with.
const PROGRAM: &str = "satlab-gateway";

fn main() {
    let Args {
        config: path,
        check,
        print_schema,
    } = clap::Parser::parse();
    let cfg = cli::config_or_schema(PROGRAM, print_schema, path, config::Config::from_yaml_file);
    if check {
        println!(
            "configuration OK: role {:?}, inside {}, outside {}",
            cfg.role, cfg.ports.inside, cfg.ports.outside
        );
        return;
    }
    run(cfg).or_exit(PROGRAM, 1);
}

fn run(cfg: config::Config) -> std::io::Result<()> {
    let (in_rx, in_tx) = port::open_af_packet(&cfg.ports.inside)?;
    let (out_rx, out_tx) = port::open_af_packet(&cfg.ports.outside)?;
    // The egress thread learns the router's MAC and filters the outside socket by it (macfilter).
    // SAFETY: out_rx's descriptor is open here; the clone is a descriptor of its own.
    let out_socket = unsafe { BorrowedFd::borrow_raw(out_rx.fd()) }.try_clone_to_owned()?;
    let filter = macfilter::RouterFilter::new(out_socket, &cfg.ports.outside);
    let listener = binkit::http::bind(cfg.http.listen)?;
    let sh = Arc::new(state::Shared::new(cfg));
    stop_on_signals(sh.clone());
    let (s1, s2, s3) = (sh.clone(), sh.clone(), sh.clone());
    let mut threads = vec![
        spawn("egress", move || {
            sys::precise_timer_slack();
            dataplane::egress(s1, in_rx, out_tx, filter)
        })?,
        spawn("ingress", move || dataplane::ingress(s2, out_rx, in_tx))?,
        spawn("telemetry", move || telemetry::run(s3))?,
    ];
    if let Some(l) = listener {
        let s = sh.clone();
        threads.push(spawn("http", move || http::serve(s, l))?);
    }
    eprintln!(
        "satlab-gateway: role {:?}: {} -> {} (egress, {} link), {} -> {} (ingress)",
        sh.cfg.role,
        sh.cfg.ports.inside,
        sh.cfg.ports.outside,
        sh.cfg.role.egress_direction(),
        sh.cfg.ports.outside,
        sh.cfg.ports.inside
    );
    for t in threads {
        let _ = t.join();
    }
    // The final status as the last stdout line: a supervisor (the testbed agent) keeps it as the
    // process's result.
    println!("{}", http::status(&sh));
    Ok(())
}

/// Starts a thread under `name` (shown by `top -H` and in a panic message).
fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new().name(name.into()).spawn(f)
}

/// SIGTERM/SIGINT set the stop flag; a watcher thread passes it to the shared state.
fn stop_on_signals(sh: Arc<state::Shared>) {
    let stop = binkit::signals::stop_on_term();
    std::thread::spawn(move || loop {
        if stop.load(Ordering::Relaxed) {
            sh.stop.store(true, Ordering::Relaxed);
            if let Some(n) = sh.egress_wake.lock().expect("wake lock").as_ref() {
                n.notify();
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    });
}
