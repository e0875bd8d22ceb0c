//! satlab-pep: a split-TCP performance-enhancing proxy for a satellite edge (pep/README.md).
//!
//! Threads: one acceptor per TPROXY listener, two relay threads per connection (relay.rs says
//! why), one HTTP thread; the main thread waits for SIGTERM/SIGINT, prints the final status with
//! the connection records as its last stdout line (the host agent's result), removes the
//! interception rules and exits.

mod config;
mod http;
mod intercept;
mod relay;
mod sock;
mod state;

use binkit::{cli, exit::OrExit};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// File descriptors one connection holds: two sockets and two pipes.
const FDS_PER_CONNECTION: u64 = 6;

/// Command line; clap's usage errors exit 2, like a configuration error.
#[derive(clap::Parser)]
#[command(version, about)]
struct Args {
    /// The PEP configuration (pep/README.md)
    #[arg(long, value_name = "FILE", required_unless_present = "print_schema")]
    config: Option<PathBuf>,
    /// Check the configuration, print a one-line summary and exit
    #[arg(long)]
    check: bool,
    /// Print the configuration's JSON Schema and exit
    #[arg(long)]
    print_schema: bool,
    /// Print the nftables interception rules the configuration installs and exit
    #[arg(long)]
    print_rules: bool,
}

/// The name errors start with.
const PROGRAM: &str = "satlab-pep";

fn main() {
    let Args {
        config: path,
        check,
        print_rules,
        print_schema,
    } = clap::Parser::parse();
    let cfg = cli::config_or_schema(PROGRAM, print_schema, path, config::Config::from_yaml_file);
    if print_rules {
        print!("{}", intercept::nft_rules(&cfg));
        return;
    }
    if check {
        println!(
            "configuration OK: edge {}, satellite {} ({}), max {} connections",
            cfg.edge.as_str(),
            cfg.intercept.satellite_interface,
            cfg.settings.congestion_control,
            cfg.settings.max_connections
        );
        return;
    }
    run(cfg).or_exit(PROGRAM, 1);
}

fn run(cfg: config::Config) -> std::io::Result<()> {
    let limit = sock::raise_fd_limit();
    let need = cfg.settings.max_connections as u64 * FDS_PER_CONNECTION + 64;
    if limit < need {
        return Err(std::io::Error::other(format!(
            "settings.max_connections: {} connections need {need} file descriptors, RLIMIT_NOFILE allows {limit}",
            cfg.settings.max_connections
        )));
    }
    let sh = Arc::new(state::Shared::new(cfg));
    let c = &sh.cfg;
    let from_terrestrial = relay::listener(&sh, c.intercept.terrestrial_port, false)?;
    // also proves the congestion control is available before any connection needs it
    let from_satellite = relay::listener(&sh, c.intercept.satellite_port, true)?;
    let http = binkit::http::bind(c.http.listen)?;
    let installed = if c.intercept.install {
        Some(intercept::install(c)?)
    } else {
        None
    };
    let stop = binkit::signals::stop_on_term();
    for (l, sat) in [(from_terrestrial, false), (from_satellite, true)] {
        let s = sh.clone();
        std::thread::Builder::new()
            .name(if sat { "accept-sat" } else { "accept-ter" }.into())
            .spawn(move || relay::accept_loop(s, l, sat))?;
    }
    if let Some(l) = http {
        let s = sh.clone();
        std::thread::Builder::new()
            .name("http".into())
            .spawn(move || http::serve(s, l))?;
    }
    eprintln!("satlab-pep: {} edge intercepting", sh.cfg.edge.as_str());
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    sh.stop.store(true, Ordering::Relaxed);
    drop(installed);
    let mut last = sh.status();
    last["connections"] = serde_json::to_value(sh.records()).unwrap_or_default();
    println!("{last}");
    Ok(())
}
