"""Does every scenario of the repository still run? One short run of each configuration of each
scenario, on the testbed backend this process is configured for (SATLAB_TESTBED: namespaces here,
containers inside a Compose worker), and a table of what ran and what failed, with the reason.

    sudo .venv/bin/python tests/bench/scenario_smoke.py                  # every scenario, 4 s runs
    sudo .venv/bin/python tests/bench/scenario_smoke.py --seconds 3 scenarios/quickstart.yaml
    make smoke-scenarios                                                  # the same, every scenario

On the compose boxes (SATLAB_TESTBED=containers): run it as a worker would, in a service container
with the deployment's shared volume (P: the compose project; the boxes up, the worker stopped, as
runs on one set of boxes take turns):

    docker run --rm --user 0 --network none -e SATLAB_TESTBED=containers \
      -e TMPDIR=/run/satlab/shared/work -e DATABASE_URL=postgresql+psycopg://unused@db/unused \
      -v P_shared:/run/satlab/shared -v "$PWD/tests/bench:/opt/satlab/tests/bench:ro" \
      --entrypoint sh satlab/service \
      -c 'mkdir -p "$TMPDIR"; python3 /opt/satlab/tests/bench/scenario_smoke.py'

Each run's set-up time (host settings to the senders' start, the runner's setup_s) is printed
beside it, and its median at the end: compare the two backends with it.

Each scenario is shortened, not changed in kind: its run length becomes --seconds (at least
five of the path's round trips) and every traffic time (start, stop, duration) is scaled by the
same factor; one repetition; one sweep point (the first value of each dimension: usually the
mildest, e.g. the lowest BER, where a working configuration surely carries data); expectations
dropped (a short run judges nothing). Every configuration runs, so every scheme, gateway, PEP and
receiver a scenario names is built, started and torn down on the backend. It checks that runs
succeed and carry goodput, not that figures match the papers (that is `make reproduce`).
About 10-15 s per configuration on a namespace testbed: some 25 minutes for the 109 configurations
of the repository today, so this is a benchmark-style check, not a stage of `make test`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from satlab.scenario import ScenarioError, expand_runs, load_scenario, parse_scenario
from satlab.testbed.runner import run_one

ROOT = Path(__file__).resolve().parents[2]
TIME_FIELDS = ("start_s", "stop_s", "duration_s")


def rtt_s(data: dict[str, Any]) -> float:
    """The path's base round trip: the link's two delays and each terrestrial hop's, both ways."""
    hops = (data.get("path") or {}).get("terrestrial") or []
    link = data["link"]
    one_way = [link[d].get("delay_ms") or 0 for d in ("forward", "return")]
    return (sum(one_way) + 2 * sum(h.get("delay_ms") or 0 for h in hops)) / 1000


def shorten(data: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The scenario `data` (model_dump) as one short run per configuration (module docstring).
    At least five round trips, so a connection on a long path gets past its handshake."""
    seconds = max(seconds, 5 * rtt_s(data))
    factor = min(1.0, seconds / float(data["duration_s"]))
    data["duration_s"] = float(data["duration_s"]) * factor
    data["repetitions"] = 1
    data["expectations"] = []
    data["reproduction"] = None  # its CI subset names sweep points this run no longer has
    for flow in data.get("traffic") or []:
        for key in TIME_FIELDS:
            if flow.get(key) is not None:
                flow[key] = float(flow[key]) * factor
    sweep = data.get("sweep")
    for dim in sweep if isinstance(sweep, list) else [sweep] if sweep else []:
        dim["values"] = dim["values"][:1]
    return data


def smoke(path: Path, seconds: float) -> list[tuple[str, str, float, float | None]]:
    """(configuration, outcome, seconds, the run's set-up seconds) for each configuration of the
    scenario at `path`; the set-up (runner's setup_s: host settings, link, gateways, PEPs,
    schemes, sinks, up to the senders' start) is None for a run that failed before it."""
    try:
        sc = parse_scenario(shorten(load_scenario(path).model_dump(mode="json"), seconds))
    except ScenarioError as err:
        return [("-", f"not valid once shortened: {str(err).splitlines()[0]}", 0.0, None)]
    out = []
    for spec in expand_runs(sc):
        t0 = time.monotonic()
        res = run_one(sc, spec)
        if res["status"] != "ok":
            outcome = f"FAILED: {str(res.get('error', '')).splitlines()[0][:160]}"
        elif not any((f.get("goodput_bps") or 0) > 0 for f in res["flows"]):
            outcome = "FAILED: the run carried no goodput"
        else:
            outcome = "ok"
        setup = res.get("setup_s")
        out.append((spec.configuration.name, outcome, time.monotonic() - t0, setup))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("scenarios", nargs="*", type=Path, help="default: every scenario in scenarios/")
    ap.add_argument("--seconds", type=float, default=4.0, help="run length, s (default 4)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("the runs build testbeds: run it as root")
    if not 1 <= args.seconds <= 60:
        sys.exit(f"--seconds: {args.seconds} is not within [1, 60]")
    paths = args.scenarios or sorted(
        [*ROOT.glob("scenarios/*.yaml"), *ROOT.glob("scenarios/reproductions/*.yaml")]
    )
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        sys.exit(f"scenarios: no such file: {', '.join(missing)}")
    backend = os.environ.get("SATLAB_TESTBED", "namespaces")
    print(f"{len(paths)} scenarios, {args.seconds:g}-s runs, testbed backend {backend}")
    t_start = time.monotonic()
    failed, setups = 0, []
    for n, path in enumerate(paths, 1):
        for conf, outcome, dt, setup in smoke(path, args.seconds):
            failed += outcome != "ok"
            setups += [setup] if setup is not None else []
            set_up = f"set-up {setup:4.1f} s" if setup is not None else " " * 13
            line = (
                f"[{n:3d}/{len(paths)}] {path.name:40s} {conf:16s} {dt:5.1f} s  {set_up}  {outcome}"
            )
            print(line, flush=True)
    minutes = (time.monotonic() - t_start) / 60
    print(f"\n{failed} failed; {minutes:.1f} min on backend {backend}")
    if setups:
        print(f"a run's set-up: median {statistics.median(setups):.2f} s, max {max(setups):.2f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
