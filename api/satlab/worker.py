"""The experiment worker: `python -m satlab.worker` (or `satlab worker`).

A procrastinate worker on queue `runs` with concurrency 1: one run, one testbed at a time. For each
job it claims the run (queued -> running), writes the experiment's pinned files to a temporary
directory and points the link at them, runs it through the orchestrator
(satlab.testbed.runner.run_one) and stores the result. A heartbeat thread refreshes
runs.heartbeat_at every heartbeat_period_s with the progress, the emulator's current status and
the newest TCP_INFO sample of every sender connection (metrics.tcp: cwnd, ssthresh, srtt, delivery
rate, retransmissions; service/control.latest_tcp), and carries out live control requests for the
run every half second. A janitor thread (also run once at start) takes back runs whose worker
stopped heartbeating (see service/runs.py).
Run as root: the testbed builds network namespaces.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy.exc import OperationalError

from satlab import db
from satlab.scenario import RunSpec, Scenario, parse_scenario
from satlab.service import control, live_metrics, queue, runs
from satlab.service import files as file_store
from satlab.service.janitor import Janitor
from satlab.service.models import Experiment, UploadedFile
from satlab.settings import get_settings

log = logging.getLogger("satlab.worker")

Runner = Callable[..., dict[str, Any]]


def _default_runner(
    sc: Scenario, spec: RunSpec, progress: Callable[[float, str], None], artifacts: Path
) -> dict[str, Any]:
    from satlab.testbed.runner import run_one

    return run_one(sc, spec, progress, artifacts=artifacts)


def _default_sweep() -> list[str]:
    from satlab.testbed.testbed import sweep

    return sweep()


# Replaced by tests that have no emulator binary (the database is always the real one).
RUNNER: Runner = _default_runner
SWEEP: Callable[[], list[str]] = _default_sweep
IDENTITY = runs.WorkerIdentity(socket.gethostname(), os.getpid())


class Heartbeat(threading.Thread):
    """Heartbeats, progress events with the emulator's status and TCP_INFO, and live control while
    a run goes."""

    def __init__(self, run_id: int, me: runs.WorkerIdentity) -> None:
        super().__init__(name=f"heartbeat-{run_id}", daemon=True)
        self.run_id, self.me = run_id, me
        self.progress, self.message = 0.0, "setting up"
        self.stopped = threading.Event()
        self.lost = False  # the janitor took the run back

    def update(self, fraction: float, message: str) -> None:
        self.progress, self.message = fraction, message

    def run(self) -> None:
        period = get_settings().heartbeat_period_s
        next_beat = 0.0
        while not self.stopped.wait(0.5):
            testbed = control.current_testbed_id()
            try:
                control.serve_pending(self.run_id, testbed)
                if time.monotonic() >= next_beat:
                    next_beat = time.monotonic() + period
                    metrics, scraped = None, None
                    if testbed is not None:
                        scraped = live_metrics.scrape(testbed)
                        try:
                            status, metrics = control.emulator_request(testbed, "GET", "/status")
                        except OSError:
                            metrics = None
                        tcp = control.latest_tcp(testbed)
                        if tcp:
                            metrics = {**(metrics or {}), "tcp": tcp}
                    with db.new_session() as s:
                        if not runs.heartbeat(
                            s,
                            self.run_id,
                            self.me,
                            self.progress,
                            self.message,
                            metrics,
                            testbed,
                            scraped,
                        ):
                            self.lost = True
            except Exception:  # noqa: BLE001 - a database hiccup must not kill the heartbeat
                log.exception("heartbeat of run %s", self.run_id)

    def stop(self) -> None:
        self.stopped.set()
        self.join()


def execute_run(run_id: int, me: runs.WorkerIdentity | None = None) -> str | None:
    """Claims and runs one run; its final state, or None if it was not ours to run."""
    me = me or IDENTITY
    with db.new_session() as s:
        run = runs.claim(s, run_id, me)
        if run is None:
            log.info("run %s is not queued any more; skipped", run_id)
            return None
        exp = s.get(Experiment, run.experiment_id)
        assert exp is not None
        files = {name: s.get(UploadedFile, fid) for name, fid in (exp.files or {}).items()}
        spec_data, scenario_data = dict(run.spec), dict(exp.scenario_spec)
    workdir = Path(tempfile.mkdtemp(prefix=f"satlab-run-{run_id}-"))
    hb = Heartbeat(run_id, me)
    doc: dict[str, Any] | None = None
    error: str | None = None
    try:
        paths = file_store.materialize(files, workdir / "files")
        scenario_data["link"] = file_store.rewrite_paths(scenario_data.get("link", {}), paths)
        spec_data["link"] = file_store.rewrite_paths(spec_data.get("link", {}), paths)
        # Terrestrial hops' files (bit-error patterns): the experiment's and the run's own scenario.
        if scenario_data.get("path"):
            scenario_data["path"] = file_store.rewrite_paths(scenario_data["path"], paths, "path")
        if (own := spec_data.get("scenario")) and own.get("path"):
            own_path = file_store.rewrite_paths(own["path"], paths, "path")
            spec_data["scenario"] = {**own, "path": own_path}
        sc = parse_scenario(scenario_data)
        spec = RunSpec.model_validate(spec_data)
        hb.start()
        doc = RUNNER(sc, spec, hb.update, workdir / "artifacts")
    except Exception as exc:  # noqa: BLE001 - the run fails with the reason, the worker goes on
        log.exception("run %s", run_id)
        error = f"worker error: {exc!r}\n{traceback.format_exc(limit=5)}"
    finally:
        if hb.is_alive():
            hb.stop()
    try:
        return _finish(run_id, me, doc, error)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _finish(
    run_id: int, me: runs.WorkerIdentity, doc: dict[str, Any] | None, error: str | None
) -> str | None:
    """runs.finish, tried again while the database cannot be reached (a restart, a failover):
    the run's result exists only in this process until it is stored. Given up after
    stale_after_s: by then the run's heartbeat is stale and a janitor takes the run back as soon
    as it reaches the database (a finish after that is refused anyway)."""
    deadline = time.monotonic() + get_settings().stale_after_s
    while True:
        try:
            with db.new_session() as s:
                return runs.finish(s, run_id, me, doc, error)
        except OperationalError as exc:
            if time.monotonic() >= deadline:
                raise
            log.warning("run %s: storing its end failed, trying again in 1 s: %s", run_id, exc)
            time.sleep(1)


app = queue.make_app()


@app.task(name=queue.RUN_TASK, queue=queue.QUEUE)
def run_task(run_id: int) -> None:
    execute_run(run_id)


def _forget_parent_signal_wakeup() -> None:
    """In a child forked by a job (pyroute2 forks to create namespaces), drop the asyncio signal
    wakeup fd inherited from the worker's event loop. Otherwise the SIGTERM pyroute2 sends its
    child is written into the parent's wakeup socket and the worker believes it was told to stop."""
    signal.set_wakeup_fd(-1)


def main(argv: list[str] | None = None) -> None:
    os.register_at_fork(after_in_child=_forget_parent_signal_wakeup)
    ap = argparse.ArgumentParser(prog="satlab worker", description=__doc__.splitlines()[0])
    ap.add_argument("--once", action="store_true", help="run what is queued, then exit")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    me = IDENTITY
    with db.new_session() as s:
        runs.register_worker(s, me)
        runs.janitor(s, me, SWEEP)
    janitor = Janitor(me, SWEEP, get_settings().janitor_period_s, beat=True)
    janitor.start()
    log.info("worker %s waiting for runs", me.id)
    try:
        app.run_worker(
            queues=[queue.QUEUE],
            concurrency=1,
            wait=not args.once,
            name=me.id,
            delete_jobs="successful",
        )
    finally:
        janitor.stopped.set()
        with db.new_session() as s:
            runs.stop_worker(s, me)


if __name__ == "__main__":
    main()
