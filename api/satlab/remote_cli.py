"""The CI-facing `satlab` commands: talk to a SatLab service over REST.

    satlab submit FILE [--sweep PATH=V1,V2,..] [--repetitions N] [--config NAME ..] [--priority N]
                       [--idempotency-key KEY] [--wait] [--expect EXPR ..] [--baseline NAME]
                       [--junit FILE]
    satlab wait ID [--expect EXPR ..] [--junit FILE]
    satlab list [--state S] [--scenario NAME] [--limit N]
    satlab show ID
    satlab compare ID [--baseline NAME] [--metric M ..]
    satlab export ID [--format csv|json] [--what runs|aggregate] [-o FILE]
    satlab token create --role ROLE --name NAME [--scope PATTERN ..] [--rate-limit N]
                        [--expires-days D]
    satlab token list | satlab token revoke ID        (these three write the database directly)
    satlab migrate                                    (Alembic upgrade head)
    satlab library sync [--root DIR]                  (the repository's scenarios into the
                                                       service's library: service/library.py)
    satlab worker [--once]

The service is SATLAB_URL (default http://127.0.0.1:8700), the token SATLAB_TOKEN (or --url,
--token). Exit status: 0 all runs succeeded and every expectation held; 1 a run failed or an
expectation did not hold; 2 the request was refused (invalid scenario, auth, ...).

Expectations (`--expect`, evaluated on the comparison once the experiment has ended; the grammar
is satlab.expectations'):

    FUNC(METRIC, CONFIG[/BASELINE][, sweep=VALUE]) OP NUMBER
    FUNC: mean | ratio | ratio_low | ratio_high   (ratio_* are the 95% Fieller bounds)
    OP:   >= > <= < == !=
    e.g.  ratio(goodput_bps, bbr/cubic, sweep=1e-6) >= 1.2
          ratio(goodput_bps, bbr/cubic, sweep=[1e-6, false]) >= 1.2   (a two-dimensional sweep)
          mean(completion_s, bbr) < 30

Without `sweep=` it must hold at every sweep point. METRIC is one of goodput_bps,
total_goodput_bps, completion_s, mean_fct_s, retransmissions, jain_fairness.
`submit --wait` and `wait` also judge the scenario file's own `expectations:` (GET
/api/experiments/ID/expectations); every one must hold (`direction`, `fails` and `no-data` fail).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from satlab.ci_verdicts import (
    check_expectations,
    junit,
    parse_expectation,
    print_verdicts,
    sweep_text,
)
from satlab.db_admin import cmd_library, cmd_token, migrate
from satlab.rest_client import Client, CliError, wait
from satlab.scenario import link_file_kind, link_file_refs
from satlab.settings import REPO_ROOT

console = Console(stderr=True)
out = Console()
# -- submit --


def upload_files(client: Client, scenario: Path, data: dict[str, Any]) -> None:
    seen = set()
    for where, key, ref in link_file_refs(data.get("link") or {}):
        if ref in seen:
            continue
        seen.add(ref)
        if key in ("pattern_file", "record_file"):
            raise CliError(f"{where}: error-pattern files cannot be uploaded yet ({ref})")
        path = Path(ref) if Path(ref).is_absolute() else scenario.parent / ref
        try:
            content = path.read_bytes()
        except OSError as err:
            raise CliError(f"{where}: cannot read {path}: {err.strerror}") from None
        f = client.call(
            "POST",
            "/api/files",
            params={"name": ref, "kind": link_file_kind(where, key)},
            content=content,
        )
        console.print(f"uploaded {ref} ({f['kind']}, {f['size_bytes']} bytes, id {f['id']})")


def parse_sweep(text: str) -> dict[str, Any]:
    path, sep, values = text.partition("=")
    if not sep or not values:
        raise CliError(f"--sweep {text!r}: expected PATH=V1,V2,...")

    def value(v: str) -> bool | float | int | str:
        for conv in (int, float):
            try:
                return conv(v)
            except ValueError:
                pass
        return {"true": True, "false": False}.get(v.lower(), v)

    return {"path": path.strip(), "values": [value(v.strip()) for v in values.split(",")]}


def cmd_submit(client: Client, args: argparse.Namespace) -> int:
    path = Path(args.file)
    try:
        text = path.read_text()
        data = yaml.safe_load(text)
    except (OSError, yaml.YAMLError) as err:
        raise CliError(f"{path}: {err}") from None
    if not isinstance(data, dict):
        raise CliError(f"{path}: not a scenario (a YAML mapping)")
    upload_files(client, path, data)
    sc = client.call(
        "POST",
        "/api/scenarios/import",
        content=text.encode(),
        headers={"Content-Type": "application/yaml"},
    )
    console.print(f"scenario {sc['name']} (id {sc['id']}) revision {sc['latest']['number']}")
    body: dict[str, Any] = {"scenario_id": sc["id"], "priority": args.priority}
    if args.sweep:
        dims = [parse_sweep(t) for t in args.sweep]
        body["sweep"] = dims[0] if len(dims) == 1 else dims
    if args.repetitions:
        body["repetitions"] = args.repetitions
    if args.config:
        body["configurations"] = args.config
    key = args.idempotency_key or os.environ.get("SATLAB_IDEMPOTENCY_KEY")
    headers = {"Idempotency-Key": key} if key else {}
    sub = client.call("POST", "/api/experiments", json=body, headers=headers)
    exp, est = sub["experiment"], sub["estimate"]
    verb = "submitted" if sub["created"] else "already submitted (same idempotency key)"
    console.print(
        f"experiment {exp['id']} {verb}: {est['runs']} runs, estimated "
        f"{est['total_s'] / 60:.1f} min ({est['per_run_s']:.0f} s per run)"
    )
    print(exp["id"])
    if not args.wait:
        return 0
    return wait_and_check(client, exp["id"], args)


# -- wait and judge --


def wait_and_check(client: Client, exp_id: int, args: argparse.Namespace) -> int:
    for t in args.expect or []:
        parse_expectation(t)  # a typo fails before the wait, not after
    exp = wait(client, exp_id)
    console.print(f"experiment {exp_id} {exp['state']}")
    show_comparison(client, exp_id, args.baseline, None)
    verdicts = check_expectations(client, exp_id, args.expect or [])
    for e, ok, note in verdicts:
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {e.text}: {note}")
    claims: list[dict[str, Any]] = client.call("GET", f"/api/experiments/{exp_id}/expectations")
    print_verdicts(claims)
    if args.junit:
        junit(exp, verdicts, claims, Path(args.junit))
        console.print(f"JUnit XML written to {args.junit}")
    failed_runs = [r for r in exp["runs"] or [] if r["state"] != "succeeded"]
    for r in failed_runs:
        console.print(f"[red]run {r['id']} {r['configuration']} {r['state']}:[/] {r.get('error')}")
    held = all(ok for _, ok, _ in verdicts) and all(c["verdict"] == "holds" for c in claims)
    return 1 if failed_runs or not held else 0


# -- list, show, compare, export --


def cmd_list(client: Client, args: argparse.Namespace) -> int:
    params = {"limit": args.limit}
    if args.state:
        params["state"] = args.state
    if args.scenario:
        params["scenario"] = args.scenario
    page = client.call("GET", "/api/experiments", params=params)
    t = Table(title=f"experiments ({page['total']} in all)")
    for c in ("id", "scenario", "state", "runs", "estimate", "created"):
        t.add_column(c)
    for e in page["items"]:
        runs = ", ".join(f"{k} {v}" for k, v in sorted(e["runs_by_state"].items()))
        t.add_row(
            str(e["id"]),
            e["scenario_name"],
            e["state"],
            runs,
            f"{e['estimate_s'] / 60:.1f} min",
            e["created_at"][:19],
        )
    out.print(t)
    return 0


def cmd_show(client: Client, args: argparse.Namespace) -> int:
    e = client.call("GET", f"/api/experiments/{args.id}")
    out.print(
        f"experiment {e['id']}: {e['scenario_name']} {e['state']}, priority {e['priority']}, "
        f"estimate {e['estimate_s'] / 60:.1f} min"
    )
    t = Table()
    for c in (
        "run",
        "configuration",
        "sweep",
        "rep",
        "state",
        "attempt",
        "goodput Mbit/s",
        "error",
    ):
        t.add_column(c)
    for r in e["runs"] or []:
        g = (r["summary"] or {}).get("goodput_bps")
        t.add_row(
            str(r["id"]),
            r["configuration"],
            sweep_text(r["sweep_value"]),
            str(r["repetition"]),
            r["state"],
            str(r["attempt"]),
            "" if g is None else f"{g / 1e6:.2f}",
            (r["error"] or "")[:60],
        )
    out.print(t)
    return 0


def _fmt(v: float | None, scale: float = 1.0) -> str:
    return "-" if v is None else f"{v / scale:.3g}"


def _unit(metric: str) -> tuple[str, float]:
    """Column title and scale: rates print in Mbit/s, everything else as stored."""
    if metric.endswith("_bps"):
        return metric.removesuffix("_bps") + " Mbit/s", 1e6
    return metric, 1.0


def show_comparison(
    client: Client, exp_id: int, baseline: str | None, metrics: list[str] | None
) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if baseline:
        params["baseline"] = baseline
    if metrics:
        params["metric"] = metrics
    c = client.call("GET", f"/api/experiments/{exp_id}/comparison", params=params)
    t = Table(title=f"experiment {exp_id} against {c['baseline']} (ratio of means, 95% CI)")
    t.add_column("sweep")
    t.add_column("configuration")
    for m in c["metrics"]:
        t.add_column(_unit(m)[0], justify="right")
    for p in c["points"]:
        for entry in p["configurations"]:
            cells = []
            for m in c["metrics"]:
                x = entry["metrics"][m]
                scale = _unit(m)[1]
                cell = f"{_fmt(x['mean'], scale)}"
                if x["half_width"] is not None:
                    cell += f" ± {_fmt(x['half_width'], scale)}"
                if entry["configuration"] != c["baseline"] and x["ratio"] is not None:
                    cell += f"  x{x['ratio']:.3g}"
                    if x["low"] is not None:
                        cell += f" [{x['low']:.3g}, {x['high']:.3g}]"
                cells.append(cell)
            sv = sweep_text(p["sweep_value"])
            t.add_row(sv, entry["configuration"], *cells)
    out.print(t)
    return dict(c)


def cmd_compare(client: Client, args: argparse.Namespace) -> int:
    show_comparison(
        client,
        args.id,
        args.baseline,
        args.metric or ["goodput_bps", "completion_s", "retransmissions"],
    )
    return 0


def cmd_export(client: Client, args: argparse.Namespace) -> int:
    r = client.http.get(
        f"/api/experiments/{args.id}/export", params={"format": args.format, "what": args.what}
    )
    if r.status_code >= 400:
        raise CliError(f"export: {r.status_code} {r.text}")
    if args.output:
        Path(args.output).write_bytes(r.content)
        console.print(f"written to {args.output}")
    else:
        sys.stdout.write(r.text)
    return 0


def cmd_report(client: Client, args: argparse.Namespace) -> int:
    r = client.http.get(f"/api/experiments/{args.id}/report")
    if r.status_code >= 400:
        raise CliError(f"report: {r.status_code} {r.text}")
    out = Path(args.output or f"satlab-experiment-{args.id}.html")
    out.write_bytes(r.content)
    console.print(f"report written to {out} ({len(r.content) // 1024} KiB, opens offline)")
    return 0


def cmd_wait(client: Client, args: argparse.Namespace) -> int:
    return wait_and_check(client, args.id, args)


# -- wiring into satlab.cli --


def add_parsers(sub: Any) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--url", default=os.environ.get("SATLAB_URL", "http://127.0.0.1:8700"))
        p.add_argument("--token", default=os.environ.get("SATLAB_TOKEN"))

    def gates(p: argparse.ArgumentParser) -> None:
        p.add_argument("--expect", action="append", metavar="EXPR", help="a CI gate (see docs)")
        p.add_argument("--baseline", help="baseline configuration of the printed comparison")
        p.add_argument("--junit", metavar="FILE", help="write JUnit XML (runs + expectations)")

    p = sub.add_parser("submit", help="submit a scenario file to a SatLab service")
    common(p)
    p.add_argument("file")
    p.add_argument(
        "--sweep",
        action="append",
        metavar="PATH=V1,V2",
        help="replace the scenario's sweep (twice: two dimensions)",
    )
    p.add_argument("--repetitions", type=int)
    p.add_argument("--config", action="append", help="only this configuration (repeatable)")
    p.add_argument("--priority", type=int, default=0)
    p.add_argument("--idempotency-key", help="a CI retry with the same key submits nothing new")
    p.add_argument("--wait", action="store_true", help="wait with a progress bar, then compare")
    gates(p)
    p = sub.add_parser("wait", help="wait for an experiment, compare, check expectations")
    common(p)
    p.add_argument("id", type=int)
    gates(p)
    p = sub.add_parser("list", help="list experiments on the service")
    common(p)
    p.add_argument("--state")
    p.add_argument("--scenario")
    p.add_argument("--limit", type=int, default=20)
    p = sub.add_parser("show", help="show an experiment and its runs")
    common(p)
    p.add_argument("id", type=int)
    p = sub.add_parser("compare", help="compare an experiment's configurations to a baseline")
    common(p)
    p.add_argument("id", type=int)
    p.add_argument("--baseline")
    p.add_argument("--metric", action="append")
    p = sub.add_parser("export", help="export an experiment's runs or aggregates")
    common(p)
    p.add_argument("id", type=int)
    p.add_argument("--format", choices=["csv", "json"], default="csv")
    p.add_argument("--what", choices=["runs", "aggregate"], default="runs")
    p.add_argument("-o", "--output")
    p = sub.add_parser("report", help="an experiment's report: one self-contained HTML file")
    common(p)
    p.add_argument("id", type=int)
    p.add_argument("-o", "--output", help="file (default satlab-experiment-ID.html)")
    p = sub.add_parser("token", help="API tokens, written directly to the database (DATABASE_URL)")
    tsub = p.add_subparsers(dest="token_cmd", required=True)
    t = tsub.add_parser("create")
    t.add_argument("--name", required=True)
    t.add_argument("--role", required=True, choices=["viewer", "submitter", "admin"])
    t.add_argument("--scope", action="append", help="scenario-name pattern (repeatable)")
    t.add_argument("--rate-limit", type=int, help="requests per minute")
    t.add_argument("--expires-days", type=float)
    tsub.add_parser("list")
    t = tsub.add_parser("revoke")
    t.add_argument("id", type=int)
    sub.add_parser("migrate", help="bring the database schema up to date (Alembic)")
    p = sub.add_parser("library", help="the service's scenario library (writes the database)")
    lsub = p.add_subparsers(dest="library_cmd", required=True)
    lsub.add_parser("sync", help="import the repository's scenarios and their files").add_argument(
        "--root", default=str(REPO_ROOT), help="the repository (default: this checkout)"
    )
    p = sub.add_parser("worker", help="run an experiment worker (root)")
    p.add_argument("--once", action="store_true", help="run what is queued, then exit")


COMMANDS: dict[str, Callable[[Client, argparse.Namespace], int]] = {
    "submit": cmd_submit,
    "wait": cmd_wait,
    "list": cmd_list,
    "show": cmd_show,
    "compare": cmd_compare,
    "export": cmd_export,
    "report": cmd_report,
}


def handles(cmd: str) -> bool:
    return cmd in COMMANDS or cmd in ("token", "migrate", "worker", "library")


def dispatch(args: argparse.Namespace) -> int:
    try:
        if args.cmd == "token":
            return cmd_token(args)
        if args.cmd == "migrate":
            migrate()
            return 0
        if args.cmd == "library":
            return cmd_library(args)
        if args.cmd == "worker":
            from satlab import worker

            worker.main(["--once"] if args.once else [])
            return 0
        return COMMANDS[args.cmd](Client(args.url, args.token), args)
    except CliError as err:
        console.print(f"[red]{err}[/red]")
        return err.code
