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
mod terminal_metrics;
mod vlans;
mod wake_lead;
mod waveform_channel;

use linkmodel::{Dir, LinkConfig, Model};
use netio::{port, sys};
use settings::{EmulatorConfig, PortConfig, PortKind, XdpMode};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

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

/// Says once which MODCODs keep the assumed PER waterfall under `per_curves: calibrated`, so a
/// run's erasures are never silently from an assumed curve.
fn log_waterfall_fallbacks(link: &LinkConfig) -> Result<(), String> {
    for dir in [Dir::Forward, Dir::Return] {
        let note = linkmodel::waterfall_fallback_note(link, dir).map_err(|e| e.to_string())?;
        if let Some(note) = note {
            log(&note);
        }
    }
    Ok(())
}

/// Starts the emulator, then waits for SIGINT or SIGTERM and stops it.
fn run(cfg: EmulatorConfig, realtime: Option<i32>) -> Result<(), String> {
    let sigset = block_signals();
    let shutdown = Arc::new(AtomicBool::new(false));
    let running = start(&cfg, realtime, &shutdown)?;
    log(&format!(
        "running: gw={} ({:?}) st={} ({:?}), control http://{}, telemetry {}",
        cfg.ports.gw.interface,
        cfg.ports.gw.kind,
        cfg.ports.st.interface,
        cfg.ports.st.kind,
        cfg.control.listen,
        running.sock_path.display()
    ));
    let sig = wait_for_signal(&sigset);
    log(&format!("signal {sig}: shutting down"));
    shutdown.store(true, Ordering::Relaxed);
    running.stop();
    Ok(())
}

/// The threads of a running emulator and what is removed when it stops.
struct Running {
    controller: Arc<control::Controller>,
    threads: Vec<JoinHandle<()>>,
    sock_path: PathBuf,
}

impl Running {
    /// Wakes the direction threads (the shutdown flag is set), joins every thread and removes
    /// the telemetry socket.
    fn stop(self) {
        for h in &self.controller.dirs {
            h.wake();
        }
        for t in self.threads {
            let _ = t.join();
        }
        telemetry::remove_socket(&self.sock_path);
    }
}

/// Opens the ports, builds both directions, the control listener and the telemetry socket, and
/// starts every thread.
fn start(
    cfg: &EmulatorConfig,
    realtime: Option<i32>,
    shutdown: &Arc<AtomicBool>,
) -> Result<Running, String> {
    let clock = sys::Clock::start();
    let (gw_rx, gw_tx) = open_port(&cfg.ports.gw).map_err(|e| e.to_string())?;
    let (st_rx, st_tx) = open_port(&cfg.ports.st).map_err(|e| e.to_string())?;
    let link = cfg.link();
    let fwd = if link.forward.is_waveform() {
        waveform_channel::forward_model(&link)?
    } else {
        Model::new(&link, Dir::Forward).map_err(|e| e.to_string())?
    };
    let ret = Model::new(&link, Dir::Return).map_err(|e| e.to_string())?;
    log_waterfall_fallbacks(&link)?;
    let fwd_oracle = open_oracle(&link, Dir::Forward)?;
    let ret_oracle = open_oracle(&link, Dir::Return)?;

    let listener = TcpListener::bind(&cfg.control.listen).map_err(|e| {
        format!(
            "control.listen: cannot listen on {}: {e}",
            cfg.control.listen
        )
    })?;
    let sock_path = cfg.telemetry.socket.clone();
    let (tele_server, tele_tx) = telemetry::bind(&sock_path).map_err(|e| e.to_string())?;
    exit_on_panic(sock_path.clone());

    let spin_ns = env_us_as_ns("SATLAB_EMU_SPIN_US");
    let rx_coalesce_ns = env_us_as_ns("SATLAB_EMU_RX_COALESCE_US").unwrap_or(100_000);
    let trunk = vlans::StVlans::of(&link).map(Arc::new);
    let dir_thread = |dir, model, rx, tx, oracle, trunk| {
        let settings = dataplane::DirSettings {
            events: cfg.telemetry.events,
            period_ns: cfg.telemetry.period_ms * 1_000_000,
            spin_ns,
            rt_priority: realtime,
            rx_coalesce_ns,
            oracle,
            trunk,
        };
        dataplane::DirThread::new(
            dir,
            model,
            rx,
            tx,
            clock,
            shutdown.clone(),
            tele_tx.clone(),
            settings,
        )
        .map_err(|e| e.to_string())
    };
    let (ft, fh, fstats) = dir_thread(Dir::Forward, fwd, gw_rx, st_tx, fwd_oracle, None)?;
    let (rt, rh, rstats) = dir_thread(Dir::Return, ret, st_rx, gw_tx, ret_oracle, trunk.clone())?;

    let controller = Arc::new(control::Controller {
        dirs: [fh, rh],
        port_stats: [fstats, rstats],
        telemetry: tele_tx.stats.clone(),
        trunk,
        clock,
    });
    let threads = spawn_threads([ft, rt], tele_server, &controller, listener, shutdown)?;
    drop(tele_tx);
    Ok(Running {
        controller,
        threads,
        sock_path,
    })
}

/// Starts the forward, return, telemetry and control threads; each runs until `shutdown`.
fn spawn_threads(
    [ft, rt]: [dataplane::DirThread; 2],
    tele_server: telemetry::Server,
    controller: &Arc<control::Controller>,
    listener: TcpListener,
    shutdown: &Arc<AtomicBool>,
) -> Result<Vec<JoinHandle<()>>, String> {
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
    let c2 = controller.clone();
    let s2 = shutdown.clone();
    let t_ctl = spawn(
        "control",
        Box::new(move || c2.serve(listener, move || s2.load(Ordering::Relaxed))),
    )?;
    Ok(vec![t_fwd, t_ret, t_tele, t_ctl])
}

/// The oracle ETEN notice map of `dir`, opened, if the direction has `oracle_eten`.
fn open_oracle(link: &LinkConfig, dir: Dir) -> Result<Option<oracle::Oracle>, String> {
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
}

/// A panic in any thread (a bug) ends the whole process with an error, so a supervisor sees it,
/// instead of leaving a half-working link behind.
fn exit_on_panic(sock_path: PathBuf) {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        log("internal error (panic): exiting");
        telemetry::remove_socket(&sock_path);
        std::process::exit(70);
    }));
}

/// The environment variable `name`, a whole number of microseconds, in ns (`None` if unset or
/// not a number).
fn env_us_as_ns(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|us| us * 1000)
}

/// Waits for SIGINT or SIGTERM (blocked in every thread by `block_signals`, taken here
/// synchronously) and returns which came.
fn wait_for_signal(set: &libc::sigset_t) -> libc::c_int {
    let mut sig: libc::c_int = 0;
    // SAFETY: valid sigset and output pointer.
    unsafe { libc::sigwait(set, &mut sig) };
    sig
}
