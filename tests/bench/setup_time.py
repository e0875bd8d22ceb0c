"""Set-up time of each testbed backend: how long a container box takes to start (docker-compose
up to its agent answering, split in its steps), and how long opening and closing a testbed takes
on namespaces and on the compose boxes, with and without the edge gateway spliced in.

    sudo .venv/bin/python tests/bench/setup_time.py            # both backends, 3 opens each
    make bench-setup                                           # the same

The container part brings up the seven boxes of docker-compose.yml (srv1 srv2 hops gw emu st cli1,
every box a run may use; nothing else: no database, no worker) under a project of its own on free
address prefixes, all at once as a deployment starts them, measures, and
takes them down again (`down -v`, also on failure); it needs dockerd and the satlab/box image
(docker/build.sh box). Without them it says so and measures namespaces only. A box's steps:
  container   `docker-compose up` to the container's start (create, networks, runc)
  agent bound the start to the agent's socket (box-entrypoint's wiring, the interpreter's start)
  answering   the start to the first answered GET /health: the box is usable from here
  healthy     `up` to Docker's `healthy` (its first health check comes one interval after start)
A run's own set-up (programs, schemes, sinks) comes on top: scenario_smoke.py prints it per run.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BOXES = ("srv1", "srv2", "hops", "gw", "emu", "st", "cli1")
BOX_START_LIMIT_S = 3.0  # issue 19: each container box starts in under 3 s (to answering)
DOCKER = os.environ.get("DOCKER", "/usr/bin/docker")
COMPOSE = os.environ.get("COMPOSE", "docker-compose")


def _docker(*args: str) -> str:
    return subprocess.run([DOCKER, *args], capture_output=True, text=True, check=True).stdout


def free_prefix(first: int, low: int, high: int) -> str:
    """A /16 no Docker network and no route of this machine uses (as tests/compose/smoke.sh)."""
    nets = _docker("network", "ls", "-q").split()
    used = _docker("network", "inspect", *nets, "-f", "{{range .IPAM.Config}}{{.Subnet}} {{end}}")
    used += subprocess.run(
        ["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True
    ).stdout
    for i in range(low, high + 1):
        if f" {first}.{i}." not in f" {used.replace(chr(10), ' ')}":
            return f"{first}.{i}"
    raise SystemExit(f"no free {first}.{low}-{high} prefix for the boxes' networks")


def _started_at(container: str) -> float:
    """Docker's start time of a container, as a time.time() value."""
    text = _docker("inspect", "-f", "{{.State.StartedAt}}", container).strip()
    whole, _, frac = text.rstrip("Z").partition(".")
    start = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.UTC)
    return start.timestamp() + float(f"0.{frac or 0}")


def _answers(sock: Path) -> bool:
    from satlab.agent.unixhttp import AgentError, request

    try:
        request(str(sock), "GET", "/health", None, 1)
    except AgentError:
        return False
    return True


def _healthy(container: str) -> bool:
    return _docker("inspect", "-f", "{{.State.Health.Status}}", container).strip() == "healthy"


def _poll(
    what: str, checks: dict[str, Callable[[], bool]], timeout: float = 60.0
) -> dict[str, float]:
    """time.time() when each check first holds, all polled together (every 20 ms)."""
    deadline = time.monotonic() + timeout
    when: dict[str, float] = {}
    while len(when) < len(checks):
        for name, check in checks.items():
            if name not in when and check():
                when[name] = time.time()
        if time.monotonic() > deadline:
            raise SystemExit(f"{what}: {sorted(set(checks) - set(when))} not within {timeout:g} s")
        time.sleep(0.02)
    return when


def box_start(dc: list[str], project: str) -> None:
    """`up` of the seven boxes, then one box restarted: each step's time (module docstring)."""
    t_up = time.time()
    subprocess.run([*dc, "up", "-d", "--no-build", *BOXES], capture_output=True, check=True)
    shared = _docker("volume", "inspect", "-f", "{{.Mountpoint}}", f"{project}_shared").strip()
    # the container testbed (satlab.settings, imported later) finds the boxes there, from outside
    os.environ["SATLAB_SHARED_DIR"] = shared
    boxes = Path(shared) / "boxes"
    names = {b: f"{project}_{b}_1" for b in BOXES}
    answered = _poll(
        "agents answering", {b: lambda b=b: _answers(boxes / f"{b}.sock") for b in BOXES}
    )
    healthy = _poll("boxes healthy", {b: lambda b=b: _healthy(names[b]) for b in BOXES})
    print("container box start after `docker-compose up` (s):")
    print(f"  {'box':5s} {'container':>9s} {'agent bound':>11s} {'answering':>9s} {'healthy':>8s}")
    slowest, last = 0.0, 0.0  # the slowest box from its own start; the last one from `up`
    for b in BOXES:
        started = _started_at(names[b])
        bound = (boxes / f"{b}.sock").stat().st_mtime
        slowest, last = max(slowest, answered[b] - started), max(last, answered[b] - t_up)
        print(
            f"  {b:5s} {started - t_up:9.2f} {bound - started:11.2f} "
            f"{answered[b] - started:9.2f} {healthy[b] - t_up:8.2f}"
        )
    verdict = "under" if slowest < BOX_START_LIMIT_S else "NOT under"
    print(
        f"  slowest box answering {slowest:.2f} s after its start: {verdict} "
        f"{BOX_START_LIMIT_S} s; all {len(BOXES)} answering {last:.2f} s after `up`"
    )
    _docker("stop", "-t", "2", names["cli1"])
    t0 = time.time()
    _docker("start", names["cli1"])
    t1 = _poll("box cli1 restarted", {"cli1": lambda: _answers(boxes / "cli1.sock")})["cli1"]
    print(f"  cli1 stopped and started again: answering {t1 - t0:.2f} s after `docker start`")


def testbed_open_close(kind: str, repeat: int) -> None:
    from satlab.testbed.backend import create_testbed

    os.environ["SATLAB_TESTBED"] = kind
    variants: dict[str, dict[str, Any]] = {
        "plain": {},
        "with the edge gateway": {"gateway": True},
        "one hop": {"hops": [0]},
    }
    for what, options in variants.items():
        opens, closes = [], []
        for _ in range(repeat):
            tb = create_testbed(servers=1, clients=1, **options)
            t0 = time.monotonic()
            tb.__enter__()
            t1 = time.monotonic()
            tb.close()
            opens.append(t1 - t0)
            closes.append(time.monotonic() - t1)
        print(
            f"  {kind:10s} {what:22s} open {statistics.median(opens):5.2f} s  "
            f"close {statistics.median(closes):5.2f} s  (median of {repeat})"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--repeat", type=int, default=3, help="opens per backend and kind (default 3)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("the namespace testbeds and the compose boxes need root")
    if not 1 <= args.repeat <= 20:
        sys.exit(f"--repeat: {args.repeat} is not within [1, 20]")
    have_docker = (
        subprocess.run(
            [DOCKER, "image", "inspect", "satlab/box:latest"], capture_output=True
        ).returncode
        == 0
    )
    project = f"satlab-setup-{os.getpid()}"
    dc = [COMPOSE, "-p", project, "-f", str(ROOT / "docker-compose.yml")]
    try:
        if have_docker:
            os.environ["SATLAB_SUBNET_PREFIX"] = free_prefix(10, 230, 239)
            os.environ["SATLAB_NET_PREFIX"] = free_prefix(172, 20, 29)
            os.environ["SATLAB_DB_PASSWORD"] = "unused"  # the file needs one; no database runs
            box_start(dc, project)
        else:
            print(
                "container boxes: skipped (no dockerd, or no satlab/box image: docker/build.sh box)"
            )
        print("testbed open and close (one server, one client):")
        testbed_open_close("namespaces", args.repeat)
        if have_docker:
            testbed_open_close("containers", args.repeat)
    finally:
        if have_docker:
            subprocess.run([*dc, "down", "-v", "--timeout", "2"], capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
