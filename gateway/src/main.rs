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

fn main() {
    let Args {
        config: path,
        check,
        print_schema,
    } = clap::Parser::parse();
    if print_schema {
        println!("{}", config::json_schema());
        return;
    }
    // --config is required unless --print-schema, which has returned above.
    let path = path.expect("clap requires --config");
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
