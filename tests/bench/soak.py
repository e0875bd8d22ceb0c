"""Soak: an hour of a saturated link through the edge gateway, then 1000 short runs drained by two
workers, with the memory of every process involved and whatever each phase left behind.

    make soak                                                           (root; about 2 h)
    .venv/bin/python tests/bench/soak.py --saturate-s 60 --runs 20      (a short version)

Set-up: a scratch database (scripts/pg.sh create-db soak_PID; dropped at the end, also on failure
and Ctrl-C), migrated; the API under uvicorn as the unprivileged user satlab (as scripts/run.sh
starts it) and --workers `satlab worker` processes (root) against it; a submitter token; every
submission and every state read over REST. Their logs stay in .data/logs/soak_PID/.

(a) One configuration through the edge gateway (sl_beten with the gateways' ETEN notices) on a
    10 Mbit/s GEO link with bit errors on the forward link; one bulk TCP download for
    --saturate-s seconds. A run lasts at most 3600 s (the scenario's duration_s limit), so a longer
    soak chains runs back to back (one experiment each, the next submitted when one ends). Every
    process of the running testbed, the workers and the API are sampled about 30 s after the
    traffic starts and just before it ends: RSS, and the figures the emulator and the gateways
    report about their own memory on /metrics (queue occupancy: they do not report their RSS).
(b) One experiment of --runs 1 s runs of the same configuration (a sweep of up to 50 values x
    repetitions), drained by the workers: progress bar, counts by state, wall time, runs per
    minute, the workers' and the API's RSS at start and end.

After each phase, leftovers: the project's network namespaces, root-namespace nftables tables, BPF
programs/maps/links new since the phase began, registered congestion controls, processes the
workers started, the runs' temporary directories, and the testbeds' state directories, BPF pins
and cgroups. The exit status is 1 if anything is left or any run did not succeed.

Attribution on a machine shared with other tests: the workers' TMPDIR is a directory of this soak
(their runs' satlab-run-* directories are made there instead of /tmp itself) and their environment
carries SATLAB_SOAK=<database>, which every process they start inherits. A testbed is ours when a
run of this soak recorded it or one of our workers owns it. A new BPF object is another user's
when a live process of theirs holds it, or when it belongs to a congestion-control instance whose
name (satlab.schemes.instance_name: the testbed id first) is not one of our testbeds'; those are
counted apart, not as leftovers. An object nothing attributes is counted.

A run left queued with its queue job ended (the job raised before claiming it) would never run:
the wait for a phase ends when every pending run is such a run, and says which.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import yaml

from satlab.service.queue import RUN_TASK
from satlab.settings import EMULATOR_CONTROL_LISTEN as EMULATOR_HTTP
from satlab.testbed.gateway import HTTP_LISTEN as GATEWAY_HTTP
from satlab.testbed.schemes import AVAILABLE_CC, CGROUP_ROOT, pin_dir
from satlab.testbed.testbed import STATE_ROOT, sweep
from satlab.testbed.topology import PREFIX, namespace_name, project_namespaces

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv" / "bin"
PG_SH = str(ROOT / "scripts" / "pg.sh")
SERVICE_USER = "satlab"  # scripts/lib.sh: the API's unprivileged account
MARKER = "SATLAB_SOAK"
BASE_URL = os.environ.get("DATABASE_URL", "")

MAX_RUN_S = 3600  # scenario.py: duration_s and a bulk flow's duration_s are at most 3600
MAX_SWEEP_VALUES, MAX_REPETITIONS = 50, 100  # scenario.py limits of one experiment's matrix
TERMINAL = ("succeeded", "failed", "cancelled")
FORWARD_BPS = 10e6
# Uniform bit errors: about 1.2e-3 of the 1500-byte packets are corrupted. Plain CUBIC would
# halve its window on each (about 0.7 Mbit/s by Mathis' formula at a 0.55 s RTT); BETEN, told by
# the st edge's gateway that these losses are corruption, keeps the link busy.
FORWARD_BER = 1e-7
# The scenario default: the worker keeps the link telemetry and the agents the TCP_INFO samples of a
# run until it ends, so their memory grows with the run's length by design (series of 36,000
# points per hour).
SAMPLE_PERIOD_MS = 100
CC = "sl_beten"  # a project congestion control: its eBPF programs load and unload every run
CONFIGURATION: dict[str, Any] = {
    "name": "beten",
    "transport": {"congestion_control": CC},
    "gateway": {"eten": {"enabled": True}},
}
# The emulator's and the gateway's own memory figures on /metrics: their queues (packets and bytes
# held); a memory or resident-size metric, should one be added, is picked up too.
OWN_MEMORY_METRIC = re.compile(r"queue_bytes|queue_packets|memory|resident")
SETTLE_S, SETTLE_TRIES = 5.0, 4  # teardown is partly asynchronous (RCU, deferred netns cleanup)
STALL_S = 60.0  # unrunnable runs seen this long apart (twice) end the wait for them
WORKER_STOP_S = 30.0  # a worker stopped mid-run waits for its run; then it is killed and swept


# -- the service under test --------------------------------------------------------------------


@dataclass
class Soak:
    db: str
    db_url: str
    tmpdir: Path  # the workers' TMPDIR: where their runs' satlab-run-* directories are made
    logs: Path
    url: str = ""
    token: str = ""
    api: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)
    testbeds: set[str] = field(default_factory=set)  # ids of every testbed our runs used

    @property
    def worker_pids(self) -> list[int]:
        return [w.pid for w in self.workers]

    def check_alive(self) -> None:
        """Stops the soak when the API or a worker died: nothing would drain the queue."""
        procs = {"api": self.api, **{f"worker {i + 1}": w for i, w in enumerate(self.workers)}}
        for name, p in procs.items():
            if p is not None and p.poll() is not None:
                raise RuntimeError(
                    f"{name} (pid {p.pid}) exited with {p.returncode}; logs in {self.logs}"
                )


def database_url(base: str, name: str) -> str:
    """The service's URL with another database name; the rest kept verbatim (scripts/pg.sh
    recognises the project's own cluster by the URL's host= part)."""
    head, sep, query = base.partition("?")
    return f"{head.rsplit('/', 1)[0]}/{name}{sep}{query}"


def pg_sh(*args: str) -> subprocess.CompletedProcess[str]:
    # With the service's DATABASE_URL (make soak's), not the scratch one this script exports.
    env = {**os.environ, "DATABASE_URL": BASE_URL}
    return subprocess.run([PG_SH, *args], capture_output=True, text=True, env=env)


def scratch_database(soak: Soak) -> None:
    for args in (("drop-db", soak.db), ("create-db", soak.db)):
        r = pg_sh(*args)
        if r.returncode != 0:
            raise RuntimeError(f"scripts/pg.sh {' '.join(args)}: {r.stderr.strip()}")
    env = {**os.environ, "DATABASE_URL": soak.db_url}
    r = subprocess.run([VENV / "satlab", "migrate"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"satlab migrate: {r.stderr.strip()[-1000:]}")


def drop_database(soak: Soak) -> None:
    r = pg_sh("drop-db", soak.db)
    print(f"scratch database {soak.db} dropped" if r.returncode == 0 else r.stderr.strip())


def make_token(soak: Soak) -> None:
    os.environ["DATABASE_URL"] = soak.db_url  # read by satlab.settings on first use
    from satlab import db
    from satlab.service import auth

    with db.new_session() as s:
        _, soak.token = auth.create_token(s, "soak", "submitter", None, 100_000)
        s.commit()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_api(soak: Soak) -> None:
    """uvicorn as the unprivileged service user, as scripts/run.sh starts it. In a session of its
    own, like the workers: Ctrl-C reaches only this script, which stops everything in order."""
    port = free_port()
    soak.url = f"http://127.0.0.1:{port}"
    argv = [
        "setpriv",
        f"--reuid={SERVICE_USER}",
        f"--regid={SERVICE_USER}",
        "--init-groups",
        str(VENV / "uvicorn"),
        "satlab.app:app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--log-level",
        "warning",
    ]
    with open(soak.logs / "api.log", "wb") as log:
        soak.api = subprocess.Popen(
            argv,
            cwd=ROOT / "api",
            env={**os.environ, "DATABASE_URL": soak.db_url},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        soak.check_alive()
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{soak.url}/api/health", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the API did not answer on {soak.url}; see {soak.logs / 'api.log'}")


def start_workers(soak: Soak, n: int) -> None:
    env = {
        **os.environ,
        "DATABASE_URL": soak.db_url,
        "TMPDIR": str(soak.tmpdir),
        MARKER: soak.db,
    }
    for i in range(n):
        with open(soak.logs / f"worker-{i + 1}.log", "wb") as log:
            soak.workers.append(
                subprocess.Popen(
                    [VENV / "satlab", "worker"],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    wait_registered(soak)


def wait_registered(soak: Soak) -> None:
    """Until every worker has registered (satlab.worker.main: after its imports, before it
    takes jobs), so the memory figures of a phase start from a worker that is up."""
    ids = [f"{socket.gethostname()}:{pid}" for pid in soak.worker_pids]
    query = "SELECT count(*) FROM workers WHERE id = ANY(%s) AND stopped_at IS NULL"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        soak.check_alive()
        with psycopg.connect(libpq_url(soak)) as c:
            row = c.execute(query, (ids,)).fetchone()
        if row and row[0] == len(ids):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the workers did not register within 60 s; logs in {soak.logs}")


def libpq_url(soak: Soak) -> str:
    return soak.db_url.replace("postgresql+psycopg://", "postgresql://", 1)


def stop(proc: subprocess.Popen[bytes], grace_s: float) -> bool:
    """SIGTERM by PID, SIGKILL after grace_s; True when it had to be killed."""
    if proc.poll() is not None:
        return False
    proc.terminate()
    try:
        proc.wait(grace_s)
        return False
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return True


def stop_all(soak: Soak) -> None:
    killed = [stop(w, WORKER_STOP_S) for w in soak.workers]
    if soak.api is not None:
        stop(soak.api, 10)
    if any(killed):
        # A worker killed mid-run leaves its testbed; the sweeper removes testbeds whose owner
        # is gone (agents by their recorded PIDs, then namespaces and pins), and only those.
        print(f"a worker was killed mid-run; swept testbeds {sweep()}")


# -- REST --------------------------------------------------------------------------------------


class Api:
    def __init__(self, soak: Soak) -> None:
        self.c = httpx.Client(
            base_url=soak.url, headers={"Authorization": f"Bearer {soak.token}"}, timeout=60
        )

    def _ok(self, r: httpx.Response) -> Any:
        if r.is_error:
            raise RuntimeError(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text}")
        return r.json()

    def submit(self, scenario_yaml: str) -> int:
        sc = self._ok(self.c.post("/api/scenarios", json={"yaml": scenario_yaml}))
        out = self._ok(self.c.post("/api/experiments", json={"scenario_id": sc["id"]}))
        return int(out["experiment"]["id"])

    def experiment(self, exp_id: int) -> dict[str, Any]:
        return dict(self._ok(self.c.get(f"/api/experiments/{exp_id}")))

    def runs(self, exp_id: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while True:
            page = self._ok(
                self.c.get(
                    "/api/runs", params={"experiment_id": exp_id, "limit": 500, "offset": len(out)}
                )
            )
            out += page["items"]
            if len(out) >= page["total"] or not page["items"]:
                return out

    def run(self, run_id: int) -> dict[str, Any]:
        return dict(self._ok(self.c.get(f"/api/runs/{run_id}")))

    def result(self, run_id: int) -> dict[str, Any]:
        r = self.c.get(f"/api/runs/{run_id}/result")
        return dict(r.json()) if r.status_code == 200 else {}


def scenario(name: str, duration_s: float, values: int = 0, repetitions: int = 1) -> str:
    sc: dict[str, Any] = {
        "version": 1,
        "name": name,
        "seed": 24,
        "duration_s": duration_s,
        "repetitions": repetitions,
        "sample_period_ms": SAMPLE_PERIOD_MS,
        "link": {
            "forward": {
                "delay_ms": 250,
                "kind": "fixed",
                "rate_bps": FORWARD_BPS,
                "bit_errors": {"model": "uniform", "ber": FORWARD_BER},
            },
            "return": {"delay_ms": 250, "kind": "fixed", "rate_bps": 2e6},
        },
        "traffic": [{"kind": "bulk_tcp", "direction": "download", "duration_s": duration_s}],
        "configurations": [CONFIGURATION],
    }
    if values:
        # The sweep only makes the runs distinct (a millisecond more delay each).
        sc["sweep"] = {"path": "forward.delay_ms", "values": [250 + i for i in range(values)]}
    return yaml.safe_dump(sc, sort_keys=False)


def short_shape(runs: int) -> tuple[int, int]:
    """(sweep values, repetitions) whose product is `runs`, within one scenario's limits."""
    for values in range(min(MAX_SWEEP_VALUES, runs), 0, -1):
        if runs % values == 0 and runs // values <= MAX_REPETITIONS:
            return values, runs // values
    raise SystemExit(
        f"--runs {runs}: not a product of <= {MAX_SWEEP_VALUES} sweep values and "
        f"<= {MAX_REPETITIONS} repetitions (1000 = 50 x 20)"
    )


# A queued run whose queue job has ended (the job raised before it claimed the run, say) is never
# run: workers take only waiting jobs, and the janitors take back only runs left 'running'. The
# queue is not visible over REST, so this reads it from the scratch database.
UNRUNNABLE = f"""
SELECT r.id, coalesce(j.status::text, 'no job')
FROM runs r LEFT JOIN LATERAL (
    SELECT status FROM procrastinate_jobs
    WHERE task_name = '{RUN_TASK}' AND (args->>'run_id')::int = r.id
    ORDER BY id DESC LIMIT 1
) j ON true
WHERE r.experiment_id = %s AND r.state = 'queued'
  AND (j.status IS NULL OR j.status::text NOT IN ('todo', 'doing'))
"""


def unrunnable(soak: Soak, exp_id: int) -> dict[int, str]:
    """{run id: its last queue job's status} of the experiment's runs nothing will run."""
    with psycopg.connect(libpq_url(soak)) as c:
        return {int(rid): str(st) for rid, st in c.execute(UNRUNNABLE, (exp_id,)).fetchall()}


class StallWatch:
    """Says when every run still pending is unrunnable, seen twice STALL_S apart (a run between
    its job's end and its claim is unrunnable for an instant only)."""

    def __init__(self, soak: Soak, exp_id: int) -> None:
        self.soak, self.exp_id = soak, exp_id
        self.seen: dict[int, str] = {}
        self.next_check = time.monotonic() + STALL_S

    def stalled(self, pending: int) -> dict[int, str]:
        if pending == 0 or time.monotonic() < self.next_check:
            return {}
        self.next_check = time.monotonic() + STALL_S
        try:
            now = unrunnable(self.soak, self.exp_id)
        except psycopg.OperationalError as exc:
            # The watch's own connection is refused (a shared server out of connection slots,
            # say): not a verdict on the runs; look again at the next check.
            print(f"\n  stall check skipped: {str(exc).splitlines()[0]}")
            return {}
        both = {r: st for r, st in now.items() if r in self.seen}
        self.seen = now
        return both if len(both) == pending else {}


def print_unrunnable(runs: dict[int, str]) -> None:
    print(
        f"\n  {len(runs)} run(s) stay queued with no queue job left to run them (the worker logs "
        "say why each job ended):"
    )
    for rid, status in sorted(runs.items())[:20]:
        print(f"    run {rid}: queue job {status}")


# -- processes ---------------------------------------------------------------------------------


def all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def parent_and_group(pid: int) -> tuple[int, int] | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[2])  # fields 4 and 5 of /proc/PID/stat: ppid, pgrp


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def rss_kib(pid: int) -> int | None:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def carries_marker(pid: int, soak: Soak) -> bool:
    """Started by one of our workers, at any depth: the marker is in the inherited environment."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{MARKER}={soak.db}".encode() in env


def label(argv: list[str]) -> str:
    """A short name for a testbed process from its command line."""
    if "satlab.agent.server" in argv:
        return "agent"
    if "satlab.traffic" in argv:
        i = argv.index("satlab.traffic")
        return f"traffic {argv[i + 1]}" if i + 1 < len(argv) else "traffic"
    return Path(argv[0]).name if argv else "?"


# -- testbeds ----------------------------------------------------------------------------------


def testbed_state(tid: str) -> dict[str, Any] | None:
    try:
        return dict(json.loads((STATE_ROOT / tid / "state.json").read_text()))
    except (OSError, json.JSONDecodeError):
        return None


def our_live_testbeds(soak: Soak) -> dict[str, dict[str, Any]]:
    """{testbed id: state} of the testbeds our workers own now."""
    out = {}
    if STATE_ROOT.is_dir():
        for d in STATE_ROOT.iterdir():
            state = testbed_state(d.name)
            if state and state.get("owner_pid") in soak.worker_pids:
                out[d.name] = state
    return out


def foreign(tid: str, soak: Soak) -> bool:
    """Another user's live testbed (a 4-hex-digit id can come round again)."""
    state = testbed_state(tid)
    owner = state.get("owner_pid", -1) if state else -1
    return owner > 0 and owner not in soak.worker_pids and alive(owner)


def testbed_processes(state: dict[str, Any]) -> list[tuple[str, int]]:
    """(role and program, pid) of each agent and of everything it started: the testbed starts each
    agent as a process-group leader and the agent's programs stay in its group."""
    groups = {pid: role for role, pid in state.get("agents", {}).items()}
    out = []
    for pid in all_pids():
        pg = parent_and_group(pid)
        if pg is not None and pg[1] in groups:
            out.append((f"{groups[pg[1]]} {label(cmdline(pid))}", pid))
    return sorted(out)


def http_in_netns(ns: str, url: str) -> str:
    r = subprocess.run(
        ["nsenter", f"--net=/run/netns/{ns}", "curl", "-s", "-m", "3", url],
        capture_output=True,
        text=True,
    )
    return r.stdout if r.returncode == 0 else ""


def own_figures(tid: str) -> dict[str, str]:
    """The emulator's and each gateway's own memory figures from their /metrics."""
    out = {}
    for role, listen in (("emu", EMULATOR_HTTP), ("gw", GATEWAY_HTTP), ("st", GATEWAY_HTTP)):
        text = http_in_netns(namespace_name(tid, role), f"http://{listen}/metrics")
        for line in text.splitlines():
            if line and not line.startswith("#") and OWN_MEMORY_METRIC.search(line.split("{")[0]):
                name, value = line.rsplit(" ", 1)
                out[f"{role} {name}"] = value
    return out


@dataclass
class Sample:
    rss: dict[str, tuple[int, int | None]]  # name -> (pid, RSS KiB)
    figures: dict[str, str]


def service_processes(soak: Soak) -> list[tuple[str, int]]:
    assert soak.api is not None
    return [("api (uvicorn)", soak.api.pid)] + [
        (f"worker {i + 1}", w.pid) for i, w in enumerate(soak.workers)
    ]


def sample(soak: Soak, tid: str | None) -> Sample:
    procs = service_processes(soak)
    state = testbed_state(tid) if tid else None
    if state:
        procs += testbed_processes(state)
    rss: dict[str, tuple[int, int | None]] = {}
    for name, pid in procs:
        key = name if name not in rss else f"{name} #{sum(k.startswith(name) for k in rss) + 1}"
        rss[key] = (pid, rss_kib(pid))
    return Sample(rss, own_figures(tid) if tid else {})


# -- output ------------------------------------------------------------------------------------


def hms(s: float) -> str:
    s = int(max(0, s))
    return (
        f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


class Progress:
    """A bar redrawn in place on a terminal; one line a minute otherwise (output kept in a log)."""

    def __init__(self, total: float, unit: str) -> None:
        self.total, self.unit = total, unit
        self.t0 = time.monotonic()
        self.tty = sys.stdout.isatty()
        self.last_line = -math.inf
        self.last_done = -1.0

    def update(self, done: float, note: str = "", eta: float | None = None) -> None:
        """`eta` in seconds when the caller knows it; else from the rate so far."""
        elapsed = time.monotonic() - self.t0
        if eta is None and done > 0 and elapsed >= 10:
            eta = elapsed / done * (self.total - done)
        frac = min(1.0, done / self.total) if self.total else 1.0
        bar = "#" * int(30 * frac) + "-" * (30 - int(30 * frac))
        line = (
            f"  [{bar}] {done:.0f}/{self.total:.0f} {self.unit}  elapsed {hms(elapsed)}  "
            f"ETA {hms(eta) if eta is not None else '?'}  {note}"
        )
        if self.tty:
            print(f"\r{line:<110}", end="", flush=True)
        elif time.monotonic() - self.last_line >= 60 or (
            done >= self.total and self.last_done < self.total
        ):
            print(line, flush=True)
            self.last_line = time.monotonic()
        self.last_done = done

    def close(self) -> None:
        if self.tty:
            print()


def mib(kib: int | None) -> str:
    return f"{kib / 1024:.1f}" if kib is not None else "-"


def print_rss_table(
    start: dict[str, tuple[int, int | None]], end: dict[str, tuple[int, int | None]]
) -> None:
    print(
        f"  {'process':28} {'pid':>15} {'RSS start MiB':>14} {'RSS end MiB':>12} {'delta MiB':>10}"
    )
    for name in list(start) + [n for n in end if n not in start]:
        (p0, r0), (p1, r1) = start.get(name, (0, None)), end.get(name, (0, None))
        pid = str(p0 or p1) if p0 == p1 or not (p0 and p1) else f"{p0}->{p1}"
        delta = f"{(r1 - r0) / 1024:+.1f}" if r0 is not None and r1 is not None else "-"
        print(f"  {name:28} {pid:>15} {mib(r0):>14} {mib(r1):>12} {delta:>10}")


def print_figures(start: dict[str, str], end: dict[str, str]) -> None:
    if not start and not end:
        print("  (the emulator's and gateways' /metrics did not answer)")
        return
    print(f"  {'own figure (/metrics)':58} {'start':>12} {'end':>12}")
    for name in list(start) + [n for n in end if n not in start]:
        print(f"  {name:58} {start.get(name, '-'):>12} {end.get(name, '-'):>12}")


# -- leftovers ---------------------------------------------------------------------------------


def nft_tables() -> set[str]:
    r = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True)
    return {line.strip() for line in r.stdout.splitlines() if line.strip()}


def bpf_objects(kind: str) -> dict[int, dict[str, Any]]:
    r = subprocess.run(["bpftool", "-j", kind, "show"], capture_output=True, text=True, check=True)
    return {o["id"]: o for o in json.loads(r.stdout or "[]")}


@dataclass
class Baseline:
    """What the machine held when a phase began: anything new at its end is a candidate."""

    namespaces: set[str]
    nft: set[str]
    bpf: dict[str, set[int]]

    @classmethod
    def take(cls) -> Baseline:
        bpf = {k: set(bpf_objects(k)) for k in ("prog", "map", "link")}
        return cls(set(project_namespaces()), nft_tables(), bpf)


def leftover_namespaces(soak: Soak, base: Baseline, ours: set[str]) -> list[str]:
    out = []
    for ns in project_namespaces():
        tid = ns[len(PREFIX) :].split("-", 1)[0]
        if tid in ours and not foreign(tid, soak):
            out.append(ns)
        elif ns not in base.namespaces and not foreign(tid, soak):
            # Namespaces come only after their testbed's state: none, or a dead owner, is an orphan.
            out.append(f"{ns} (new since the phase began, no live owner)")
    return out


def struct_ops_instances(maps: dict[int, dict[str, Any]]) -> dict[int, tuple[str, list[int]]]:
    """{struct_ops map id: (the congestion control it registers, its member programs)}."""
    out = {}
    for mid, m in maps.items():
        if m.get("type") != "struct_ops":
            continue
        r = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(mid)], capture_output=True)
        try:
            data = json.loads(r.stdout)[0]["formatted"]["value"]["data"]
        except (ValueError, LookupError, TypeError):
            continue  # gone meanwhile, or no BTF to format it
        members = [
            v
            for k, v in data.items()
            if isinstance(v, int) and v > 0 and k not in ("flags", "key", "owner")
        ]
        out[mid] = (str(data.get("name", "")), members)
    return out


def bpf_instance_names(objs: dict[str, dict[int, dict[str, Any]]]) -> dict[tuple[str, int], str]:
    """The congestion-control instance each BPF object belongs to, where that can be told: a
    struct_ops map registers one by name; its member programs, the maps they use, the other
    programs using those maps and the links of any of them go with it."""
    tag: dict[tuple[str, int], str] = {}
    for mid, (name, members) in struct_ops_instances(objs["map"]).items():
        tag["map", mid] = name
        for prog in members:
            tag["prog", prog] = name
            for m in objs["prog"].get(prog, {}).get("map_ids", []):
                tag.setdefault(("map", m), name)
    for pid, p in objs["prog"].items():  # e.g. a scheme's tc program sharing its maps
        for m in p.get("map_ids", []):
            if ("map", m) in tag:
                tag.setdefault(("prog", pid), tag["map", m])
    for lid, link in objs["link"].items():
        for kind, key in (("map", "map_id"), ("prog", "prog_id")):
            if (kind, link.get(key)) in tag:
                tag.setdefault(("link", lid), tag[kind, link[key]])
    return tag


def leftover_bpf(soak: Soak, base: Baseline, ours: set[str]) -> tuple[list[str], int]:
    """(new objects of ours or of no one known, how many new ones are other users')."""
    objs = {k: bpf_objects(k) for k in ("prog", "map", "link")}
    names = bpf_instance_names(objs)
    left, others = [], 0
    for kind, by_id in objs.items():
        for oid, o in by_id.items():
            if oid in base.bpf[kind]:
                continue
            owners = [p["pid"] for p in o.get("pids", [])]
            name = names.get((kind, oid), "")
            if owners:
                mine = any(carries_marker(p, soak) for p in owners)
            elif name:
                mine = name[:4] in ours  # satlab.schemes.instance_name starts with the testbed id
            else:
                mine = True  # nothing says whose: counted (on a machine of its own, ours)
            if not mine:
                others += 1
                continue
            what = " ".join(str(o[k]) for k in ("type", "name") if o.get(k))
            of = f" of {name}" if name else ""
            left.append(f"{kind} {oid} {what}{of}, held by {owners or 'no process'}")
    return left, others


def leftover_processes(soak: Soak) -> list[str]:
    workers = set(soak.worker_pids)
    skip = workers | {os.getpid(), soak.api.pid if soak.api else 0}
    out = []
    for pid in all_pids():
        pg = parent_and_group(pid)
        if pid in skip or pg is None:
            continue
        if pg[0] in workers or carries_marker(pid, soak):
            out.append(f"{pid} (parent {pg[0]}): {' '.join(cmdline(pid))[:120]}")
    return out


def leftover_files(soak: Soak, ours: set[str]) -> list[str]:
    out = [str(p) for p in sorted(soak.tmpdir.iterdir())]
    for tid in sorted(ours):
        if foreign(tid, soak):
            continue
        out += [str(p) for p in (STATE_ROOT / tid, pin_dir(tid)) if p.exists()]
        if CGROUP_ROOT.is_dir():
            out += [str(p) for p in CGROUP_ROOT.glob(f"{tid}-*")]
    return out


def leftovers(soak: Soak, base: Baseline) -> tuple[dict[str, list[str]], list[str]]:
    """(what is left, by kind; notes on other users' things present and not counted)."""
    ours = soak.testbeds | set(our_live_testbeds(soak))
    # Instance names start with the testbed id (satlab.schemes.instance_name: '1a2bs1beten').
    ccs = [
        cc
        for cc in AVAILABLE_CC.read_text().split()
        if len(cc) > 4 and cc[:4] in ours and not foreign(cc[:4], soak)
    ]
    bpf, bpf_others = leftover_bpf(soak, base, ours)
    left = {
        "network namespaces (prefix sl)": leftover_namespaces(soak, base, ours),
        "nftables tables (root namespace, new)": sorted(nft_tables() - base.nft),
        "BPF programs/maps/links (new)": bpf,
        "registered congestion controls": ccs,
        "processes started by the workers": leftover_processes(soak),
        f"files (run directories in {soak.tmpdir}, testbed state, pins, cgroups)": leftover_files(
            soak, ours
        ),
    }
    notes = []
    foreign_ns = [
        n for n in project_namespaces() if foreign(n[len(PREFIX) :].split("-", 1)[0], soak)
    ]
    if foreign_ns:
        notes.append(f"{len(foreign_ns)} namespaces of other users' live testbeds")
    if bpf_others:
        notes.append(
            f"{bpf_others} new BPF objects of other users (their live processes' or another "
            "congestion-control instance's)"
        )
    return left, notes


def report_leftovers(soak: Soak, base: Baseline, phase: str) -> bool:
    """Prints what the phase left; True when nothing. Checks again a few times first, since a
    teardown finishes partly after the run (namespaces and BPF objects are freed asynchronously)."""
    waited = 0.0
    left, notes = leftovers(soak, base)
    while any(left.values()) and waited < SETTLE_S * (SETTLE_TRIES - 1):
        time.sleep(SETTLE_S)
        waited += SETTLE_S
        left, notes = leftovers(soak, base)
    note = f", checked again for {waited:.0f} s" if waited else ""
    print(f"\nleftovers after {phase} ({len(soak.testbeds)} testbeds of ours{note}):")
    for what, items in left.items():
        print(f"  {what}: {len(items) or 'none'}")
        for item in items[:20]:
            print(f"    {item}")
        if len(items) > 20:
            print(f"    ... and {len(items) - 20} more")
    if notes:
        print(f"  not counted: {'; '.join(notes)}")
    return not any(left.values())


# -- phase (a): a saturated link through the gateway -------------------------------------------


def chunks(total_s: float) -> list[float]:
    """Back-to-back run lengths covering total_s, each within the scenario's limit."""
    n = math.ceil(total_s / MAX_RUN_S)
    return [round(total_s / n, 3)] * n


def wait_for_traffic(soak: Soak, api: Api, exp_id: int, run_id: int) -> tuple[str, float] | None:
    """(testbed id, when) once the run's bulk sender runs, or None if the run ended first or
    nothing will run it."""
    watch = StallWatch(soak, exp_id)
    while True:
        soak.check_alive()
        for tid, state in our_live_testbeds(soak).items():
            if any(name.endswith("traffic bulk") for name, _ in testbed_processes(state)):
                return tid, time.monotonic()
        st = api.run(run_id)["state"]
        if st in TERMINAL:
            return None
        if stuck := watch.stalled(1 if st == "queued" else 0):
            print_unrunnable(stuck)
            return None
        time.sleep(0.5)


def saturate_run(
    soak: Soak,
    api: Api,
    d: float,
    first: bool,
    last: bool,
    samples: dict[str, Sample],
    bar: Progress,
    done_s: float,
) -> dict[str, Any]:
    """One run of d seconds; samples at ~30 s into the first and just before the end of the last."""
    exp_id = api.submit(scenario("soak-saturate", d))
    run_id = api.runs(exp_id)[0]["id"]
    started = wait_for_traffic(soak, api, exp_id, run_id)
    if started is not None:
        tid, t0 = started
        soak.testbeds.add(tid)
        due = {"start": t0 + min(30, d / 2)} if first else {}
        if last:
            due["end"] = t0 + d - min(5, d / 10)
        while (run := api.run(run_id))["state"] not in TERMINAL:
            soak.check_alive()
            for name, when in list(due.items()):
                if time.monotonic() >= when:
                    samples[name] = sample(soak, tid)
                    del due[name]
            into = min(d, time.monotonic() - t0)
            note = f"run {run_id} {run['state']}" + ("" if into < d else ", collecting its result")
            bar.update(done_s + into, note, eta=bar.total - done_s - into)
            time.sleep(1)
    run = api.run(run_id)
    if run.get("testbed_id"):
        soak.testbeds.add(run["testbed_id"])
    return run


def print_run_outcome(api: Api, run: dict[str, Any]) -> None:
    summary = run.get("summary") or {}
    goodput = summary.get("goodput_bps")
    print(f"  run {run['id']}: {run['state']}, testbed {run.get('testbed_id')}", end="")
    if goodput:
        print(
            f", goodput {goodput / 1e6:.2f} Mbit/s ({100 * goodput / FORWARD_BPS:.0f} % of the "
            f"forward link's {FORWARD_BPS / 1e6:g} Mbit/s), retransmissions "
            f"{summary.get('retransmissions')}"
        )
    else:
        print()
    if run.get("error"):
        print(f"    error: {run['error'].strip()[-500:]}")
    doc = api.result(run["id"])
    for role, schemes in (doc.get("endhosts") or {}).items():
        for scheme, entry in schemes.items():
            if entry.get("stats"):
                print(f"    {role} {scheme}: {entry['stats']}")


def phase_saturate(soak: Soak, api: Api, seconds: float) -> tuple[bool, bool]:
    """(all runs succeeded, nothing left)."""
    lengths = chunks(seconds)
    print(
        f"\n(a) saturated link through the edge gateway: {seconds:g} s of one bulk TCP download, "
        f"{CC} + the gateways' ETEN notices, "
        f"{FORWARD_BPS / 1e6:g} Mbit/s forward, BER {FORWARD_BER:g}"
    )
    if len(lengths) > 1:
        print(
            f"  a run lasts at most {MAX_RUN_S} s (scenario duration_s): chained as {len(lengths)} "
            f"back-to-back runs of {lengths[0]:g} s"
        )
    base = Baseline.take()
    samples: dict[str, Sample] = {}
    runs = []
    bar = Progress(sum(lengths), "s of traffic")
    for k, d in enumerate(lengths):
        first, last = k == 0, k == len(lengths) - 1
        runs.append(saturate_run(soak, api, d, first, last, samples, bar, sum(lengths[:k])))
    bar.close()
    start, end = samples.get("start"), samples.get("end")
    at = min(30, lengths[0] / 2)
    print(f"\n  memory, ~{at:.0f} s after the traffic started and just before it ended:")
    print_rss_table(start.rss if start else {}, end.rss if end else {})
    points = int(sum(lengths) * 1000 / SAMPLE_PERIOD_MS)
    print(
        f"  (by design the worker holds the run's link telemetry and the agents its TCP_INFO "
        f"samples until it ends: {points} points per series at {SAMPLE_PERIOD_MS} ms)\n"
    )
    print_figures(start.figures if start else {}, end.figures if end else {})
    print("\n  run state and goodput:")
    for run in runs:
        print_run_outcome(api, run)
    clean = report_leftovers(soak, base, "(a)")
    return all(r["state"] == "succeeded" for r in runs), clean


# -- phase (b): short runs drained by the workers ----------------------------------------------


def drain(soak: Soak, api: Api, exp_id: int, n: int) -> tuple[int, float, dict[int, str]]:
    """Waits until every run is terminal, or every pending one unrunnable: (runs ended, seconds
    to the last one's end, the unrunnable runs)."""
    bar = Progress(n, "runs")
    watch = StallWatch(soak, exp_id)
    done, t_done = 0, bar.t0
    while True:
        soak.check_alive()
        soak.testbeds |= set(our_live_testbeds(soak))
        counts = api.experiment(exp_id)["runs_by_state"]
        now_done = sum(counts.get(s, 0) for s in TERMINAL)
        if now_done > done:
            done, t_done = now_done, time.monotonic()
        bar.update(done, " ".join(f"{k} {v}" for k, v in sorted(counts.items()) if v))
        stuck = watch.stalled(n - done)
        if done >= n or stuck:
            break
        time.sleep(2)
    bar.close()
    return done, t_done - bar.t0, stuck


def print_states(runs: list[dict[str, Any]]) -> None:
    """Counts by state, then the commonest first lines of the errors."""
    by_state: dict[str, int] = {}
    errors: dict[str, int] = {}
    for r in runs:
        by_state[r["state"]] = by_state.get(r["state"], 0) + 1
        if r["state"] != "succeeded":
            first_line = (r.get("error") or r["state"]).strip().splitlines()[0][:160]
            errors[first_line] = errors.get(first_line, 0) + 1
    print(f"  runs by state: {', '.join(f'{k} {v}' for k, v in sorted(by_state.items()))}")
    for err, k in sorted(errors.items(), key=lambda e: -e[1])[:10]:
        print(f"    {k} x {err}")


def phase_short(soak: Soak, api: Api, n: int) -> tuple[bool, bool]:
    """(all runs succeeded, nothing left)."""
    values, reps = short_shape(n)
    print(
        f"\n(b) {n} queued 1 s runs ({values} sweep values x {reps} repetition(s), one "
        f"configuration as in (a)) drained by {len(soak.workers)} workers"
    )
    base = Baseline.take()
    rss0 = sample(soak, None).rss
    exp_id = api.submit(scenario("soak-short", 1, values, reps))
    done, wall, stuck = drain(soak, api, exp_id, n)
    rss1 = sample(soak, None).rss
    if stuck:
        print_unrunnable(stuck)
    runs = api.runs(exp_id)
    soak.testbeds |= {r["testbed_id"] for r in runs if r.get("testbed_id")}
    print_states(runs)
    rate = f"{done / wall * 60:.1f}" if wall > 0 else "-"
    print(f"  wall time {hms(wall)} ({wall:.0f} s) to the last run's end, {rate} runs per minute")
    print("\n  memory at the start and the end of the phase:")
    print_rss_table(rss0, rss1)
    clean = report_leftovers(soak, base, "(b)")
    return all(r["state"] == "succeeded" for r in runs), clean


# -- main --------------------------------------------------------------------------------------


def on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--saturate-s", type=float, default=3600, help="phase (a) length, s")
    ap.add_argument("--runs", type=int, default=1000, help="phase (b): number of 1 s runs")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("the soak runs testbeds: run it as root")
    if not BASE_URL:
        sys.exit("DATABASE_URL: set it (make soak sets it to scripts/pg.sh url)")
    if args.runs > 0:
        short_shape(args.runs)  # refuse an impossible --runs before setting anything up
    signal.signal(signal.SIGTERM, on_sigterm)
    db = f"soak_{os.getpid()}"
    logs = ROOT / ".data" / "logs" / db
    logs.mkdir(parents=True, exist_ok=True)
    soak = Soak(
        db=db,
        db_url=database_url(BASE_URL, db),
        tmpdir=Path(tempfile.mkdtemp(prefix="satlab-soak-")),
        logs=logs,
    )
    t_start = time.monotonic()
    ok = True
    try:
        scratch_database(soak)
        make_token(soak)
        start_api(soak)
        start_workers(soak, args.workers)
        print(
            f"soak: database {db}, API {soak.url} (pid {soak.api.pid if soak.api else '?'}, "
            f"user {SERVICE_USER}), workers {soak.worker_pids} (TMPDIR {soak.tmpdir}), logs {logs}"
        )
        api = Api(soak)
        verdicts = {}
        if args.saturate_s > 0:
            verdicts["(a) runs succeeded"], verdicts["(a) nothing left"] = phase_saturate(
                soak, api, args.saturate_s
            )
        if args.runs > 0:
            verdicts["(b) runs succeeded"], verdicts["(b) nothing left"] = phase_short(
                soak, api, args.runs
            )
        ok = all(verdicts.values())
        failed = [k for k, v in verdicts.items() if not v]
        print(
            f"\nsoak: {'OK' if ok else 'FAILED: ' + ', '.join(failed)} "
            f"(total {hms(time.monotonic() - t_start)})"
        )
    except KeyboardInterrupt:
        print("\ninterrupted: stopping everything")
        ok = False
        return 130
    except (RuntimeError, subprocess.CalledProcessError, httpx.HTTPError) as exc:
        print(f"\nsoak: FAILED: {exc}")
        ok = False
    finally:
        stop_all(soak)
        shutil.rmtree(soak.tmpdir, ignore_errors=True)
        drop_database(soak)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
