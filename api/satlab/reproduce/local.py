"""Reproduction scenarios run locally (root), through the code `satlab run` uses (expand_runs,
the emulator's check of every link, testbed.runner.run_one), kept so a re-run resumes.

Layout, one directory per commit: results/reproduce-COMMIT/SUBSET/SCENARIO/ holds run-NNN.json
(the run documents, docs/run-result.md) and part.json (scenario, paper, subset, commit, the
scenario as run, times, kernel, and `jobs`: how many runs shared the machine). A run whose
document says `ok` is not run again; a failed or missing one is. When the scenario as run changed
(an edited file on the same commit), its old documents are dropped first. Every part of a
commit's directory goes into its report, whenever it was run.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from satlab import __version__
from satlab.linkcheck import check_link
from satlab.reproduce.parts import seeds, verdicts_for
from satlab.reproduce.selection import Entry, Subset
from satlab.scenario import RunSpec, expand_runs
from satlab.service.results import aggregate_rows, headline
from satlab.testbed.runner import run_one

Progress = Callable[[str, float, str], None]  # (run label, fraction, message)


def default_root(commit: str) -> Path:
    return Path("results") / f"reproduce-{commit}"


def part_dir(root: Path, subset: Subset, name: str) -> Path:
    return root / subset / name


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_entry(
    entry: Entry, subset: Subset, root: Path, commit: str, show: Progress, jobs: int = 1
) -> Path:
    """Runs what is missing of one scenario, `jobs` runs at a time (each on its own testbed);
    returns its part directory."""
    sc = entry.scenario(subset)
    spec = sc.model_dump(mode="json")
    runs = expand_runs(sc)
    for link in {json.dumps(r.link, sort_keys=True) for r in runs}:
        check_link(json.loads(link))
    out = part_dir(root, subset, entry.name)
    out.mkdir(parents=True, exist_ok=True)
    meta_file = out / "part.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else None
    if meta is not None and meta.get("spec") != spec:
        for old in out.glob("run-*.json"):
            old.unlink()  # the scenario changed since: its runs measure something else
        meta = None
    meta = meta or {
        "scenario": entry.name,
        "paper": entry.paper,
        "subset": subset,
        "commit": commit,
        "spec": spec,
        "started_at": _now(),
    }
    # Whether runs shared the machine is part of how they were measured (kept per part: the
    # largest `jobs` any start of it used).
    meta["jobs"] = max(jobs, meta.get("jobs", 1))
    meta_file.write_text(json.dumps(meta, indent=1))
    pending = []
    for n, rs in enumerate(runs, 1):
        label = f"{entry.name} run {n}/{len(runs)} {rs.configuration.name}"
        if rs.sweep_value is not None:
            label += f" {rs.sweep_value}"
        path = out / f"run-{n:03d}.json"
        if path.is_file() and json.loads(path.read_text()).get("status") == "ok":
            show(label, 1.0, "kept from an earlier run")
        else:
            pending.append((n, rs, label))

    def one(n: int, rs: RunSpec, label: str) -> None:
        def progress(fraction: float, message: str) -> None:
            show(label, fraction, message)

        res = run_one(sc, rs, progress, artifacts=out / f"run-{n:03d}")
        (out / f"run-{n:03d}.json").write_text(json.dumps(res))
        show(label, 1.0, "ok" if res["status"] == "ok" else f"FAILED: {res.get('error', '')[:80]}")

    # Threads, not processes: a run's work is in its testbed's processes (agents, emulator,
    # flows); run_one only orchestrates them, and every testbed has its own namespaces.
    with ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="reproduce") as pool:
        for f in [pool.submit(one, n, rs, label) for n, rs, label in pending]:
            f.result()
    meta["finished_at"] = _now()
    meta["kernel"] = platform.release()
    meta_file.write_text(json.dumps(meta, indent=1))
    return out


def rows_of(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The aggregate rows (service/results.py's) of run documents given in run order."""
    return aggregate_rows(
        (
            d["configuration"],
            (d.get("sweep") or {}).get("value"),
            headline(d) if d.get("status") == "ok" else None,
        )
        for d in docs
    )


def load_part(directory: Path) -> dict[str, Any]:
    """A report part from a part directory (report.assemble's input)."""
    meta = json.loads((directory / "part.json").read_text())
    spec = meta["spec"]
    # in run order: the files are named by run index (run-001 ... run-1000)
    files = sorted(directory.glob("run-*.json"), key=lambda p: int(p.stem.split("-", 1)[1]))
    docs = [json.loads(p.read_text()) for p in files]
    rows = rows_of(docs)
    kernels = {((d.get("inputs") or {}).get("versions") or {}).get("kernel") for d in docs}
    failed = sum(1 for d in docs if d.get("status") != "ok")
    state = "missing" if not docs else ("failed" if failed else "succeeded")
    return {
        "scenario": meta["scenario"],
        "paper": meta["paper"],
        "subset": meta["subset"],
        "commit": meta["commit"],
        "at": meta.get("finished_at") or meta["started_at"],
        "state": state,
        "experiment_id": None,
        "results_dir": str(directory),
        "seeds": seeds(spec),
        "kernel": next(iter(sorted(k for k in kernels if k)), meta.get("kernel")),
        "jobs": meta.get("jobs", 1),
        "satlab": __version__,
        "spec": spec,
        "rows": rows,
        "verdicts": verdicts_for(spec, rows),
    }


def collect(root: Path) -> list[dict[str, Any]]:
    """Every part under a commit's directory; of a scenario run in both subsets, the later."""
    latest: dict[str, tuple[float, Path]] = {}
    for meta in root.glob("*/*/part.json"):
        name = json.loads(meta.read_text())["scenario"]
        mtime = meta.stat().st_mtime
        if name not in latest or mtime > latest[name][0]:
            latest[name] = (mtime, meta.parent)
    return [load_part(d) for _, d in sorted(latest.values(), key=lambda x: str(x[1]))]
