"""The operator's commands: `satlab budget`, `satlab trace synth`, `satlab trace import-modem-log`.

satlab budget SCENARIO.yaml                  the scenario's link budget as a table (linkbudget.py)
satlab trace synth --lat --lon --freq --elevation --duration --seed [--step] [--clouds]
                   [--scintillation] [--model independent|combined] -o FILE
                                              a P.1853 weather trace (weather.py) and the site's
                                              annual statistics beside the trace's
satlab trace import-modem-log LOG.csv -o FILE a modem's Es/N0 or MODCOD log as a trace (modemlog.py)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from satlab import linkmodel

COMMANDS = ("budget", "trace")
console = Console(stderr=True, soft_wrap=True)  # one error per line, never wrapped


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("budget", help="a scenario's link budget (link_budget section) as a table")
    p.add_argument("scenario")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    t = sub.add_parser("trace", help="attenuation traces: synthesise weather, import modem logs")
    ts = t.add_subparsers(dest="trace_cmd", required=True)
    s = ts.add_parser("synth", help="ITU-R P.1853 weather trace for a site (emulator format)")
    s.add_argument("--lat", type=float, required=True, help="station latitude (deg)")
    s.add_argument("--lon", type=float, required=True, help="station longitude (deg, east +)")
    s.add_argument("--freq", "--freq-ghz", type=float, required=True, help="GHz, 4-55")
    s.add_argument("--elevation", "--elevation-deg", type=float, required=True, help="deg, 5-90")
    s.add_argument("--duration", "--duration-s", type=float, required=True, help="seconds")
    s.add_argument("--seed", type=int, required=True)
    s.add_argument(
        "--step", "--step-ms", type=int, default=1000, help="tick in ms (= attenuation.tick_ms)"
    )
    s.add_argument(
        "--model",
        choices=("independent", "combined"),
        default="independent",
        help="independent: rain (+ --clouds, --scintillation) summed; combined: P.1853-2 "
        "section 3 (itur; whole-second steps, <= 86400 s, ~10 s and ~1.2 GB)",
    )
    s.add_argument("--clouds", action="store_true", help="add P.1853 cloud attenuation")
    s.add_argument("--scintillation", action="store_true", help="add P.1853 scintillation")
    s.add_argument("--antenna-diameter-m", type=float, default=1.2, help="for scintillation")
    s.add_argument("--tau-deg", type=float, default=45.0, help="polarisation tilt (45 circular)")
    s.add_argument("--hs-km", type=float, default=None, help="site height (default P.1511)")
    s.add_argument("-o", "--output", required=True, help="trace file ('-' for stdout)")
    m = ts.add_parser("import-modem-log", help="a modem's Es/N0 or MODCOD CSV log as a trace")
    m.add_argument("log", help="CSV: time_s (or time, ISO 8601) and esn0_db (or modcod)")
    m.add_argument("--step", "--step-ms", type=int, default=100, help="tick in ms")
    m.add_argument("--max-gap-s", type=float, default=10.0, help="longest gap between samples")
    m.add_argument("--uplink-db", type=float, default=60.0, help="uplink clear-sky C/N to set")
    m.add_argument(
        "--clear-sky-db",
        type=float,
        default=None,
        help="downlink clear sky (default: "
        "the log's best, so the trace's least attenuation is 0 dB)",
    )
    m.add_argument("--margin-db", type=float, default=0.0, help="ACM margin (modcod logs)")
    m.add_argument("--modcod-table", default=None, help="MODCOD table file (modcod logs)")
    m.add_argument(
        "--modcod-set",
        choices=("dvbs2", "dvbs2x"),
        default="dvbs2",
        help="embedded MODCOD table of a modcod log (as the link's modcod_set)",
    )
    m.add_argument("-o", "--output", required=True, help="trace file ('-' for stdout)")


def _write(text: str, output: str) -> None:
    if output == "-":
        sys.stdout.write(text)
    else:
        Path(output).write_text(text)


def cmd_budget(args: argparse.Namespace) -> int:
    import json

    from satlab import linkbudget
    from satlab.scenario import ScenarioError, load_scenario

    try:
        sc = load_scenario(Path(args.scenario))
    except ScenarioError as err:
        console.print(
            f"[red]scenario {escape(args.scenario)} is not valid:[/red]\n{escape(str(err))}"
        )
        return 2
    if sc.link_budget is None:
        console.print(f"[red]scenario {escape(args.scenario)} has no link_budget section[/red]")
        return 2
    rows = linkbudget.table(sc.link_budget, sc.link)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    out = Console()
    t = Table(title=f"{sc.name}: link budget (availability {rows['availability_pct']:g} %)")
    rows_spec = [
        ("station", "station"),
        ("frequency GHz", "frequency_ghz"),
        ("elevation deg", "elevation_deg"),
        ("slant range km", "slant_range_km"),
        ("EIRP dBW", "eirp_dbw"),
        ("- free-space loss dB", "free_space_loss_db"),
        ("- gases (median) dB", "gas_db"),
        ("- other losses dB", "other_losses_db"),
        ("+ G/T dB/K", "g_over_t_db_per_k"),
        ("- Boltzmann dBW/K/Hz", "boltzmann_dbw_per_k_hz"),
        ("- bandwidth (Rs) dBHz", "bandwidth_db_hz"),
        ("= C/N clear sky dB", "clear_sky_db"),
        (f"rain at {100 - rows['availability_pct']:.3g} % dB (P.618)", "rain_db"),
        ("atmosphere at it dB", "atmosphere_db"),
        ("C/N at availability dB", "availability_db"),
    ]
    t.add_column("")
    for h in rows["hops"]:
        t.add_column(f"{h['direction']} {h['hop']}", justify="right")
    for label, key in rows_spec:
        cells = [label]
        for h in rows["hops"]:
            v = h[key]
            if isinstance(v, str):
                cells.append(v)
            elif key == "slant_range_km":
                cells.append(f"{v:.1f}")
            else:
                cells.append(f"{v:.2f}")
        t.add_row(*cells)
    out.print(t)
    for d in rows["directions"]:
        out.print(
            f"{d['direction']}: Es/N0 {d['clear_sky_esn0_db']:.2f} dB clear sky, "
            f"{d['availability_esn0_db']:.2f} dB at {rows['availability_pct']:g} % "
            "(both hops faded at once)"
        )
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    from satlab import weather

    site = weather.Site(
        args.lat,
        args.lon,
        args.freq,
        args.elevation,
        args.tau_deg,
        args.hs_km,
        args.antenna_diameter_m,
    )
    try:
        s = weather.synthesize(
            site,
            args.duration,
            args.step,
            args.seed,
            args.clouds,
            args.scintillation,
            model=args.model,
        )
    except ValueError as err:
        console.print(f"[red]{escape(str(err))}[/red]")
        return 2
    _write(s.text(), args.output)
    st = weather.statistics(s)
    t = Table(title="annual statistics of the site (ITU-R) beside the trace's")
    columns = ["exceeded % of the time", "P.618 rain dB", "trace rain dB", "trace total dB"]
    if s.model == "combined":
        columns.append("P.618 total - median gases dB")
    for c in columns:
        t.add_column(c, justify="right")
    for r in st["exceedances"]:
        cells = [f"{r[k]:.2f}" for k in ("site_rain_db", "trace_rain_db", "trace_total_db")]
        if r["site_total_db"] is not None:
            cells.append(f"{r['site_total_db']:.2f}")
        t.add_row(f"{r['p_pct']:g}", *cells)
    console.print(t)
    console.print(
        f"P.837 R0.01 {st['rain_rate_001_mm_h']:.1f} mm/h, rain {st['p_rain_pct']:.2f} % of the "
        f"year; trace: {st['trace_duration_s']:g} s, in rain {st['trace_rain_pct']:.2f} % of "
        f"ticks, max {st['trace_max_db']:.2f} dB, {st['clamped_ticks']} tick(s) clamped at "
        f"{weather.MAX_TRACE_DB:g} dB (outage)"
    )
    if args.output != "-":
        console.print(f"wrote {args.output}: {len(s.values_db)} ticks of {args.step} ms")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from satlab import modemlog

    try:
        table = (
            modemlog.read_modcod_table(Path(args.modcod_table).read_text())
            if args.modcod_table
            else None
        )
        log = modemlog.parse(
            Path(args.log).read_text(), args.margin_db, table, args.max_gap_s, args.modcod_set
        )
        imp = modemlog.to_trace(log, args.step, args.clear_sky_db, args.uplink_db)
    except (modemlog.LogError, OSError) as err:
        console.print(f"[red]{escape(args.log)}: {escape(str(err))}[/red]")
        return 2
    _write(imp.text(), args.output)
    console.print(
        f"{len(imp.values_db)} ticks of {imp.step_ms} ms; set downlink.clear_sky_db: "
        f"{imp.clear_sky_db:.4f}, uplink.clear_sky_db: {imp.uplink_db:g}, "
        f"attenuation.tick_ms: {imp.step_ms}"
    )
    return 0


def dispatch(args: argparse.Namespace) -> int:
    # The trace commands ask the Rust link model (satlab.linkmodel): when it cannot answer
    # (binary missing, timed out, killed), one line saying so, the exit status of a refused input.
    try:
        if args.cmd == "budget":
            return cmd_budget(args)
        if args.trace_cmd == "synth":
            return cmd_synth(args)
        return cmd_import(args)
    except linkmodel.LinkModelUnavailable as err:
        console.print(f"[red]the link model is unavailable: {escape(str(err))}[/red]")
        return 2
