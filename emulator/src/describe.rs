//! Read-only answers from the link model for other programs (the API and, through it, the UI), so
//! the MODCOD tables, the C/N algebra, the ACM rule and the frame arithmetic have one
//! implementation, `linkmodel`, and no copy in Python or TypeScript:
//!
//! - `--print-modcods [dvbs2|dvbs2x|-]`: the embedded table (`-`: a table file on stdin) as JSON,
//!   with each MODCOD's useful bits per normal frame and frame symbols with and without pilots.
//! - `--read-trace FILE`: an attenuation trace's points, `{"ticks": [..], "values_db": [..]}`.
//! - `--preview-trace`: reads a JSON request on stdin (a forward link's budget and an attenuation
//!   trace applied to its downlink) and prints, per tick, the attenuation, Es/N0, the MODCOD the
//!   ACM rule picks and its useful rate. The ACM loop's feedback delay and hysteresis are not
//!   applied: this is what the channel allows at each tick.
//! - `--check-file KIND [FILE]` (KIND attenuation|delay|modcod|per; FILE or stdin): parses a link
//!   file as a run would and prints `{"rows": N}`; the API checks uploads with it.
//!
//! All exit 0 with JSON on stdout, or 2 with the reason on stderr (a file's: `line N: reason`).

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use linkmodel::acm;
use linkmodel::attenuation::Trace;
use linkmodel::channel::combine_db;
use linkmodel::config::ConfigError;
use linkmodel::config::FrameSize;
use linkmodel::modcod::{dvbs2_shape, Modcod, ModcodTable};
use linkmodel::textfile;
use linkmodel::{delay, per};
use serde::{Deserialize, Serialize};

/// The most ticks one preview evaluates (the API bounds its requests the same way).
pub const MAX_PREVIEW_TICKS: u64 = 200_000;

/// Runs a describe mode when the arguments name one (`None`: not ours, the caller goes on).
pub fn run_from_args(args: &[String]) -> Option<ExitCode> {
    let out = match args.first().map(String::as_str) {
        Some("--print-modcods") => print_modcods(args.get(1).map(String::as_str)),
        Some("--preview-trace") => read_stdin().and_then(|text| preview_json(&text)),
        Some("--check-file") => check_file_args(&args[1..]),
        Some("--read-trace") => read_trace(args.get(1).map(String::as_str)),
        _ => return None,
    };
    Some(match out {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            crate::log(&e);
            ExitCode::from(2)
        }
    })
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read stdin: {e}"))?;
    Ok(text)
}

fn check_file_args(args: &[String]) -> Result<String, String> {
    let kind = args
        .first()
        .ok_or("--check-file needs a kind (attenuation|delay|modcod|per)")?;
    let text = match args.get(1).map(String::as_str) {
        None | Some("-") => read_stdin()?,
        Some(file) => textfile::read(Path::new(file)).map_err(|e| e.to_string())?,
    };
    let rows = check_file(kind, &text)?;
    Ok(format!("{{\"rows\":{rows}}}"))
}

/// The data rows of a link file of `kind`, parsed by the parser a run uses; the error names the
/// line (`line N: reason`) and the limit.
pub fn check_file(kind: &str, text: &str) -> Result<usize, String> {
    let path = Path::new("file");
    let rows = match kind {
        "attenuation" => Trace::parse(text, path).map(|t| t.points.len()),
        "delay" => delay::parse_delay_file(text, path).map(|p| p.len()),
        "modcod" => ModcodTable::parse(text, path).map(|t| t.rows.len()),
        // Once the file parses, every data line but the optional header is a row.
        "per" => per::parse(text, path).map(|_| {
            textfile::data_lines(text)
                .filter(|(_, f)| !f[0].eq_ignore_ascii_case("modcod_id"))
                .count()
        }),
        other => {
            return Err(format!(
                "--check-file: {other:?} is not attenuation, delay, modcod or per"
            ))
        }
    };
    rows.map_err(file_error)
}

/// A link file's error as `line N: reason` (the file is the caller's: stdin or a request field).
fn file_error(e: ConfigError) -> String {
    match e {
        ConfigError::File { line, reason, .. } => format!("line {line}: {reason}"),
        ConfigError::Io { reason, .. } => reason,
        other => other.to_string(),
    }
}

/// One MODCOD of a table with the frame arithmetic of a normal frame.
#[derive(Debug, Serialize)]
pub struct ModcodRow {
    pub id: u32,
    pub name: String,
    pub modulation: &'static str,
    pub rate: String,
    /// bit/symbol (EN 302 307-1 Table 13: PLHEADER and BBHEADER counted, no pilots)
    pub efficiency: f64,
    /// required Es/N0, dB
    pub esn0_db: f64,
    /// data-field bits of one normal frame (K_bch - BBHEADER), `None` if the MODCOD has none
    pub useful_bits_per_frame: Option<u32>,
    pub frame_symbols_pilots: Option<u32>,
    pub frame_symbols_no_pilots: Option<u32>,
}

fn row(m: &Modcod) -> ModcodRow {
    let with = dvbs2_shape(m, FrameSize::Normal, true);
    let without = dvbs2_shape(m, FrameSize::Normal, false);
    ModcodRow {
        id: m.id,
        name: m.name(),
        modulation: m.modulation.name(),
        rate: m.rate.clone(),
        efficiency: m.efficiency,
        esn0_db: m.esn0_db,
        useful_bits_per_frame: without.map(|s| s.data_bytes * 8),
        frame_symbols_pilots: with.map(|s| s.symbols),
        frame_symbols_no_pilots: without.map(|s| s.symbols),
    }
}

fn table(which: Option<&str>) -> Result<ModcodTable, String> {
    match which {
        None | Some("dvbs2") => Ok(ModcodTable::dvbs2_default()),
        Some("dvbs2x") => Ok(ModcodTable::dvbs2x()),
        Some("-") => ModcodTable::parse(&read_stdin()?, Path::new("table")).map_err(file_error),
        Some(other) => Err(format!(
            "--print-modcods: {other:?} is not dvbs2, dvbs2x or -"
        )),
    }
}

#[derive(Serialize)]
struct TracePoints {
    ticks: Vec<u64>,
    values_db: Vec<f64>,
}

fn read_trace(file: Option<&str>) -> Result<String, String> {
    let path = Path::new(file.ok_or("--read-trace needs a file")?);
    let t = Trace::load(path).map_err(|e| e.to_string())?;
    let (ticks, values_db) = t.points.into_iter().unzip();
    serde_json::to_string(&TracePoints { ticks, values_db }).map_err(|e| e.to_string())
}

fn print_modcods(which: Option<&str>) -> Result<String, String> {
    let rows: Vec<ModcodRow> = table(which)?.rows.iter().map(row).collect();
    serde_json::to_string(&rows).map_err(|e| e.to_string())
}

fn default_tick_ms() -> f64 {
    1000.0
}
fn default_true() -> bool {
    true
}

/// A `--preview-trace` request: the forward link's budget and the downlink trace's text.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreviewRequest {
    pub trace: String,
    #[serde(default = "default_tick_ms")]
    pub tick_ms: f64,
    pub symbol_rate_baud: f64,
    pub clear_sky_up_db: f64,
    pub clear_sky_down_db: f64,
    #[serde(default)]
    pub margin_db: f64,
    #[serde(default = "default_true")]
    pub pilots: bool,
    /// `dvbs2` (default) or `dvbs2x`
    #[serde(default)]
    pub table: Option<String>,
}

/// Per tick k = 0..=last tick of the trace (at least 1): time, attenuation, Es/N0, MODCOD, rate.
#[derive(Debug, Serialize, PartialEq)]
pub struct Preview {
    pub t_s: Vec<f64>,
    pub attenuation_db: Vec<f64>,
    pub esn0_db: Vec<f64>,
    pub modcod: Vec<u32>,
    pub rate_bps: Vec<f64>,
}

fn preview_json(text: &str) -> Result<String, String> {
    let req: PreviewRequest =
        serde_json::from_str(text).map_err(|e| format!("--preview-trace: request: {e}"))?;
    let p = preview(&req)?;
    serde_json::to_string(&p).map_err(|e| e.to_string())
}

/// The channel (linkmodel::channel's algebra), ACM rule (acm::select) and frame arithmetic
/// (modcod::dvbs2_shape) sampled once per tick of the trace.
pub fn preview(req: &PreviewRequest) -> Result<Preview, String> {
    if !(req.symbol_rate_baud > 0.0 && req.symbol_rate_baud.is_finite()) {
        return Err("symbol_rate_baud: must be a positive number".into());
    }
    if !(req.tick_ms > 0.0 && req.tick_ms.is_finite()) {
        return Err("tick_ms: must be a positive number".into());
    }
    let trace = Trace::parse(&req.trace, Path::new("trace"))
        .map_err(|e| format!("trace: {}", file_error(e)))?;
    let last = trace.points.last().map_or(0, |p| p.0).max(1);
    if last > MAX_PREVIEW_TICKS {
        return Err(format!(
            "trace: the last tick {last} is over the preview limit of {MAX_PREVIEW_TICKS} ticks"
        ));
    }
    let table = match req.table.as_deref() {
        Some("-") => return Err("table: must be dvbs2 or dvbs2x".into()),
        t => table(t).map_err(|e| e.replace("--print-modcods: ", "table: "))?,
    };
    let mut by_threshold: Vec<(f64, usize)> = table
        .rows
        .iter()
        .enumerate()
        .map(|(i, m)| (m.esn0_db, i))
        .collect();
    by_threshold.sort_by(|a, b| a.0.total_cmp(&b.0));
    let n = last as usize + 1;
    let mut p = Preview {
        t_s: Vec::with_capacity(n),
        attenuation_db: Vec::with_capacity(n),
        esn0_db: Vec::with_capacity(n),
        modcod: Vec::with_capacity(n),
        rate_bps: Vec::with_capacity(n),
    };
    for k in 0..=last {
        let a = trace.at(k as f64, false);
        let esn0 = combine_db(req.clear_sky_up_db, req.clear_sky_down_db - a);
        let m = &table.rows[acm::select(&by_threshold, esn0 - req.margin_db)];
        let rate = dvbs2_shape(m, FrameSize::Normal, req.pilots)
            .map_or(m.efficiency * req.symbol_rate_baud, |s| {
                s.useful_rate_bps(req.symbol_rate_baud)
            });
        p.t_s.push(k as f64 * req.tick_ms / 1000.0);
        p.attenuation_db.push(a);
        p.esn0_db.push(esn0);
        p.modcod.push(m.id);
        p.rate_bps.push(rate);
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(trace: &str) -> PreviewRequest {
        PreviewRequest {
            trace: trace.into(),
            tick_ms: 100.0,
            symbol_rate_baud: 5e6,
            clear_sky_up_db: 20.0,
            clear_sky_down_db: 20.0,
            margin_db: 0.5,
            pilots: true,
            table: None,
        }
    }

    #[test]
    fn modcod_rows_carry_the_frame_arithmetic() {
        let rows: Vec<ModcodRow> = ModcodTable::dvbs2_default().rows.iter().map(row).collect();
        assert_eq!(rows.len(), 28);
        let m28 = &rows[27];
        assert_eq!((m28.id, m28.name.as_str()), (28, "32APSK 9/10"));
        // K_bch 58192 - 80-bit BBHEADER; 90 + 144 slots x 90 (+ 8 pilot blocks of 36)
        assert_eq!(m28.useful_bits_per_frame, Some(58112));
        assert_eq!(m28.frame_symbols_no_pilots, Some(13050));
        assert_eq!(m28.frame_symbols_pilots, Some(13338));
        assert!(print_modcods(Some("dvbs2x")).is_ok());
        assert!(print_modcods(Some("s3")).unwrap_err().contains("\"s3\""));
        let dir = std::env::temp_dir().join(format!("describe-{}.txt", std::process::id()));
        std::fs::write(&dir, "0 0\n2 1.5\n").unwrap();
        let json = read_trace(dir.to_str()).unwrap();
        std::fs::remove_file(&dir).unwrap();
        assert_eq!(json, r#"{"ticks":[0,2],"values_db":[0.0,1.5]}"#);
    }

    #[test]
    fn preview_follows_the_documented_examples() {
        let p = preview(&req("# comment\n0 0\n50 0\n100 9 # peak\n150 0\n")).unwrap();
        assert_eq!(p.t_s.len(), 151);
        assert!((p.t_s[100] - 10.0).abs() < 1e-9);
        assert!((p.attenuation_db[75] - 4.5).abs() < 1e-9);
        assert_eq!(p.modcod[0], 28);
        // 9 dB of rain: C/N_down 11 dB -> Es/N0 10.49 dB, minus 0.5 dB margin -> 8PSK 5/6 (9.35)
        assert!((p.esn0_db[100] - 10.49).abs() < 0.01);
        assert_eq!(p.modcod[100], 15);
        assert!(p.rate_bps[0] > p.rate_bps[100]);
        // what a real emulator reported at 2 Msym/s with pilots (GET /status useful_rate_bps)
        let mut r = req("0 0\n");
        r.symbol_rate_baud = 2e6;
        let p = preview(&r).unwrap();
        assert!((p.rate_bps[0] - 8_713_750.187_434_398).abs() < 1e-3);
    }

    #[test]
    fn check_file_counts_rows_and_names_the_line() {
        assert_eq!(check_file("attenuation", "# c\n0 0\n5 1.5\n"), Ok(2));
        assert_eq!(check_file("delay", "0 250\n"), Ok(1));
        assert_eq!(
            check_file("per", "modcod_id,esn0_db,per\n1,0,0.5\n1,1,0.01\n"),
            Ok(2)
        );
        assert_eq!(check_file("modcod", "1 QPSK 1/4 0.49 -2.35\n"), Ok(1));
        assert_eq!(
            check_file("attenuation", "0 0\n1 101\n"),
            Err("line 2: attenuation dB 101 is outside [-50, 100]".into())
        );
        assert_eq!(
            check_file("delay", "0 1\n0 2\n"),
            Err("line 2: tick 0 is not after the previous tick 0 (ticks must increase)".into())
        );
        assert!(check_file("per", "# nothing\n")
            .unwrap_err()
            .starts_with("no PER rows"));
        assert!(check_file("pattern", "")
            .unwrap_err()
            .contains("\"pattern\""));
    }

    #[test]
    fn preview_errors_name_the_line_and_the_limit() {
        let e = preview(&req("0 0\n5 1\n5 2\n")).unwrap_err();
        assert!(e.starts_with("trace: line 3: "), "{e}");
        let e = preview(&req("0 0\n1 500\n")).unwrap_err();
        assert!(e.starts_with("trace: line 2: ") && e.contains("100"), "{e}");
        let e = preview(&req("0 0\n300000 1\n")).unwrap_err();
        assert!(e.contains("200000"), "{e}");
        assert!(preview_json("{\"trace\": \"0 0\"}").is_err());
    }
}
