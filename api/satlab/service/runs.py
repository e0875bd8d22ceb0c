"""The run state machine as the workers drive it: claim, heartbeat, finish, and the janitor.

    queued --claim--> running --finish--> succeeded | failed | cancelled (cancel requested)
    running --janitor (stale heartbeat)--> queued (attempt < max_attempts) | failed
    queued --cancel--> cancelled;  failed --retry--> queued

Every transition is one conditional UPDATE (or a SELECT ... FOR UPDATE [SKIP LOCKED]) plus a
run_events row and the experiment's state, in one transaction. A worker only ever writes a run it
holds (state running and worker_id its own), so a run the janitor took back from a worker that
was presumed dead cannot be overwritten by that worker if it comes back.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, text, update
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from satlab.service import doccache, events, experiments, live_metrics, queue, results
from satlab.service.auth import Principal
from satlab.service.errors import NotFound
from satlab.service.models import Experiment, Result, Run, Worker
from satlab.settings import get_settings

log = logging.getLogger("satlab.runs")


@dataclass(frozen=True)
class WorkerIdentity:
    host: str
    pid: int

    @property
    def id(self) -> str:
        return f"{self.host}:{self.pid}"


def get_visible(session: Session, who: Principal, run_id: int) -> Run:
    run = session.get(Run, run_id)
    exp = session.get(Experiment, run.experiment_id) if run is not None else None
    if run is None or exp is None or not who.may_use(exp.scenario_name):
        raise NotFound(f"run {run_id} does not exist")
    return run


def result_json(session: Session, who: Principal, run_id: int) -> bytes:
    """A run's result document as the JSON text PostgreSQL stores: the API hands it on as it is
    (parsing the JSONB and serializing it again cost most of a request's time). A finished run's
    document is fixed until a retry starts its next attempt, so it is kept in doccache under
    (run id, attempt) and the database is asked only who may see it."""
    row = session.execute(
        select(Experiment.scenario_name, Run.state, Run.attempt)
        .join(Run, Experiment.id == Run.experiment_id)
        .where(Run.id == run_id)
    ).first()
    if row is None or not who.may_use(row[0]):
        raise NotFound(f"run {run_id} does not exist")
    key = ("result", run_id, row[2]) if row[1] in experiments.TERMINAL else None
    doc = doccache.documents.get(key) if key else None
    if doc is None:
        text_ = session.scalar(
            select(text("document::text")).select_from(Result).where(Result.run_id == run_id)
        )
        if text_ is None:
            raise NotFound(f"run {run_id} has no result (yet)")
        doc = str(text_).encode()
        if key:
            doccache.documents.put(key, doc)
    return doc


def list_runs(
    session: Session,
    who: Principal,
    *,
    experiment_id: int | None,
    state: str | None,
    configuration: str | None,
    limit: int,
    offset: int,
) -> tuple[list[Run], int]:
    q = select(Run)
    if experiment_id is not None:
        q = q.where(Run.experiment_id == experiment_id)
    if state:
        q = q.where(Run.state == state)
    if configuration:
        q = q.where(Run.configuration == configuration)
    if who.scope is not None:
        allowed = [
            n
            for n in session.scalars(select(Experiment.scenario_name).distinct())
            if who.may_use(n)
        ]
        q = q.join(Experiment).where(Experiment.scenario_name.in_(allowed))
    total = session.scalar(select(func.count()).select_from(q.subquery())) or 0
    rows = session.scalars(q.order_by(Run.id.desc()).limit(limit).offset(offset)).all()
    return list(rows), total


def claim(session: Session, run_id: int, me: WorkerIdentity) -> Run | None:
    """queued -> running for this worker, or None if the run is not queued (cancelled, or
    already taken)."""
    got = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.state == "queued")
        .values(
            state="running",
            attempt=Run.attempt + 1,
            worker_id=me.id,
            worker_host=me.host,
            started_at=func.now(),
            heartbeat_at=func.now(),
            finished_at=None,
            progress=0.0,
            testbed_id=None,
        )
        .returning(Run.id)
    ).scalar_one_or_none()
    if got is None:
        session.commit()
        return None
    run = session.get(Run, run_id, populate_existing=True)
    assert run is not None
    events.record(session, run, "running", 0.0, f"attempt {run.attempt} on {me.id}")
    experiments.refresh_state(session, run.experiment_id)
    session.execute(
        update(Worker)
        .where(Worker.id == me.id)
        .values(current_run_id=run_id, heartbeat_at=func.now())
    )
    session.commit()
    return run


def heartbeat(
    session: Session,
    run_id: int,
    me: WorkerIdentity,
    progress: float,
    message: str,
    metrics: dict[str, Any] | None = None,
    testbed_id: str | None = None,
    scraped: list[dict[str, str]] | None = None,
) -> bool:
    """Refreshes heartbeat_at and records progress (and the newest scrape of the testbed's
    Prometheus endpoints, `scraped`); False if the run is no longer this worker's (the janitor
    re-queued it)."""
    values: dict[str, Any] = {"heartbeat_at": func.now(), "progress": progress}
    if testbed_id:
        values["testbed_id"] = testbed_id
    got = session.execute(
        update(Run)
        .where(Run.id == run_id, Run.state == "running", Run.worker_id == me.id)
        .values(**values)
        .returning(Run.id)
    ).scalar_one_or_none()
    session.execute(update(Worker).where(Worker.id == me.id).values(heartbeat_at=func.now()))
    if got is not None:
        run = session.get(Run, run_id)
        assert run is not None
        events.record(session, run, "running", progress, message, metrics)
        if scraped:
            live_metrics.store(session, run_id, scraped)
    session.commit()
    return got is not None


def finish(
    session: Session, run_id: int, me: WorkerIdentity, doc: dict[str, Any] | None, error: str | None
) -> str | None:
    """Stores the result and ends the run; the final state, or None if the run was no longer
    this worker's (its result is then dropped)."""
    run = session.scalar(select(Run).where(Run.id == run_id).with_for_update())
    if run is None or run.state != "running" or run.worker_id != me.id:
        session.commit()
        log.warning("run %s is no longer held by %s; result dropped", run_id, me.id)
        return None
    if doc is not None:
        run.summary = results.store(session, run, doc)
        if doc.get("testbed_id"):
            run.testbed_id = doc["testbed_id"]
        if doc.get("status") != "ok":
            error = doc.get("error") or "run failed"
    state = "cancelled" if run.cancel_requested else "failed" if error else "succeeded"
    run.state = state
    run.error = error
    run.progress = 1.0 if state == "succeeded" else run.progress
    run.finished_at = func.now()
    run.heartbeat_at = func.now()
    session.flush()
    events.record(session, run, state, run.progress, error or state, run.summary)
    live_metrics.forget(session, run_id)
    experiments.refresh_state(session, run.experiment_id)
    session.execute(update(Worker).where(Worker.id == me.id).values(current_run_id=None))
    session.commit()
    return state


def janitor(
    session: Session, me: WorkerIdentity, sweep: Callable[[], list[str]] | None
) -> list[dict[str, Any]]:
    """Runs 'running' whose heartbeat is older than stale_after_s: their testbeds are swept when
    they ran on this machine, then they are retried (attempt < max_attempts) or failed with the
    reason; runs still 'queued' whose job ended get a new one. SKIP LOCKED: janitors of several
    workers never handle the same run."""
    st = get_settings()
    candidates = session.scalars(
        select(Run)
        .where(
            Run.state == "running",
            or_(
                Run.heartbeat_at < func.now() - timedelta(seconds=st.stale_after_s),
                and_(Run.worker_host == me.host, Run.worker_id != me.id),
            ),
        )
        .with_for_update(skip_locked=True)
    ).all()
    # A run of this machine whose worker process is gone needs no wait for the heartbeat.
    stale = [
        r
        for r in candidates
        if r.worker_host != me.host
        or r.worker_id == me.id
        or not _pid_alive(r.worker_id)
        or _heartbeat_stale(session, r, st.stale_after_s)
    ]
    actions: list[dict[str, Any]] = []
    swept: list[str] | None = None
    for run in stale:
        if sweep is not None and run.worker_host == me.host and swept is None:
            try:
                swept = sweep()
            except Exception as exc:  # noqa: BLE001 - the run is recovered anyway
                log.warning("sweep failed: %s", exc)
                swept = []
        last = f"{run.heartbeat_at:%Y-%m-%d %H:%M:%S %Z}" if run.heartbeat_at else "never"
        reason = (
            f"worker {run.worker_id} stopped heartbeating (last {last}) "
            f"during attempt {run.attempt} of {st.max_attempts}"
        )
        queue.fail_job(session, run.job_id)
        if run.cancel_requested:
            new = "cancelled"
        elif run.attempt < st.max_attempts:
            new = "queued"
        else:
            new = "failed"
        run.state = new
        run.error = reason
        if new == "queued":
            exp_priority = session.scalar(
                select(Experiment.priority).where(Experiment.id == run.experiment_id)
            )
            run.worker_id = run.worker_host = None
            run.heartbeat_at = None
            run.job_id = queue.enqueue_run(session, run.id, exp_priority or 0)
        else:
            run.finished_at = func.now()
        session.flush()
        events.record(session, run, new, run.progress, reason + f"; now {new}")
        experiments.refresh_state(session, run.experiment_id)
        actions.append({"run_id": run.id, "state": new, "reason": reason})
        log.warning("janitor: run %s %s (%s)", run.id, new, reason)
    if swept:
        log.warning("janitor: swept testbeds %s", " ".join(swept))
    actions += _requeue_jobless(session)
    session.commit()
    return actions


def _requeue_jobless(session: Session) -> list[dict[str, Any]]:
    """Runs still 'queued' whose queue job ended without claiming them (the claim's transaction
    failed: a database outage) get a new job; otherwise nothing would ever run them."""
    jobless = session.scalars(
        select(Run)
        .where(
            Run.state == "queued",
            Run.job_id.in_(
                text("SELECT id FROM procrastinate_jobs WHERE status IN ('failed', 'aborted')")
            ),
        )
        .with_for_update(skip_locked=True)
    ).all()
    actions = []
    for run in jobless:
        priority = session.scalar(
            select(Experiment.priority).where(Experiment.id == run.experiment_id)
        )
        run.job_id = queue.enqueue_run(session, run.id, priority or 0)
        reason = "its queue job ended without running it; queued again"
        events.record(session, run, "queued", run.progress, reason)
        actions.append({"run_id": run.id, "state": "queued", "reason": reason})
        log.warning("janitor: run %s %s", run.id, reason)
    return actions


def _pid_alive(worker_id: str | None) -> bool:
    try:
        pid = int((worker_id or "").rsplit(":", 1)[1])
        os.kill(pid, 0)
    except (IndexError, ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def _heartbeat_stale(session: Session, run: Run, stale_after_s: float) -> bool:
    return bool(
        session.scalar(
            select(Run.heartbeat_at < func.now() - timedelta(seconds=stale_after_s)).where(
                Run.id == run.id
            )
        )
    )


def register_worker(session: Session, me: WorkerIdentity) -> None:
    session.execute(
        insert(Worker)
        .values(id=me.id, host=me.host)
        .on_conflict_do_update(
            index_elements=[Worker.id],
            set_={"heartbeat_at": func.now(), "stopped_at": None, "current_run_id": None},
        )
    )
    session.commit()


def beat_worker(session: Session, me: WorkerIdentity) -> None:
    session.execute(update(Worker).where(Worker.id == me.id).values(heartbeat_at=func.now()))
    session.commit()


def stop_worker(session: Session, me: WorkerIdentity) -> None:
    session.execute(
        update(Worker).where(Worker.id == me.id).values(stopped_at=func.now(), current_run_id=None)
    )
    session.commit()
