"""What a part of the report is made of, the same for a local run and an experiment: aggregate
rows (service/results.py's shape), the verdicts of the scenario's expectations on them
(satlab.expectations over service/comparisons.py's comparison), the seeds."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from satlab.expectations import ExpectationSpec, verdicts
from satlab.metrics import METRICS
from satlab.service.comparisons import compare
from satlab.service.results import headline
from satlab.stats import mean_ci95


def sweep_paths(spec: dict[str, Any]) -> list[str]:
    """The sweep paths as written: none, one (the v1 form) or two."""
    sweep = spec.get("sweep")
    if isinstance(sweep, dict):
        return [str(sweep["path"])]
    if isinstance(sweep, list):
        return [str(d["path"]) for d in sweep]
    return []


def seeds(spec: dict[str, Any]) -> list[int]:
    """Every repetition's seed (all configurations and points of a repetition share it)."""
    return [int(spec.get("seed", 1)) + r for r in range(int(spec.get("repetitions", 1)))]


def verdicts_for(spec: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The verdict of every expectation of the scenario `spec` (JSON) on its aggregate rows."""
    specs = [ExpectationSpec.model_validate(e) for e in spec.get("expectations") or []]
    configs = list(dict.fromkeys(r["configuration"] for r in rows))

    def comparison_for(baseline: str | None) -> dict[str, Any] | None:
        base = baseline or (configs[0] if configs else "")
        return compare(rows, base) if base in configs else None

    return verdicts(specs, sweep_paths(spec), comparison_for)


def aggregate_documents(
    order: list[tuple[str, Any]], docs: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """service/results.py's aggregate rows from local run documents: per (configuration, sweep
    value) in `order`, each headline metric's mean and 95 % interval over the successful runs."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for d in docs:
        groups[(d["configuration"], repr((d.get("sweep") or {}).get("value")))].append(d)
    rows = []
    for cfg, value in order:
        rs = groups[(cfg, repr(value))]
        ok = [headline(d) for d in rs if d.get("status") == "ok"]
        row: dict[str, Any] = {
            "configuration": cfg,
            "sweep_value": value,
            "runs": len(rs),
            "succeeded": len(ok),
            "metrics": {},
        }
        for m in METRICS:
            vals = [float(h[m]) for h in ok if h.get(m) is not None]  # type: ignore[arg-type]
            est = mean_ci95(vals)
            row["metrics"][m] = {
                "mean": None if est.n == 0 else est.mean,
                "half_width": est.half_width,
                "n": est.n,
                "values": vals,
            }
        rows.append(row)
    return rows
