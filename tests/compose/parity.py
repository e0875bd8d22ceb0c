"""Backend parity: do repeated runs of one configuration on two testbed backends (namespaces,
containers) measure the same thing? Each metric's repetitions on each backend give a mean and a 95 %
confidence interval (Student's t, the repetitions being independent runs with different seeds);
the backends agree on a metric when their two intervals overlap. Standard library only, like
check_experiment.py, so the compose smoke test runs it with any python3.

    python3 tests/compose/parity.py URL TOKEN SCENARIO NS_RESULTS [--timeout S]
runs SCENARIO through the API at URL (the compose testbed), reads the namespace testbed's results
of the same scenario from NS_RESULTS (`satlab run SCENARIO -o NS_RESULTS`), prints the table and
exits non-zero when a metric disagrees.

Metrics of one run's result document (GET /api/runs/ID/result, or `satlab run`'s result):
  goodput_bps                 the first flow's goodput
  loss_corruption, loss_congestion   the sending host's scheme's losses by cause (its counters)
  notices                     notices the sender's scheme accepted (BETEN) or CETEN options it
                              parsed from the receiver's ACKs
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..10); past 10, 1.96 bounds it
# within 15 %: a parity test runs a handful of repetitions, never that many.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
T95[10] = 2.228


def interval(values: list[float], count: bool = False) -> tuple[float, float]:
    """(mean, half-width of its 95 % confidence interval); needs two values at least. For a
    `count` (losses, notices) the standard deviation is taken as at least the Poisson one,
    sqrt(mean): three runs that happen to count 3 losses each do not make a zero-width interval."""
    if len(values) < 2:
        raise ValueError(f"repetitions: {len(values)}, a confidence interval needs 2 at least")
    df = len(values) - 1
    t = T95.get(df, 1.96)
    mean, sd = statistics.fmean(values), statistics.stdev(values)
    if count:
        sd = max(sd, math.sqrt(max(mean, 0.0)))
    return mean, t * sd / math.sqrt(len(values))


def agree(a: list[float], b: list[float], count: bool = False) -> bool:
    """Whether the two samples' 95 % confidence intervals overlap."""
    (ma, ha), (mb, hb) = interval(a, count), interval(b, count)
    return abs(ma - mb) <= ha + hb


def metrics(result: dict[str, Any], sender: str = "srv1") -> dict[str, float]:
    """The compared metrics of one run's result document (module docstring); `sender` is the
    host whose scheme counters count (srv1 in a download)."""
    out = {"goodput_bps": float(result["flows"][0]["goodput_bps"])}
    for entry in ((result.get("endhosts") or {}).get(sender) or {}).values():
        st = entry.get("stats") or {}
        for cause in ("loss_corruption", "loss_congestion"):
            out[cause] = out.get(cause, 0.0) + st.get(cause, 0)
        out["notices"] = out.get("notices", 0.0) + st.get("accepted", st.get("options_parsed", 0))
    return out


def compare(
    left: dict[str, list[dict[str, float]]], right: dict[str, list[dict[str, float]]]
) -> list[dict[str, Any]]:
    """One row per (configuration, metric): each backend's mean and half-width, and whether
    they agree. `left`/`right`: configuration -> each repetition's metrics(); a configuration or
    a metric one side lacks (a scheme that printed no counters) is an error naming it."""
    if set(left) != set(right):
        raise ValueError(f"configurations: {sorted(left)} on one side, {sorted(right)} the other")
    rows = []
    for conf in sorted(left):
        runs = left[conf] + right[conf]
        names = sorted(set.union(*(set(m) for m in runs)))
        for name in names:
            if any(name not in m for m in runs):
                raise ValueError(f"{conf}: {name} missing from a run's result")
            a = [m[name] for m in left[conf]]
            b = [m[name] for m in right[conf]]
            count = name != "goodput_bps"
            (ma, ha), (mb, hb) = interval(a, count), interval(b, count)
            rows.append(
                {
                    "configuration": conf,
                    "metric": name,
                    "left": (ma, ha),
                    "right": (mb, hb),
                    "agree": agree(a, b, count),
                }
            )
    return rows


def table(rows: list[dict[str, Any]], left: str = "namespaces", right: str = "containers") -> str:
    """The rows as a Markdown table (mean ± 95 % half-width), for the test's log and the notes."""
    lines = [f"| configuration | metric | {left} | {right} | agree |", "|---|---|---|---|---|"]
    for r in rows:
        (ma, ha), (mb, hb) = r["left"], r["right"]
        lines.append(
            f"| {r['configuration']} | {r['metric']} | {ma:.4g} ± {ha:.2g} | {mb:.4g} ± {hb:.2g} "
            f"| {'yes' if r['agree'] else 'NO'} |"
        )
    return "\n".join(lines)


def by_configuration(results: list[dict[str, Any]]) -> dict[str, list[dict[str, float]]]:
    out: dict[str, list[dict[str, float]]] = {}
    for res in results:
        if res.get("status", "ok") != "ok":
            raise ValueError(f"run {res.get('configuration')}: {res.get('error')}")
        out.setdefault(res["configuration"], []).append(metrics(res))
    return out


def container_results(api: Any, scenario: str, timeout_s: float) -> list[dict[str, Any]]:
    """Submits the scenario through the API and returns each finished run's result (with its
    configuration and run_id)."""
    sc = api.call("POST", "/api/scenarios/import", scenario.encode(), "application/yaml")
    body = json.dumps({"scenario_id": sc["id"]}).encode()
    exp = api.call("POST", "/api/experiments", body, "application/json")["experiment"]
    deadline = time.monotonic() + timeout_s
    while True:
        exp = api.call("GET", f"/api/experiments/{exp['id']}")
        if all(r["state"] in ("succeeded", "failed", "cancelled") for r in exp["runs"]):
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"experiment {exp['id']} not finished after {timeout_s:.0f} s")
        time.sleep(1)
    out = []
    for r in exp["runs"]:
        if r["state"] != "succeeded":
            detail = api.call("GET", f"/api/runs/{r['id']}")
            raise ValueError(f"run {r['id']} ({r['configuration']}): {detail.get('error')}")
        doc = api.call("GET", f"/api/runs/{r['id']}/result")
        out.append({**doc, "configuration": r["configuration"], "run_id": r["id"]})
    return out


def check_command(
    description: str, scenario: str, check: Callable[[Any, dict[str, Any]], None], timeout_s: float
) -> None:
    """The command line of a compose check, `URL TOKEN [--timeout S]`: runs `scenario` through
    the API and hands each finished run's result to `check` (with the API client); exits 1 with
    the reason when a run fails or a check raises."""
    from check_experiment import Api, Fail  # this directory: the smoke test's REST client

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("--timeout", type=float, default=timeout_s, help="seconds for the experiment")
    args = ap.parse_args()
    api = Api(args.url, args.token)
    try:
        for doc in container_results(api, scenario, args.timeout):
            check(api, doc)
    except (Fail, ValueError, TimeoutError) as exc:
        print(f"    FAILED: {exc}", file=sys.stderr)
        sys.exit(1)


def main() -> int:
    from check_experiment import Api, Fail  # this directory: the smoke test's REST client

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("token")
    ap.add_argument("scenario", type=Path)
    ap.add_argument("ns_results", type=Path)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds for the experiment")
    args = ap.parse_args()
    ns = [json.loads(p.read_text()) for p in sorted(args.ns_results.glob("run-*.json"))]
    try:
        ct = container_results(Api(args.url, args.token), args.scenario.read_text(), args.timeout)
        rows = compare(by_configuration(ns), by_configuration(ct))
    except (Fail, ValueError, TimeoutError) as exc:
        print(f"    FAILED: {exc}", file=sys.stderr)
        return 1
    print(table(rows))
    for side, results in (("namespaces", ns), ("containers", ct)):
        setup = [r["setup_s"] for r in results if isinstance(r.get("setup_s"), (int, float))]
        if len(setup) >= 2:  # a run's set-up time: testbed, programs, schemes (not compared)
            mean, half = interval(setup)
            print(f"    run set-up on {side}: {mean:.2f} ± {half:.2f} s over {len(setup)} runs")
    bad = [f"{r['configuration']} {r['metric']}" for r in rows if not r["agree"]]
    # the eBPF scheme acted on both backends: the sender counted notices
    bad += [
        f"{r['configuration']} notices: none"
        for r in rows
        if r["metric"] == "notices" and not (r["left"][0] > 0 and r["right"][0] > 0)
    ]
    if not rows or bad:
        print(f"    FAILED: the backends disagree on {bad or 'nothing compared'}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
