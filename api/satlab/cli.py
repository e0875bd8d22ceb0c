"""The `satlab` command line.

satlab run SCENARIO.yaml [-o DIR]   run every configuration of a scenario on local testbeds, then
                                     judge the scenario's expectations (expectations.json)
satlab schema                        print the scenario JSON Schema
satlab sweep                         remove testbeds left by crashed runs
satlab reproduce [--subset ci|full]  run the paper reproductions, write the report (reproduce/)
satlab phy calibrate ...             DVB-S2 waveform PER(Es/N0) tables (phy/, GNU Radio + Rust)
satlab budget | trace synth | trace import-modem-log   the operator's link tools (toolkit_cli.py)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import TaskID
from rich.table import Table

from satlab import remote_cli, toolkit_cli
from satlab.agent import tlsca
from satlab.ci_verdicts import print_verdicts
from satlab.expectations import point_label
from satlab.link_backend import BackendUnavailable, check_before_testbed
from satlab.linkcheck import LinkConfigError, check_link
from satlab.opensand import cli as opensand_cli
from satlab.phy import command as phy_command
from satlab.progress import run_progress
from satlab.reproduce import command as reproduce
from satlab.scenario import (
    Scenario,
    ScenarioError,
    expand_runs,
    json_schema,
    load_scenario,
    sweep_points,
)
from satlab.service import comparisons
from satlab.service.results import aggregate_rows, headline
from satlab.stats import Estimate, mean_ci95
from satlab.testbed.runner import run_one
from satlab.testbed.testbed import sweep

console = Console()


def _stop_on_sigterm(main_pid: int) -> None:
    """SIGTERM (a CI job cancelled, `kill`) unwinds like Ctrl-C: the testbed in use is torn down
    by its context manager instead of waiting for the next run's sweeper. Forked helpers
    (pyroute2's namespace workers) inherit the handler and must still just die of it."""

    def handler(signum: int, frame: object) -> None:
        if os.getpid() != main_pid:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def cmd_run(args: argparse.Namespace) -> int:
    _stop_on_sigterm(os.getpid())
    try:
        sc = load_scenario(Path(args.scenario))
    except ScenarioError as err:
        console.print(f"[red]scenario {args.scenario} is not valid:[/red]\n{err}")
        return 2
    runs = expand_runs(sc)
    links = [json.loads(x) for x in {json.dumps(r.link, sort_keys=True) for r in runs}]
    # every link's backend first, then every link against the emulator's own check
    try:
        for link in links:
            check_before_testbed(link)
        for link in links:
            check_link(link)
    except BackendUnavailable as err:
        console.print(f"[red]scenario {args.scenario}:[/red] {err}")
        return 2
    except LinkConfigError as err:
        console.print(f"[red]scenario {args.scenario}: the emulator refuses the link:[/red]\n{err}")
        return 2
    out_dir = Path(args.output or f"results/{sc.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    out_dir.mkdir(parents=True, exist_ok=True)
    console.print(f"{sc.name}: {len(runs)} runs of {sc.duration_s:g} s; results in {out_dir}")
    results = []
    with run_progress(console) as bar:
        total = bar.add_task("all runs", total=len(runs), info="")
        for n, spec in enumerate(runs, 1):
            label = f"run {n}/{len(runs)} {spec.configuration.name}"
            if sc.sweep is not None:
                label += " " + point_label([d.path for d in sc.sweeps()], spec.sweep_value)
            task = bar.add_task(label, total=1.0, info="setting up")

            def show(fraction: float, message: str, task: TaskID = task) -> None:
                bar.update(task, completed=fraction, info=message)

            res = run_one(sc, spec, show, artifacts=out_dir / f"run-{n:03d}")
            (out_dir / f"run-{n:03d}.json").write_text(json.dumps(res))
            results.append(res)
            info = "ok" if res["status"] == "ok" else f"FAILED: {res.get('error', '')[:80]}"
            bar.update(task, completed=1.0, info=info)
            bar.update(total, advance=1)
    summary = compare(sc, results)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    print_table(sc, summary)
    failed = [r for r in results if r["status"] != "ok"]
    for r in failed:
        console.print(
            f"[red]{r['configuration']} rep {r['repetition']} failed:[/red] {r.get('error')}"
        )
    claims = judge(sc, results)
    if claims:
        (out_dir / "expectations.json").write_text(json.dumps(claims, indent=2))
        print_verdicts(claims)
    return 1 if failed or any(c["verdict"] != "holds" for c in claims) else 0


def judge(sc: Scenario, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The scenario's expectations on the local runs, with the service's aggregation and
    comparison (the same verdicts as GET /api/experiments/ID/expectations)."""
    rows = aggregate_rows(
        (
            r["configuration"],
            (r["sweep"] or {}).get("value"),
            headline(r) if r["status"] == "ok" else None,
        )
        for r in results
    )
    return comparisons.verdicts(rows, sc.model_dump(mode="json"))


def compare(sc: Scenario, results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per configuration and sweep value: the first traffic item's goodput, completion time and
    the senders' retransmissions (results.headline's), as mean and 95% interval over
    repetitions."""
    groups: dict[tuple[str, str], list[dict[str, float | None]]] = defaultdict(list)
    for r in results:
        if r["status"] == "ok":
            groups[(r["configuration"], repr((r["sweep"] or {}).get("value")))].append(headline(r))
    rows = []
    for cfg in sc.configurations:
        for v in sweep_points(sc):
            hs = groups.get((cfg.name, repr(v)), [])
            good = [g for h in hs if (g := h["goodput_bps"])]
            done = [c for h in hs if (c := h["completion_s"])]
            retx = [h["retransmissions"] or 0.0 for h in hs]
            rows.append(
                {
                    "configuration": cfg.name,
                    "sweep_value": v,
                    "runs": len(hs),
                    "goodput_bps": mean_ci95(good).__dict__,
                    "completion_s": mean_ci95(done).__dict__,
                    "retransmissions": mean_ci95(retx).__dict__,
                }
            )
    return rows


def print_table(sc: Scenario, rows: list[dict[str, Any]]) -> None:
    table = Table(title=f"{sc.name}: mean ± 95% CI over {sc.repetitions} repetition(s)")
    table.add_column("configuration")
    paths = [d.path for d in sc.sweeps()]
    if paths:
        table.add_column(", ".join(paths))
    for col in ("runs", "goodput Mbit/s", "completion s", "retransmissions"):
        table.add_column(col, justify="right")
    for row in rows:
        cells = [row["configuration"]] + ([point_label(paths, row["sweep_value"])] if paths else [])
        cells += [
            str(row["runs"]),
            Estimate(**row["goodput_bps"]).format(1e6),
            Estimate(**row["completion_s"]).format(),
            Estimate(**row["retransmissions"]).format(digits=0),
        ]
        table.add_row(*cells)
    console.print(table)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="satlab",
        description="SatLab: GEO link experiments",
        epilog="satlab export opensand SCENARIO DIR writes a scenario's link as an OpenSAND 8 "
        "configuration (satlab export opensand -h)",
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run a scenario locally on network-namespace testbeds (root)")
    p.add_argument("scenario")
    p.add_argument("-o", "--output", help="results directory (default results/NAME-TIME)")
    sub.add_parser("schema", help="print the scenario JSON Schema")
    sub.add_parser("sweep", help="remove testbeds left behind by crashed runs")
    toolkit_cli.add_parsers(sub)  # budget, trace synth, trace import-modem-log
    remote_cli.add_parsers(sub)  # submit .. report, token, migrate, library, worker
    reproduce.add_parser(sub)
    phy_command.add_parser(sub)  # phy calibrate (DVB-S2 waveform PER tables)
    tlsca.add_parser(sub)  # ca init / ca issue (hardware testbed's mutual TLS)
    opensand_cli.add_import_parser(sub)
    argv = sys.argv[1:] if argv is None else argv
    if argv[:2] == ["export", "opensand"]:  # `satlab export ID` is the service's export
        sys.exit(opensand_cli.export_main(argv[2:]))
    args = ap.parse_args(argv)
    if args.cmd == "import":
        sys.exit(opensand_cli.cmd_import(args))
    if args.cmd == "ca":
        sys.exit(tlsca.main(args))
    if args.cmd == "phy":
        sys.exit(phy_command.main(args))
    if args.cmd == "reproduce":
        if args.local:
            _stop_on_sigterm(os.getpid())
        try:
            sys.exit(reproduce.main(args))
        except KeyboardInterrupt:
            console.print("[yellow]interrupted: runs done so far are kept; run it again to resume")
            sys.exit(130)
    if args.cmd in toolkit_cli.COMMANDS:
        sys.exit(toolkit_cli.dispatch(args))
    if remote_cli.handles(args.cmd):
        sys.exit(remote_cli.dispatch(args))
    if args.cmd == "run":
        try:
            sys.exit(cmd_run(args))
        except KeyboardInterrupt:
            console.print(
                "[yellow]interrupted: the run in progress was stopped and its testbed removed"
            )
            sys.exit(130)
    elif args.cmd == "schema":
        print(json_schema())
    else:
        swept = sweep()
        print(f"removed {len(swept)} testbed(s) {' '.join(swept)}")


if __name__ == "__main__":
    main()
