"""Do reproduction runs side by side measure what they measure one after another?

`satlab reproduce --local --jobs N` runs N runs of a scenario at a time, each on its own testbed.
Before a report leans on figures measured that way, this benchmark runs one reproduction scenario
twice on this machine, first one run at a time and then N at a time (same commit, same seeds:
each run repeats its sequential twin's error pattern), and prints per configuration and sweep point
the goodput of both with their 95 % confidence intervals, the ratio of the means, and whether the
intervals overlap, plus the wall time of each pass. Nothing is asserted: the figures are the
result. Run it on an otherwise idle machine (root):

  .venv/bin/python tests/bench/reproduce_parallel.py [--scenario NAME] [--subset ci|full] [--jobs N]

Default: ipern-fig18-acm in full (6 runs of 60 s, 3 seeds a point; about 8 min one at a time), 3
at a time. Runs go to a scratch directory, not to the commit's results.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from satlab.reproduce import local
from satlab.reproduce.selection import load_entries
from satlab.reproduce.version import commit as repo_commit

METRIC = "goodput_bps"


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def one_pass(entry: Any, subset: str, root: Path, jobs: int) -> tuple[list[dict[str, Any]], float]:
    """Runs the scenario with `jobs` runs at a time; (aggregate rows, wall seconds)."""

    def show(label: str, fraction: float, message: str) -> None:
        # Only a run's end (local.run_entry's last word on it), not its progress ticks.
        if message == "ok" or message.startswith(("FAILED", "kept")):
            log(f"  {label}: {message}")

    t0 = time.monotonic()
    part = local.run_entry(entry, subset, root, repo_commit(), show, jobs)  # type: ignore[arg-type]
    wall = time.monotonic() - t0
    return local.load_part(part)["rows"], wall


def interval(m: dict[str, Any]) -> tuple[float, float] | None:
    if m["mean"] is None or m["half_width"] is None:
        return None
    return m["mean"] - m["half_width"], m["mean"] + m["half_width"]


def text(m: dict[str, Any] | None, i: tuple[float, float] | None) -> str:
    """A goodput cell: mean [95 % CI] in Mbit/s and the number of runs."""
    if not m or m["mean"] is None:
        return "no data"
    ci = f" [{i[0] / 1e6:.3f}, {i[1] / 1e6:.3f}]" if i else ""
    return f"{m['mean'] / 1e6:.3f}{ci} (n {m['n']})"


def compare(seq: list[dict[str, Any]], par: list[dict[str, Any]]) -> list[str]:
    """Table lines: one per configuration and sweep point."""
    lines = [
        "| configuration | point | one at a time, Mbit/s [95 % CI] | side by side [95 % CI] "
        "| ratio | intervals overlap |",
        "|---|---|---|---|---:|---|",
    ]
    by_key = {(r["configuration"], str(r["sweep_value"])): r for r in par}
    for r in seq:
        p = by_key.get((r["configuration"], str(r["sweep_value"])))
        a = r["metrics"][METRIC]
        b = p["metrics"][METRIC] if p else None
        ia, ib = interval(a), (interval(b) if b else None)
        overlap = (
            "n/a"
            if ia is None or ib is None
            else ("yes" if ia[0] <= ib[1] and ib[0] <= ia[1] else "NO")
        )
        ratio = (
            f"{b['mean'] / a['mean']:.3f}" if b and a["mean"] and b["mean"] is not None else "n/a"
        )

        lines.append(
            f"| {r['configuration']} | {r['sweep_value']} | {text(a, ia)} | {text(b, ib)} "
            f"| {ratio} | {overlap} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="ipern-fig18-acm")
    ap.add_argument("--subset", choices=["ci", "full"], default="full")
    ap.add_argument("--jobs", type=int, default=3, help="runs at a time in the second pass")
    ap.add_argument("--keep", action="store_true", help="keep the runs' directory")
    args = ap.parse_args(argv)
    entries = [e for e in load_entries() if e.name == args.scenario]
    if not entries:
        print(f"--scenario: no reproduction scenario named {args.scenario}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="satlab-reproduce-parallel-"))
    try:
        log(f"{args.scenario} ({args.subset}): one run at a time")
        seq, wall_seq = one_pass(entries[0], args.subset, work / "jobs-1", 1)
        log(f"{args.scenario} ({args.subset}): {args.jobs} runs at a time")
        par, wall_par = one_pass(entries[0], args.subset, work / f"jobs-{args.jobs}", args.jobs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(compare(seq, par)))
    print(
        f"\nwall time: {wall_seq:.0f} s one at a time, {wall_par:.0f} s with {args.jobs} at a time "
        f"({wall_seq / wall_par:.2f} x faster)" + (f"; runs kept in {work}" if args.keep else "")
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
