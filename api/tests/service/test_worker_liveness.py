"""Dead workers (issue 24, class 6): the API's own janitor re-queues the run of a worker that
died while no worker is alive, and /metrics forgets workers that stopped beating."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from satlab import db
from satlab.app import create_app
from satlab.service import runs
from satlab.service.models import Run
from satlab.settings import get_settings

from .conftest import Tokens, make_experiment


def dead_local_worker() -> runs.WorkerIdentity:
    """The identity of a worker process on this machine that has exited (a real, reaped pid)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return runs.WorkerIdentity(socket.gethostname(), proc.pid)


@pytest.fixture
def api_janitor(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The API's janitor on (the other service tests keep it off), every 0.2 s."""
    monkeypatch.setenv("SATLAB_API_JANITOR_PERIOD_S", "0.2")
    get_settings.cache_clear()
    yield
    monkeypatch.undo()
    get_settings.cache_clear()


def test_the_api_requeues_the_run_of_a_dead_worker(api_janitor: None, tokens: Tokens) -> None:
    with TestClient(create_app()) as client:  # the app's lifespan starts its janitor
        exp = make_experiment(client, tokens, "orphan", reps=1)["experiment"]
        with db.new_session() as s:
            rid = s.scalars(
                text("SELECT min(id) FROM runs WHERE experiment_id = :e"), {"e": exp["id"]}
            ).one()
            assert runs.claim(s, rid, dead_local_worker()) is not None
        deadline = time.monotonic() + 10
        while True:
            with db.new_session() as s:
                run = s.get(Run, rid)
                assert run is not None
                if run.state == "queued":
                    break
            assert time.monotonic() < deadline, f"run still {run.state} after 10 s"
            time.sleep(0.1)
        assert "stopped heartbeating" in (run.error or "")


def test_metrics_forget_a_worker_that_stopped_beating(client: TestClient, tokens: Tokens) -> None:
    alive = runs.WorkerIdentity("here", 1)
    dead = runs.WorkerIdentity("there", 2)
    with db.new_session() as s:
        runs.register_worker(s, alive)
        runs.register_worker(s, dead)
    with db.get_engine().begin() as c:
        c.execute(
            text(
                "UPDATE workers SET heartbeat_at = now() - make_interval(secs => :s),"
                " current_run_id = NULL WHERE id = :id"
            ),
            {"s": get_settings().stale_after_s + 1, "id": dead.id},
        )
    m = client.get("/api/metrics", headers=tokens.h("viewer")).text
    assert "satlab_workers_alive 1" in m
    assert f'worker="{alive.id}"' in m
    assert f'worker="{dead.id}"' not in m
