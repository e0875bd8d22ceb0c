"""Runs of a test two at a time, each on its own testbed, as `satlab reproduce --local --jobs 2`
runs them (satlab/reproduce/local.py): the comparisons here are low-rate flows (a few Mbit/s),
for which runs side by side were measured to give the same goodput as runs one at a time
(`make bench-reproduce-parallel`), and they are most of the testbed tier's time."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from satlab.scenario import RunSpec, Scenario
from satlab.testbed.runner import run_one

JOBS = 2


def run_side_by_side(runs: list[tuple[Scenario, RunSpec]]) -> list[dict[str, Any]]:
    """Every (scenario, run) pair, JOBS at a time; the results in the order given, each checked
    to have finished ok."""
    with ThreadPoolExecutor(max_workers=JOBS, thread_name_prefix="testrun") as pool:
        results = list(pool.map(lambda r: run_one(*r), runs))
    for res in results:
        assert res["status"] == "ok", res.get("error")
    return results
