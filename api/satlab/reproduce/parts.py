"""What a part of the report is made of, the same for a local run and an experiment: aggregate
rows (service/results.py's shape), the verdicts of the scenario's expectations on them
(satlab.expectations over service/comparisons.py's comparison), the seeds."""

from __future__ import annotations

from typing import Any

from satlab.expectations import ExpectationSpec, verdicts
from satlab.service.comparisons import compare


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
