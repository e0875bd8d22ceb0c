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

use netio::{port, sys};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

const USAGE: &str = "usage: satlab-gateway --config FILE.yaml [--check] | --version";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut config: Option<PathBuf> = None;
    let mut check = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--version" | "-V" => {
                println!("satlab-gateway {}", env!("CARGO_PKG_VERSION"));
                return;
            }
            "--config" => config = it.next().map(PathBuf::from),
            "--check" => check = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => {
                eprintln!("satlab-gateway: unknown argument {other}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let Some(path) = config else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let cfg = match config::Config::from_yaml_file(&path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("satlab-gateway: {e}");
            std::process::exit(2);
        }
    };
    if check {
        println!(
            "configuration OK: role {:?}, inside {}, outside {}",
            cfg.role, cfg.ports.inside, cfg.ports.outside
        );
        return;
    }
    if let Err(e) = run(cfg) {
        eprintln!("satlab-gateway: {e}");
        std::process::exit(1);
    }
}

fn run(cfg: config::Config) -> std::io::Result<()> {
    let (in_rx, in_tx) = port::open_af_packet(&cfg.ports.inside)?;
    let (out_rx, out_tx) = port::open_af_packet(&cfg.ports.outside)?;
    let listener = match cfg.http.listen {
        Some(a) => Some(
            std::net::TcpListener::bind(a)
                .map_err(|e| std::io::Error::new(e.kind(), format!("http.listen {a}: {e}")))?,
        ),
        None => None,
    };
    let sh = Arc::new(state::Shared::new(cfg));
    stop_on_signals(sh.clone());
    let mut threads = Vec::new();
    {
        let s = sh.clone();
        threads.push(
            std::thread::Builder::new()
                .name("egress".into())
                .spawn(move || {
                    sys::precise_timer_slack();
                    dataplane::egress(s, in_rx, out_tx)
                })?,
        );
    }
    {
        let s = sh.clone();
        threads.push(
            std::thread::Builder::new()
                .name("ingress".into())
                .spawn(move || dataplane::ingress(s, out_rx, in_tx))?,
        );
    }
    {
        let s = sh.clone();
        threads.push(
            std::thread::Builder::new()
                .name("telemetry".into())
                .spawn(move || telemetry::run(s))?,
        );
    }
    if let Some(l) = listener {
        let s = sh.clone();
        threads.push(
            std::thread::Builder::new()
                .name("http".into())
                .spawn(move || http::serve(s, l))?,
        );
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

static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// SIGTERM/SIGINT set the stop flag; a watcher thread passes it to the shared state.
fn stop_on_signals(sh: Arc<state::Shared>) {
    // SAFETY: installing an async-signal-safe handler (an atomic store).
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
    }
    std::thread::spawn(move || loop {
        if STOP.load(Ordering::Relaxed) {
            sh.stop.store(true, Ordering::Relaxed);
            if let Some(n) = sh.egress_wake.lock().expect("wake lock").as_ref() {
                n.notify();
            }
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    });
}
