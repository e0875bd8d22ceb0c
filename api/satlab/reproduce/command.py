"""`satlab reproduce`: run the reproduction scenarios and write the report.

    satlab reproduce [--subset ci|full] [--paper NAME] [--claim ID] [--local | --service URL]
                     [--jobs N] [--results DIR] [--token T] [--out DIR] [--docs FILE]
                     [--report-only]

Selects the repository's reproduction scenarios (reproduce/selection.py), prints the number of
runs and an estimated duration (each run's duration_s + SETUP_S of set-up and teardown), runs
them on the service (default SATLAB_URL; each submitted with the idempotency key
reproduce-COMMIT-SUBSET-NAME and waited for with a progress bar) or locally (`--local`, root,
results/reproduce-COMMIT/ or --results, resumed run by run, `--jobs` runs of a scenario at a
time, each on its own testbed), then writes the commit's report, gathered from
every part run for it so far: OUT/report.json, OUT/report.html (default
reports/reproduction-COMMIT/) and the docs page (default docs/reproductions.md).
`--report-only` runs nothing and re-renders from what is stored. Exit status: 0 report written
and every run succeeded (whatever the verdicts: a claim that does not hold is a finding), 1 a run
failed, 2 refused (selection, scenario, service).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from satlab import remote_cli
from satlab.linkcheck import LinkConfigError
from satlab.progress import run_progress
from satlab.reproduce import local, report
from satlab.reproduce.selection import (
    PAPERS,
    Entry,
    SelectionError,
    Subset,
    load_entries,
    select,
)
from satlab.reproduce.service import key
from satlab.reproduce.version import commit as repo_commit
from satlab.rest_client import Client, CliError, wait
from satlab.scenario import ScenarioError, expand_runs
from satlab.settings import REPO_ROOT

console = Console(stderr=True)
# Set-up and teardown per run on top of its duration_s (testbed, agents, emulator, gateways, scheme
# loading, teardown): wall_s - duration_s of the 22 runs of `satlab reproduce --subset ci --local`
# on the 2-core test machine (load average 10-17 from other work) came to 14.8 s on average: 22-29 s
# for configurations with edge gateways and eBPF schemes, 17-20 s for the withholding receiver,
# -7 to +5 s where the flows end before duration_s. The whole run took 887 s against 824 s
# estimated with 12 s; 15 s gives 890 s.
SETUP_S = 15.0
# Runs of one scenario side by side (`--jobs`): each is a testbed of several namespaces, an
# emulator and agents; more than this on a small machine measures the machine, not the scheme.
MAX_JOBS = 8


def add_parser(sub: Any) -> None:
    p = sub.add_parser("reproduce", help="run the paper reproductions and write the report")
    p.add_argument("--subset", choices=["ci", "full"], default="full")
    p.add_argument("--paper", choices=PAPERS)
    p.add_argument("--claim", metavar="ID", help="only the scenario holding this expectation")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--local", action="store_true", help="run here (root) instead of a service")
    where.add_argument(
        "--service",
        metavar="URL",
        default=os.environ.get("SATLAB_URL", "http://127.0.0.1:8700"),
        help="the SatLab service (default SATLAB_URL or http://127.0.0.1:8700)",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=1,
        help=f"--local: runs of a scenario at a time, 1-{MAX_JOBS} (default 1; see "
        "tests/bench/reproduce_parallel.py before trusting figures measured side by side)",
    )
    p.add_argument(
        "--results", help="--local: where runs are kept (default results/reproduce-COMMIT)"
    )
    p.add_argument("--token", default=os.environ.get("SATLAB_TOKEN"))
    p.add_argument("--out", help="report directory (default reports/reproduction-COMMIT)")
    p.add_argument(
        "--docs",
        default=str(REPO_ROOT / "docs" / "reproductions.md"),
        help="the generated docs page ('' for none)",
    )
    p.add_argument("--report-only", action="store_true", help="run nothing, re-render the report")


def _hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def plan(entries: list[Entry], subset: Subset) -> tuple[int, float]:
    """(runs, estimated seconds) of the selection."""
    runs, total = 0, 0.0
    for e in entries:
        sc = e.scenario(subset)
        n = len(expand_runs(sc))
        runs += n
        total += n * (sc.duration_s + SETUP_S)
    return runs, total


def run_local(entries: list[Entry], subset: Subset, root: Path, commit: str, jobs: int) -> None:
    if os.geteuid() != 0:
        raise CliError("--local builds network namespaces: run it as root")
    with run_progress(console) as bar:
        tasks: dict[str, Any] = {}

        def show(label: str, fraction: float, message: str) -> None:
            if label not in tasks:
                tasks[label] = bar.add_task(label, total=1.0, info="")
            bar.update(tasks[label], completed=fraction, info=message[:60])

        for e in entries:
            local.run_entry(e, subset, root, commit, show, jobs)


def _library_has(client: Client, name: str, text: str) -> bool:
    """Whether the service's scenario `name` already has this text as its latest revision (then
    it is used as it is, whoever owns it: the library's copy of a repository file)."""
    page = client.call("GET", "/api/scenarios", params={"name": name, "limit": 500})
    for sc in page["items"]:
        if sc["name"] == name:
            return bool(client.call("GET", f"/api/scenarios/{sc['id']}/yaml") == text)
    return False


def submit_service(client: Client, entries: list[Entry], subset: Subset, commit: str) -> list[int]:
    """Uploads, imports and submits each scenario (found again by its key); the experiment ids."""
    ids = []
    for e in entries:
        name, text = e.service_yaml(subset)
        remote_cli.upload_files(client, e.path, e.data)
        if not _library_has(client, name, text):
            client.call(
                "POST",
                "/api/scenarios/import",
                content=text.encode(),
                headers={"Content-Type": "application/yaml"},
            )
        sub = client.call(
            "POST",
            "/api/experiments",
            json={"scenario_name": name},
            headers={"Idempotency-Key": key(commit, subset, e.name)},
        )
        exp = sub["experiment"]
        verb = "submitted" if sub["created"] else "found (submitted before for this commit)"
        console.print(f"{e.name}: experiment {exp['id']} {verb}")
        ids.append(int(exp["id"]))
    return ids


def write(rep: dict[str, Any], out: Path, docs: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(rep, indent=1))
    (out / "report.html").write_text(report.render_html(rep))
    console.print(f"report: {out / 'report.json'}, {out / 'report.html'}")
    if docs:
        Path(docs).write_text(report.render_markdown(rep))
        console.print(f"docs page: {docs}")


def main(args: argparse.Namespace) -> int:
    started = time.monotonic()
    commit = repo_commit()
    try:
        if not 1 <= args.jobs <= MAX_JOBS:
            raise CliError(f"--jobs: {args.jobs} is outside 1-{MAX_JOBS}")
        if not args.local and (args.jobs != 1 or args.results):
            raise CliError("--jobs and --results are for --local runs")
        entries = (
            [] if args.report_only else select(load_entries(), args.subset, args.paper, args.claim)
        )
        if entries:
            runs, estimate = plan(entries, args.subset)
            at_once = f", {args.jobs} at a time" if args.jobs > 1 else ""
            console.print(
                f"commit {commit}, subset {args.subset}: {len(entries)} scenarios, {runs} runs, "
                f"estimated {_hms(estimate)} run one after another{at_once} (duration_s + "
                f"{SETUP_S:g} s set-up per run; runs kept from an earlier start of this commit "
                "take no time)"
            )
        if args.local:
            root = Path(args.results) if args.results else local.default_root(commit)
            if entries:
                run_local(entries, args.subset, root, commit, args.jobs)
            parts = local.collect(root)
            if not parts:
                raise CliError(f"nothing run for commit {commit} yet under {root}")
            rep = report.assemble(parts, commit)
        else:
            client = Client(args.service, args.token)
            for exp_id in submit_service(client, entries, args.subset, commit):
                wait(client, exp_id)
            rep = client.call("GET", "/api/reproductions/latest", params={"commit": commit})
    except (SelectionError, ScenarioError, LinkConfigError) as err:
        console.print(f"[red]{err}[/red]")
        return 2
    except CliError as err:
        console.print(f"[red]{err}[/red]")
        return err.code
    write(rep, Path(args.out or f"reports/reproduction-{commit}"), args.docs)
    s = rep["summary"]
    console.print(
        f"{s['total']} claims: {s['holds']} hold, {s['direction']} hold in direction only, "
        f"{s['fails']} do not hold, {s['no-data']} without data; total time "
        f"{_hms(time.monotonic() - started)}"
    )
    failed = [p["scenario"] for p in rep["parts"] if p["state"] != "succeeded"]
    if failed:
        console.print(f"[red]scenarios with failed or unfinished runs: {', '.join(failed)}[/red]")
    return 1 if failed else 0
