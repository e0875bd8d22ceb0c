"""Faults, each a test (issue 24): a worker SIGKILLed, PostgreSQL restarted (and down over a
run's end), the emulator crashing, an agent that hangs, the disk full while a run writes its
captures. What each ends in is tabled in docs/api.md ("Faults").

Every test runs an experiment of short sl_newreno runs (DURATION_S; the project's NewReno puts
BPF programs, maps and links on the sending host, which must go with the testbed) through a real
worker process: the first run ends and is stored, then the fault hits the next while its flows
go. The test then checks that run's final state and reason and how long it took to get there,
that what was stored before is all still there (the experiment, the earlier runs, their results,
series and artifacts; every run's definition), and that nothing of the run's testbed is left
(runhelpers.Leftovers: namespaces, processes, BPF objects, nftables tables)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import select, text

from satlab import db, worker
from satlab.app import create_app
from satlab.service import queue, runs
from satlab.service.models import Artifact, Result, Run, Series

from .conftest import Tokens, alembic_config, make_tokens, needs_testbed
from .runhelpers import (
    Leftovers,
    agent_call,
    ended,
    get_run,
    going,
    run_ids,
    stored,
    submit_runs,
    wait_for,
)

pytestmark = needs_testbed

DURATION_S = 4
CONFIGURATION = "sl_newreno"
# How long a worker takes from its start (or the end of the run before) to the next run's flows
# going: about 2 s to start, 8 s a run, 3 s to set the next one up on an idle machine. 90 s leaves
# room for a machine busy with other sessions' runs.
RUN_GOING_S = 90.0
# A worker (--once) exits once the queue is empty: a second or two after the last run ended.
WORKER_EXIT_S = 30.0


@pytest.fixture
def leftovers() -> Iterator[Leftovers]:
    lo = Leftovers()
    try:
        yield lo
    finally:
        lo.cleanup()


@dataclass
class Experiment:
    """An experiment's runs going through a worker process, one after the other."""

    id: int
    runs: list[int]
    worker: subprocess.Popen[bytes]
    leftovers: Leftovers
    run: int = 0  # the run the fault hits
    before: dict[str, tuple[int, str | None]] = field(default_factory=dict)
    testbed: str = ""
    agents: dict[str, int] = field(default_factory=dict)  # role -> pid

    def going(self, k: int) -> None:
        """Waits until the flows of run k go (the runs before it ended); remembers what is
        stored by then and the run's testbed."""
        self.run = self.runs[k]

        def check() -> Run | None:
            assert self.worker.poll() is None, f"the worker exited ({self.worker.returncode})"
            return going(self.run)

        r = wait_for(f"run {self.run} going", check, RUN_GOING_S)
        for done in self.runs[:k]:
            assert get_run(done).state == "succeeded", get_run(done).error
        self.before = stored(self.id, self.runs[:k])
        assert r.testbed_id
        self.testbed = r.testbed_id
        self.agents = self.leftovers.watch(r.testbed_id)

    def outcome(self, fault: str, t_fault: float, timeout_s: float) -> tuple[str, str, float]:
        """Waits for the run to leave `running`: (state, reason, seconds since the fault),
        printed for the table in docs/api.md."""
        r = wait_for(f"{fault}: run {self.run} ending", lambda: ended(self.run), timeout_s)
        took = time.monotonic() - t_fault
        print(f"\nFAULT {fault}: run {r.state} {took:.1f} s after it: {r.error}")
        return r.state, r.error or "", took

    def nothing_lost(self) -> None:
        """What was stored before the fault is still there, unchanged."""
        k = self.runs.index(self.run)
        assert stored(self.id, self.runs[:k]) == self.before

    def worker_exits(self) -> int:
        return self.worker.wait(WORKER_EXIT_S)


def start(
    client: TestClient,
    tokens: Tokens,
    leftovers: Leftovers,
    name: str,
    runs_: int = 2,
    capture: bool = False,
    env: dict[str, str] | None = None,
    log: Path | None = None,
) -> Experiment:
    exp = submit_runs(
        client, tokens, name, DURATION_S, runs_, configuration=CONFIGURATION, capture=capture
    )
    # Heartbeats every 0.5 s: the test sees a run's progress (and testbed) early.
    proc = leftovers.start_worker({"SATLAB_HEARTBEAT_PERIOD_S": "0.5", **(env or {})}, log)
    return Experiment(exp["id"], run_ids(exp["id"]), proc, leftovers)


def test_worker_sigkill_mid_run(client: TestClient, tokens: Tokens, leftovers: Leftovers) -> None:
    e = start(client, tokens, leftovers, "f-kill")
    e.going(1)
    e.worker.send_signal(signal.SIGKILL)
    t_fault = time.monotonic()
    e.worker.wait(10)
    held = get_run(e.run)
    assert held.state == "running" and held.worker_id == f"{socket.gethostname()}:{e.worker.pid}"
    # The testbed outlives its worker (its agents have sessions of their own) until a janitor on
    # this machine sweeps it: a worker's at its start and every janitor_period_s, here by hand.
    me = runs.WorkerIdentity(socket.gethostname(), os.getpid())
    with db.new_session() as s:
        acts = runs.janitor(s, me, worker.SWEEP)
    assert [a["state"] for a in acts] == ["queued"]
    state, reason, _ = e.outcome("worker SIGKILL", t_fault, 10)
    assert state == "queued"
    assert f"worker {held.worker_id} stopped heartbeating" in reason, reason
    assert "during attempt 1 of 2" in reason
    leftovers.check()
    e.nothing_lost()
    with db.get_engine().connect() as c:
        statuses = [
            r[0] for r in c.execute(text("SELECT status::text FROM procrastinate_jobs ORDER BY id"))
        ]
    assert statuses == ["failed", "todo"]  # the dead worker's job, the retry's job
    worker.app.run_worker(queues=["runs"], concurrency=1, wait=False, install_signal_handlers=False)
    r = get_run(e.run)
    assert r.state == "succeeded" and r.attempt == 2
    with db.new_session() as s:
        assert s.scalar(select(Series.id).where(Series.run_id == e.run).limit(1)) is not None


def test_emulator_crash_mid_run(client: TestClient, tokens: Tokens, leftovers: Leftovers) -> None:
    e = start(client, tokens, leftovers, "f-emu")
    e.going(1)
    emu = agent_call(e.testbed, "emu", "GET", "/processes/emulator")
    assert emu["state"] == "running"
    os.kill(emu["pid"], signal.SIGKILL)
    # The runner looks at the emulator every 0.2 s, then tears the testbed down (a second or
    # two): 20 s is ample.
    state, reason, _ = e.outcome("emulator SIGKILL", time.monotonic(), 20)
    assert state == "failed"
    assert reason.startswith("emulator exited during the run (signal 9, SIGKILL)"), reason
    assert e.worker_exits() == 0
    leftovers.check()
    e.nothing_lost()
    with db.new_session() as s:  # the failed run's document is kept, with the reason
        res = s.get(Result, e.run)
        assert res is not None and res.document["status"] == "failed"


def test_agent_hangs_mid_run(client: TestClient, tokens: Tokens, leftovers: Leftovers) -> None:
    e = start(client, tokens, leftovers, "f-hang")
    e.going(1)
    os.kill(e.agents["srv1"], signal.SIGSTOP)
    # The runner's next request to srv1 gets no answer for the agent timeout (10 s); the
    # testbed's teardown then gives the agents 5 s to stop before it SIGKILLs them (a stopped
    # process only dies of SIGKILL): 10 + 5 s, and 10 s more for a busy machine.
    state, reason, took = e.outcome("agent SIGSTOP", time.monotonic(), 25)
    assert state == "failed"
    assert reason.startswith("agent srv1 hangs"), reason
    assert "GET /processes/send0: no answer within 10 s" in reason, reason
    assert took >= 10  # it did wait for the agent as long as the timeout says
    assert e.worker_exits() == 0
    leftovers.check()
    e.nothing_lost()


class SmallTmpfs:
    """A tmpfs of `size` mounted on a fresh directory; unmounted and removed by close()."""

    def __init__(self, size: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="satlab-diskfull-"))
        try:
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777", "satlab-diskfull"]
                + [str(self.path)],
                check=True,
                capture_output=True,
            )
        except BaseException:
            self.path.rmdir()
            raise

    def fill(self) -> None:
        """Writes a file until the file system has no space left."""
        with open(self.path / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError as err:
                assert err.strerror == "No space left on device", err

    def close(self) -> None:
        r = subprocess.run(["umount", str(self.path)], capture_output=True)
        if r.returncode != 0:  # still open in a process the test is ending: detach it now
            subprocess.run(["umount", "--lazy", str(self.path)], check=True, capture_output=True)
        self.path.rmdir()


@pytest.fixture
def small_tmpfs() -> Iterator[SmallTmpfs]:
    fs = SmallTmpfs("16m")  # a run's two captures (4 s of 96-byte snaps) take well under 1 MiB
    try:
        yield fs
    finally:
        fs.close()


def test_disk_full_while_writing_artifacts(
    small_tmpfs: SmallTmpfs, client: TestClient, tokens: Tokens, leftovers: Leftovers
) -> None:
    # small_tmpfs first: it is unmounted after `leftovers` has ended the worker that uses it.
    # The worker makes each run's directory (pinned files, captures) under TMPDIR.
    env = {"TMPDIR": str(small_tmpfs.path)}
    e = start(client, tokens, leftovers, "f-disk", capture=True, env=env)
    e.going(1)
    with db.new_session() as s:
        first = s.scalars(select(Artifact.name).where(Artifact.run_id == e.runs[0])).all()
    assert sorted(first) == ["pcap.cli1", "pcap.srv1"]
    small_tmpfs.fill()
    # The run goes on to its end (DURATION_S), stops and is stored: 30 s is ample.
    state, reason, _ = e.outcome("disk full", time.monotonic(), 30)
    # The measurements do not depend on the captures: the run succeeds, and its captures,
    # cut short, are not stored and say why.
    assert state == "succeeded", reason
    with db.new_session() as s:
        res = s.get(Result, e.run)
        assert res is not None
        arts = s.scalars(select(Artifact.name).where(Artifact.run_id == e.run)).all()
    skipped = res.document.get("artifacts_skipped", {})
    print(f"FAULT disk full: artifacts stored {sorted(arts)}, not stored {skipped}")
    assert set(skipped) == {"pcap.srv1", "pcap.cli1"} and not arts
    assert all(why.startswith("No space left on device: ") for why in skipped.values()), skipped
    assert e.worker_exits() == 0
    leftovers.check()
    e.nothing_lost()
    assert [p.name for p in small_tmpfs.path.iterdir()] == ["filler"]  # run directories gone


# -- PostgreSQL restarted mid-run, on a cluster of the test's own --

# Debian's server binaries, newest version (as scripts/pg.sh finds them); None without them.
PGBIN = max(
    Path("/usr/lib/postgresql").glob("*/bin"),
    key=lambda p: (len(p.parent.name), p.parent.name),
    default=None,
)


class Cluster:
    """A throwaway PostgreSQL cluster made like scripts/pg.sh makes the project's (initdb as
    postgres, Unix socket only, peer authentication mapped to the roles postgres and satlab, a
    database owned by postgres whose public schema the role satlab owns), in /var/tmp (the user
    postgres cannot enter pytest's private tmp_path). The project's cluster is not touched:
    other tests and people use it."""

    DB = "satlab_faults"

    def __init__(self, pgbin: Path) -> None:
        self.pgbin = pgbin
        self.home = Path(tempfile.mkdtemp(prefix="satlab-pgfault-", dir="/var/tmp"))
        shutil.chown(self.home, "postgres", "postgres")
        self.data, self.sock = self.home / "data", self.home / "run"
        self.url = f"postgresql+psycopg://satlab@/{self.DB}?host={self.sock}"

    def _as_postgres(self, *argv: str) -> None:
        r = subprocess.run(
            ["runuser", "-u", "postgres", "--", *argv],
            capture_output=True,
            text=True,
            cwd="/",
            timeout=120,
        )
        assert r.returncode == 0, f"{argv[0]}: {r.stderr}"

    def pg_ctl(self, *args: str) -> None:
        opts = f"-c listen_addresses='' -c unix_socket_directories='{self.sock}'"
        pg_ctl, data, log = str(self.pgbin / "pg_ctl"), str(self.data), str(self.home / "log")
        self._as_postgres(pg_ctl, "-D", data, "-l", log, "-w", "-t", "60", "-o", opts, *args)

    def psql(self, sql: str, database: str = "postgres") -> None:
        psql = str(self.pgbin / "psql")
        self._as_postgres(psql, "-X", "-q", "-h", str(self.sock), "-d", database, "-c", sql)

    def create(self) -> None:
        initdb, data = str(self.pgbin / "initdb"), str(self.data)
        auth = ["--auth-local=peer", "--auth-host=reject", "-E", "UTF8", "--locale=C.UTF-8"]
        self._as_postgres(initdb, "-D", data, "-U", "postgres", *auth)
        (self.data / "pg_hba.conf").write_text("local all all peer map=satlab\n")
        (self.data / "pg_ident.conf").write_text(
            "satlab postgres postgres\nsatlab root postgres\nsatlab root satlab\n"
        )
        for conf in ("pg_hba.conf", "pg_ident.conf"):
            shutil.chown(self.data / conf, "postgres", "postgres")
        self.sock.mkdir(mode=0o750)
        shutil.chown(self.sock, "postgres", "postgres")
        self.pg_ctl("start")
        self.psql("CREATE ROLE satlab LOGIN")
        self.psql(f"CREATE DATABASE {self.DB} OWNER postgres")
        self.psql(f"REVOKE ALL ON DATABASE {self.DB} FROM PUBLIC")
        self.psql(f"GRANT CONNECT, TEMPORARY ON DATABASE {self.DB} TO satlab")
        self.psql("ALTER SCHEMA public OWNER TO satlab", self.DB)
        self.psql("REVOKE ALL ON SCHEMA public FROM PUBLIC", self.DB)

    def destroy(self) -> None:
        pidfile = self.data / "postmaster.pid"
        if pidfile.exists():
            stop = [str(self.pgbin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop"]
            r = subprocess.run(
                ["runuser", "-u", "postgres", "--", *stop], capture_output=True, cwd="/"
            )
            if r.returncode != 0 and pidfile.exists():  # the postmaster this test started
                os.kill(int(pidfile.read_text().split()[0]), signal.SIGKILL)
        shutil.rmtree(self.home, ignore_errors=True)


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """The test's own cluster and database, migrated; DATABASE_URL points at it for the test
    (and so for the worker it starts); the session's database is given back afterwards."""
    if PGBIN is None:
        pytest.skip("needs Debian's PostgreSQL server binaries (/usr/lib/postgresql/*/bin)")
    c = Cluster(PGBIN)
    try:
        c.create()
        monkeypatch.setenv("DATABASE_URL", c.url)
        monkeypatch.setenv("SATLAB_API_JANITOR_PERIOD_S", "0")  # the test drives what runs
        db.reset()
        try:
            command.upgrade(alembic_config(), "head")
            yield c
        finally:
            db.get_engine().dispose()
            monkeypatch.undo()
            db.reset()
    finally:
        c.destroy()


def test_postgres_restart_mid_run(cluster: Cluster, leftovers: Leftovers, tmp_path: Path) -> None:
    with TestClient(create_app()) as client:
        log = tmp_path / "worker.log"
        e = start(client, make_tokens(), leftovers, "f-pg", runs_=3, log=log)
    try:
        # A restart: the database is gone for well under a second. The worker's sessions
        # reconnect (pool_pre_ping); a heartbeat that falls into the gap is logged and skipped.
        e.going(1)
        t_fault = time.monotonic()
        cluster.pg_ctl("-m", "fast", "restart")
        state, reason, _ = e.outcome("PostgreSQL restart -m fast", t_fault, 30)
        assert state == "succeeded", reason
        e.nothing_lost()
        # Down from mid-run until after the run has ended: heartbeats fail, and storing the
        # run's end is tried again (worker._finish) until the database is back.
        e.going(2)
        t_fault = time.monotonic()
        cluster.pg_ctl("-m", "fast", "stop")
        wait_for(
            "the worker trying to store the run's end again",
            lambda: f"run {e.run}: storing its end failed" in log.read_text(),
            30,  # the run's remaining seconds and its teardown
        )
        cluster.pg_ctl("start")
        took_down = time.monotonic() - t_fault
        state, reason, took = e.outcome("PostgreSQL down over the run's end", t_fault, 30)
        assert state == "succeeded", reason
        assert took - took_down < 10  # it is tried again every second
        assert e.worker_exits() == 0
        leftovers.check()
        e.nothing_lost()
        with db.new_session() as s:
            assert s.get(Result, e.run) is not None
    finally:
        print(log.read_text()[-20000:])  # shown when the test fails


def test_job_listener_survives_postgres_restart(cluster: Cluster) -> None:
    """A worker hears of new jobs through procrastinate's LISTEN connection. After a restart of
    PostgreSQL that connection is gone; the listener must come back by itself (a new job is
    heard within seconds), not die and not stay deaf (a worker would then find jobs only by
    polling)."""

    async def scenario() -> float:
        app = queue.make_app()
        heard: asyncio.Queue[dict[str, object]] = asyncio.Queue()

        async def on_notification(*, channel: str, notification: dict[str, object]) -> None:
            await heard.put(notification)

        async with app.open_async():
            listener = asyncio.create_task(
                app.job_manager.listen_for_jobs(
                    on_notification=on_notification, queues=[queue.QUEUE]
                )
            )
            await asyncio.sleep(1.0)
            await asyncio.to_thread(cluster.pg_ctl, "-m", "fast", "restart")
            t_back = time.monotonic()
            for k in range(30):
                await asyncio.to_thread(_insert_job, k)
                try:
                    await asyncio.wait_for(heard.get(), 1.0)
                    break
                except TimeoutError:
                    assert not listener.done(), f"the listener ended: {listener.exception()!r}"
            else:
                raise AssertionError("no job heard of within 30 s of the restart")
            took = time.monotonic() - t_back
            listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await listener
            return took

    took = asyncio.run(scenario())
    print(f"\nFAULT PostgreSQL restart: a new job heard {took:.1f} s after the server was back")
    assert took < 10


def _insert_job(k: int) -> None:
    with db.new_session() as s, s.begin():
        queue.enqueue_run(s, 1_000_000 + k, 0)
