//! `satlab-emulator --config FILE.yaml [--check]` (or `--print-schema [config|control|status|telemetry]`): the GEO satellite link between two ports.
//!
//! See emulator/README.md (running, ports, control API, telemetry) and emulator/CONFIG.md (the
//! configuration file). The link itself is `linkmodel`; this binary is its I/O: ports, one thread
//! per direction, the control HTTP endpoint and the telemetry stream.

mod control;
mod dataplane;
mod describe;
mod oracle;
mod release;
mod rt_guard;
mod settings;
mod telemetry;
mod wake_lead;

use linkmodel::{Dir, Direction};
use netio::{port, sys};
use settings::{EmulatorConfig, PortConfig, PortKind, XdpMode};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Logs a line to stderr with the program name.
pub fn log(msg: &str) {
    eprintln!("satlab-emulator: {msg}");
}

const ENVIRONMENT: &str = "environment: SATLAB_EMU_SPIN_US          fixed timer lead before a delivery deadline, us, busy-polled (default: learnt)\n\
             SATLAB_EMU_RX_COALESCE_US  while input flows, read it every N us (default 100; up to 1000 when the\n\
                                        link's fixed delay allows; 0 = wake per frame)";

/// The JSON Schemas the binary prints (--print-schema).
#[derive(Clone, Copy, clap::ValueEnum)]
enum Schema {
    Config,
    Control,
    Status,
    Telemetry,
}

/// Command line (clap); a usage error exits 2, like an invalid configuration.
#[derive(clap::Parser)]
#[command(version, about, after_help = ENVIRONMENT)]
struct Args {
    /// Emulator configuration (see emulator/CONFIG.md)
    #[arg(
        short,
        long,
        value_name = "FILE",
        required_unless_present = "print_schema"
    )]
    config: Option<PathBuf>,
    /// Validate the configuration, print it resolved as JSON, exit 0 (valid) or 2 (invalid)
    #[arg(long)]
    check: bool,
    /// Print a JSON Schema and exit: `config` (the default; bounds of --check, units in x-unit),
    /// `control` (a POST /control body), `status` (GET /status), `telemetry` (a stream line)
    #[arg(long, value_enum, value_name = "NAME", num_args = 0..=1, default_missing_value = "config")]
    print_schema: Option<Schema>,
    /// SCHED_FIFO priority of the two data-plane threads (1-99; 0 = nice -10 instead)
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(i32).range(0..=99))]
    realtime: i32,
}

fn open_port(p: &PortConfig) -> std::io::Result<(port::RxPort, port::TxPort)> {
    match p.kind {
        PortKind::AfPacket => port::open_af_packet(&p.interface),
        PortKind::Tap => port::open_tap(&p.interface),
        PortKind::AfXdp => {
            let mode = match p.xdp_mode.unwrap_or(XdpMode::Auto) {
                XdpMode::Auto => netio::afxdp::Mode::Auto,
                XdpMode::Zerocopy => netio::afxdp::Mode::ZeroCopy,
                XdpMode::Copy => netio::afxdp::Mode::Copy,
            };
            port::open_af_xdp(&p.interface, p.queue.unwrap_or(0), mode)
        }
    }
}

fn block_signals() -> libc::sigset_t {
    // SAFETY: sigset manipulation on a local set; the mask is inherited by threads spawned later.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

fn main() -> ExitCode {
    // --print-modcods, --preview-trace, --check-file: the link model's answers (describe.rs).
    if let Some(code) = describe::run_from_args(&std::env::args().skip(1).collect::<Vec<_>>()) {
        return code;
    }
    let args: Args = clap::Parser::parse();
    if let Some(which) = args.print_schema {
        println!(
            "{}",
            match which {
                Schema::Config => settings::json_schema(),
                Schema::Control => linkmodel::control::json_schema(),
                Schema::Status => linkmodel::records::status_schema(),
                Schema::Telemetry => linkmodel::records::telemetry_schema(),
            }
        );
        return ExitCode::SUCCESS;
    }
    // --config is required unless --print-schema, which has returned above.
    let cfg = match EmulatorConfig::from_yaml_file(&args.config.unwrap_or_default()) {
        Ok(c) => c,
        Err(e) => {
            log(&format!("invalid configuration: {e}"));
            return ExitCode::from(2);
        }
    };
    if args.check {
        match serde_json::to_string_pretty(&cfg) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                log(&format!("cannot print configuration: {e}"));
                return ExitCode::from(2);
            }
        }
        return ExitCode::SUCCESS;
    }
    match run(cfg, (args.realtime > 0).then_some(args.realtime)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log(&format!("error: {e}"));
            ExitCode::from(1)
        }
    }
}

fn run(cfg: EmulatorConfig, realtime: Option<i32>) -> Result<(), String> {
    let sigset = block_signals();
    let clock = sys::Clock::start();
    let shutdown = Arc::new(AtomicBool::new(false));

    let (gw_rx, gw_tx) = open_port(&cfg.ports.gw).map_err(|e| e.to_string())?;
    let (st_rx, st_tx) = open_port(&cfg.ports.st).map_err(|e| e.to_string())?;
    let link = cfg.link();
    let fwd = Direction::new(&link, Dir::Forward).map_err(|e| e.to_string())?;
    let ret = Direction::new(&link, Dir::Return).map_err(|e| e.to_string())?;
    let open_oracle = |dir: Dir| -> Result<Option<oracle::Oracle>, String> {
        let Some(o) = &link.direction(dir).oracle_eten else {
            return Ok(None);
        };
        let oracle = oracle::Oracle::open(&o.map_pin)
            .map_err(|e| format!("{}.oracle_eten.map_pin: {e}", dir.as_str()))?;
        log(&format!(
            "{}: oracle ETEN notices go to {}",
            dir.as_str(),
            o.map_pin.display()
        ));
        Ok(Some(oracle))
    };
    let (fwd_oracle, ret_oracle) = (open_oracle(Dir::Forward)?, open_oracle(Dir::Return)?);

    let listener = std::net::TcpListener::bind(&cfg.control.listen).map_err(|e| {
        format!(
            "control.listen: cannot listen on {}: {e}",
            cfg.control.listen
        )
    })?;
    let sock_path = cfg.telemetry.socket.clone();
    let (tele_server, tele_tx) = telemetry::bind(&sock_path).map_err(|e| e.to_string())?;
    // A panic in any thread (a bug) ends the whole process with an error, so a supervisor sees
    // it, instead of leaving a half-working link behind.
    let default_hook = std::panic::take_hook();
    let hook_path = sock_path.clone();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        log("internal error (panic): exiting");
        telemetry::remove_socket(&hook_path);
        std::process::exit(70);
    }));

    let env_us = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(default)
            * 1000
    };
    let spin_ns = std::env::var("SATLAB_EMU_SPIN_US")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|us| us * 1000);
    let rx_coalesce_ns = env_us("SATLAB_EMU_RX_COALESCE_US", 100);
    let settings = |oracle| dataplane::DirSettings {
        events: cfg.telemetry.events,
        period_ns: cfg.telemetry.period_ms * 1_000_000,
        spin_ns,
        rt_priority: realtime,
        rx_coalesce_ns,
        oracle,
    };
    let (ft, fh, fstats) = dataplane::DirThread::new(
        Dir::Forward,
        fwd,
        gw_rx,
        st_tx,
        clock,
        shutdown.clone(),
        tele_tx.clone(),
        settings(fwd_oracle),
    )
    .map_err(|e| e.to_string())?;
    let (rt, rh, rstats) = dataplane::DirThread::new(
        Dir::Return,
        ret,
        st_rx,
        gw_tx,
        clock,
        shutdown.clone(),
        tele_tx.clone(),
        settings(ret_oracle),
    )
    .map_err(|e| e.to_string())?;

    let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new()
            .name(name.into())
            .spawn(f)
            .map_err(|e| format!("cannot start thread {name}: {e}"))
    };
    let t_fwd = spawn("forward", Box::new(move || ft.run()))?;
    let t_ret = spawn("return", Box::new(move || rt.run()))?;
    let s1 = shutdown.clone();
    let t_tele = spawn(
        "telemetry",
        Box::new(move || tele_server.run(move || s1.load(Ordering::Relaxed))),
    )?;
    let controller = Arc::new(control::Controller {
        dirs: [fh, rh],
        port_stats: [fstats, rstats],
        telemetry: tele_tx.stats.clone(),
        clock,
    });
    let c2 = controller.clone();
    let s2 = shutdown.clone();
    let t_ctl = spawn(
        "control",
        Box::new(move || c2.serve(listener, move || s2.load(Ordering::Relaxed))),
    )?;
    drop(tele_tx);

    log(&format!(
        "running: gw={} ({:?}) st={} ({:?}), control http://{}, telemetry {}",
        cfg.ports.gw.interface,
        cfg.ports.gw.kind,
        cfg.ports.st.interface,
        cfg.ports.st.kind,
        cfg.control.listen,
        sock_path.display()
    ));

    // Wait for SIGINT/SIGTERM (blocked in every thread, taken here synchronously).
    let mut sig: libc::c_int = 0;
    // SAFETY: valid sigset and output pointer.
    unsafe { libc::sigwait(&sigset, &mut sig) };
    log(&format!("signal {sig}: shutting down"));
    shutdown.store(true, Ordering::Relaxed);
    for h in &controller.dirs {
        h.wake();
    }
    for t in [t_fwd, t_ret, t_tele, t_ctl] {
        let _ = t.join();
    }
    telemetry::remove_socket(&sock_path);
    Ok(())
}
