"""What the tests of real runs through the worker share (test_worker.py, test_faults.py): reading
runs, submitting an experiment of short runs, starting a worker process, what the database holds
of an experiment, and the leftover check: no namespace, process, BPF object or nftables table of
a run's testbed may remain once the run has ended, whatever ended it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from fastapi.testclient import TestClient
from sqlalchemy import select, text

from satlab import db
from satlab.agent.unixhttp import request as agent_request
from satlab.service import runs
from satlab.service.models import Run
from satlab.settings import STATE_ROOT
from satlab.testbed import schemes, topology
from satlab.testbed.testbed import sweep

from .conftest import Tokens, scenario_yaml, upload_fade

ME = runs.WorkerIdentity("test-host", os.getpid())

# A worker process as deployed (`satlab worker --once`: it runs what is queued, then exits).
WORKER_SCRIPT = """
from satlab import worker
worker.main(["--once"])
"""

T = TypeVar("T")


def run_ids(exp_id: int) -> list[int]:
    with db.new_session() as s:
        return list(
            s.scalars(select(Run.id).where(Run.experiment_id == exp_id).order_by(Run.index))
        )


def get_run(run_id: int) -> Run:
    with db.new_session() as s:
        r = s.get(Run, run_id)
        assert r is not None
        return r


# A configuration of conftest.SCENARIO's list: the project's NewReno, loaded into the sending
# host's kernel for the run (BPF struct_ops, maps and links that must go with the testbed).
SL_NEWRENO = """\
  - name: sl_newreno
    transport: {congestion_control: sl_newreno}
"""


def submit_runs(
    client: TestClient,
    tokens: Tokens,
    name: str,
    duration_s: int,
    repetitions: int = 1,
    configuration: str = "cubic",
    capture: bool = False,
) -> dict[str, Any]:
    """An experiment of `repetitions` runs of one configuration (cubic, bbr or sl_newreno)
    lasting duration_s each; `capture`: pcaps of 96-byte snaps on every end host."""
    text_ = scenario_yaml(name, repetitions).replace("duration_s: 2", f"duration_s: {duration_s}")
    if configuration == "sl_newreno":
        text_ += SL_NEWRENO  # the scenario ends with its configurations
    if capture:
        text_ += "capture: {snaplen_bytes: 96, max_bytes_per_host: 1000000}\n"
    upload_fade(client, tokens)
    sc = client.post("/api/scenarios", json={"yaml": text_}, headers=tokens.h("submitter"))
    assert sc.status_code == 201, sc.text
    r = client.post(
        "/api/experiments",
        json={"scenario_id": sc.json()["id"], "configurations": [configuration]},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 201, r.text
    return dict(r.json()["experiment"])


def wait_for(what: str, check: Callable[[], T | None], timeout_s: float, every_s: float = 0.1) -> T:
    """Polls check() until it returns something other than None (or False); fails naming `what`
    after timeout_s."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got is not None and got is not False:
            return got
        assert time.monotonic() < deadline, f"{what}: not within {timeout_s:g} s"
        time.sleep(every_s)


def going(run_id: int) -> Run | None:
    """The run, once its flows are going on its testbed (progress > 0, testbed known)."""
    r = get_run(run_id)
    return r if r.state == "running" and r.progress > 0 and r.testbed_id else None


def ended(run_id: int) -> Run | None:
    """The run, once it is out of `running` (ended, or taken back by a janitor)."""
    r = get_run(run_id)
    return r if r.state != "running" else None


def agents_of(testbed_id: str) -> dict[str, int]:
    """role -> agent pid, from the testbed's state (satlab.testbed.testbed)."""
    agents: dict[str, int] = json.loads((STATE_ROOT / testbed_id / "state.json").read_text())[
        "agents"
    ]
    return agents


def agent_call(testbed_id: str, role: str, method: str, url: str) -> Any:
    """One request to an agent of a running testbed (e.g. GET /processes/emulator)."""
    return agent_request(str(STATE_ROOT / testbed_id / f"{role}.sock"), method, url, timeout=5)


# -- what the database holds --

# Each query's rows, compared as an md5 of their text: every column of what a fault must not
# touch (finished runs, their results, series, artifacts; the experiment but for its state).
_STORED = {
    "experiment": "SELECT id, revision_id, scenario_name, matrix, scenario_spec, files,"
    " priority, created_at, created_by FROM experiments WHERE id = :e",
    "run definitions": "SELECT id, index, configuration, sweep_value, repetition, seed, spec"
    " FROM runs WHERE experiment_id = :e",
    "finished runs": "SELECT * FROM runs WHERE id = ANY(:done)",
    "results": "SELECT * FROM results WHERE run_id = ANY(:done)",
    "series": "SELECT * FROM series WHERE run_id = ANY(:done)",
    "artifacts": "SELECT * FROM artifacts WHERE run_id = ANY(:done)",
    "files": "SELECT * FROM files WHERE id IN"
    " (SELECT value::int FROM experiments, jsonb_each_text(files) WHERE id = :e)",
}


def stored(exp_id: int, done: list[int]) -> dict[str, tuple[int, str | None]]:
    """(row count, md5 of the rows) per kind of what an experiment and its runs `done` hold."""
    out: dict[str, tuple[int, str | None]] = {}
    with db.get_engine().connect() as c:
        for what, query in _STORED.items():
            count, digest = c.execute(
                text(
                    f"SELECT count(*), md5(string_agg(x::text, ',' ORDER BY x::text))"
                    f" FROM ({query}) x"
                ),
                {"e": exp_id, "done": done},
            ).one()
            out[what] = (count, digest)
    assert out["results"][0] == len(done) and (out["series"][0] > 0 or not done), out
    return out


# -- leftovers --


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, start time) of a process, None when there is none."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[2]), int(fields[19])


BpfId = tuple[str, int]  # ("prog" | "map" | "link", id)


def _bpf_objects() -> dict[BpfId, dict[str, Any]]:
    """Every BPF program, map and link of the machine (bpftool's JSON of each)."""
    out = {}
    for kind in ("prog", "map", "link"):
        r = subprocess.run(
            ["bpftool", "-j", kind, "show"], capture_output=True, text=True, check=True
        )
        for obj in json.loads(r.stdout or "[]"):
            out[(kind, int(obj["id"]))] = obj
    return out


def _bpf_held(pids: list[int]) -> set[BpfId]:
    """The BPF objects these processes hold open (their /proc/PID/fdinfo: prog_id, map_id,
    link_id lines; this bpftool lists no holder pids)."""
    held = set()
    for pid in pids:
        for info in Path(f"/proc/{pid}/fdinfo").glob("*"):
            try:
                lines = info.read_text().splitlines()
            except OSError:  # closed meanwhile, or the process is gone
                continue
            for line in lines:
                key, _, value = line.partition(":")
                if key in ("prog_id", "map_id", "link_id"):
                    held.add((key[: -len("_id")], int(value)))
    return held


def _bpf_of_testbed(objs: dict[BpfId, dict[str, Any]], testbed_id: str) -> set[BpfId]:
    """A testbed's BPF objects by name, held or not: the scheme loader names each object after
    its per-host instance (`<testbed id><host><scheme>`, schemes.instance_name), so the object's
    .rodata/.bss maps carry the testbed id; then the programs using those maps, every map they
    use, and the links of those programs."""
    maps = {
        i for (k, i), o in objs.items() if k == "map" and o.get("name", "").startswith(testbed_id)
    }
    progs = {i for (k, i), o in objs.items() if k == "prog" and maps & set(o.get("map_ids", []))}
    maps |= {
        m for (k, i), o in objs.items() if k == "prog" and i in progs for m in o.get("map_ids", [])
    }
    links = {i for (k, i), o in objs.items() if k == "link" and o.get("prog_id") in progs}
    return {("map", i) for i in maps} | {("prog", i) for i in progs} | {("link", i) for i in links}


def _available_cc() -> list[str]:
    return list(schemes.AVAILABLE_CC.read_text().split())


def _nft_tables() -> set[str]:
    r = subprocess.run(["nft", "list", "tables"], capture_output=True, text=True, check=True)
    return set(r.stdout.splitlines())


class Leftovers:
    """What existed before a test (BPF objects, nftables tables of the root namespace), what the
    test started (worker processes) and what it watched of a run's testbed while the run went
    (its agents and every process in their groups: emulator, traffic, captures, scheme loaders).
    `check()` asserts that nothing the run made is left; `cleanup()` (the fixture's finalizer)
    removes it all even when the test failed.

    The machine is shared (other sessions run testbeds and load BPF programs too), so only what
    is known to be this test's counts: a namespace of a watched testbed, a watched process still
    alive, a BPF object made during the test that the testbed's processes held while the run went
    or that is named after the testbed, a new nftables table of the root namespace."""

    def __init__(self) -> None:
        self.bpf_before = set(_bpf_objects())
        self.bpf_ours: set[BpfId] = set()
        self.nft_before = _nft_tables()
        self.testbeds: list[str] = []
        self.procs: dict[int, tuple[int, str]] = {}  # pid -> (start time, what it is)
        self.started: list[subprocess.Popen[bytes]] = []

    def start_worker(
        self, env: dict[str, str] | None = None, log: Path | None = None
    ) -> subprocess.Popen[bytes]:
        """A worker process (WORKER_SCRIPT) with os.environ plus env, its output in `log` if
        given; killed at cleanup if it still runs."""
        out = open(log, "wb") if log else None  # noqa: SIM115 (the child owns it)
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER_SCRIPT],
            env={**os.environ, **(env or {})},
            stdout=out,
            stderr=out,
        )
        if out:
            out.close()
        self.started.append(proc)
        return proc

    def watch(self, testbed_id: str) -> dict[str, int]:
        """Remember a running testbed's processes; returns role -> agent pid."""
        agents = agents_of(testbed_id)
        self.testbeds.append(testbed_id)
        groups = {pid: role for role, pid in agents.items()}
        for d in Path("/proc").glob("[0-9]*"):
            st = _proc_stat(int(d.name))
            if st is not None and st[1] in groups:
                what = "agent" if int(d.name) in groups else "started by agent"
                self.procs[int(d.name)] = (st[2], f"{what} {groups[st[1]]} of {testbed_id}")
        assert set(agents.values()) <= set(self.procs), "an agent of the testbed is not running"
        objs = _bpf_objects()
        ours = _bpf_held(list(self.procs)) | _bpf_of_testbed(objs, testbed_id)
        self.bpf_ours |= ours - self.bpf_before
        return agents

    def _alive(self) -> dict[int, str]:
        """Watched processes still there (a zombie is gone: it holds nothing but its pid)."""
        out = {}
        for pid, (start, what) in self.procs.items():
            st = _proc_stat(pid)
            if st is not None and st[2] == start and st[0] != "Z":
                out[pid] = what
        return out

    def _left(self) -> list[str]:
        found = []
        for tid in self.testbeds:
            found += [f"namespace {n}" for n in topology.project_namespaces(tid)]
            for path in (STATE_ROOT / tid, schemes.pin_dir(tid)):
                if path.exists():
                    found.append(f"directory {path}")
            if schemes.CGROUP_ROOT.is_dir():
                found += [f"cgroup {d}" for d in schemes.CGROUP_ROOT.glob(f"{tid}-*")]
            # A project scheme's per-host instance is named after the testbed (schemes.py).
            found += [f"congestion control {cc}" for cc in _available_cc() if cc.startswith(tid)]
        found += [f"process {pid} ({what})" for pid, what in self._alive().items()]
        objs = _bpf_objects()
        ours = set(self.bpf_ours)
        for tid in self.testbeds:
            ours |= _bpf_of_testbed(objs, tid) - self.bpf_before
        for k, i in sorted(ours & set(objs)):
            found.append(f"bpf {k} {i} ({objs[(k, i)].get('name') or objs[(k, i)].get('type')})")
        found += [f"nftables {t}" for t in sorted(_nft_tables() - self.nft_before)]
        return found

    def check(self, timeout_s: float = 10.0) -> None:
        """Nothing of the watched testbeds is left. Polled: a SIGKILLed process needs a moment
        to be gone and the kernel frees BPF objects after their last holder closed them (RCU);
        10 s is far beyond both (milliseconds), and the run has ended by the time this runs."""
        assert self.testbeds, "no testbed was watched"
        deadline = time.monotonic() + timeout_s
        while (left := self._left()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not left, f"left behind: {left}"

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        for pid in self._alive():  # still the watched process: same pid and start time
            os.kill(pid, signal.SIGKILL)
        # The owners of this test's testbeds are gone now (its workers, or this process's runs
        # that ended): the sweeper removes what they left, watched or not. It only takes
        # testbeds whose owner is dead, so never another session's running one.
        sweep()
