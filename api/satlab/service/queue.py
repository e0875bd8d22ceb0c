"""The job queue: procrastinate on the same PostgreSQL (no second broker: the database is
the system of record for jobs as for results).

One job per run (task `satlab.run`, queue `runs`, argument run_id). Jobs are inserted in the same
transaction that creates or re-queues the runs, so an experiment is never half-queued; the
procrastinate trigger on insert NOTIFYs waiting workers. Priority is the experiment's (higher runs
first). The queueing lock `run-<id>` keeps at most one waiting job per run, and procrastinate's
fetch (`FOR UPDATE SKIP LOCKED`) gives each job to one worker; the worker then claims the run row
with a conditional UPDATE (queued -> running), so a run is never taken twice.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable
from typing import Any

from procrastinate import App, PsycopgConnector
from procrastinate.connector import Notify
from procrastinate.exceptions import ConnectorException
from psycopg_pool import AsyncConnectionPool
from sqlalchemy import text
from sqlalchemy.orm import Session

from satlab.settings import get_settings

RUN_TASK = "satlab.run"
QUEUE = "runs"


def _pool(**kwargs: Any) -> AsyncConnectionPool:
    # The URL is read when the worker opens the pool, not when this module is imported.
    return AsyncConnectionPool(conninfo=get_settings().libpq_url, **kwargs)


log = logging.getLogger(__name__)

# Seconds between two attempts to listen again after the LISTEN connection was lost.
RELISTEN_S = 1.0


class _Connector(PsycopgConnector):
    """procrastinate's connector with a listener that outlives a PostgreSQL restart.

    procrastinate 3.10 reconnects its LISTEN connection once, at once; when that meets the
    server still restarting, the listener ends with an error and the worker stops itself after
    its current run (api/tests/service/test_faults.py reproduces it). Here the listener tries
    again every RELISTEN_S until it is cancelled. Notices sent while it is deaf are lost; the
    worker's polling (every 5 s) finds those jobs."""

    async def listen_notify(self, on_notification: Notify, channels: Iterable[str]) -> None:
        channels = list(channels)
        while True:
            try:
                await super().listen_notify(on_notification=on_notification, channels=channels)
            except ConnectorException as exc:
                log.warning(
                    "job listener lost its connection (%s); listening again in %.0f s",
                    exc.__cause__ or exc,
                    RELISTEN_S,
                )
                await asyncio.sleep(RELISTEN_S)


def make_app() -> App:
    return App(connector=_Connector(pool_factory=_pool), import_paths=["satlab.worker"])


def enqueue_run(session: Session, run_id: int, priority: int) -> int:
    """Inserts the run's job in the session's transaction (or reuses the run's job still
    waiting, if any); returns the job id."""
    waiting = session.execute(
        text(
            "UPDATE procrastinate_jobs SET priority = :prio"
            " WHERE queueing_lock = :lock AND status = 'todo' RETURNING id"
        ),
        {"prio": priority, "lock": f"run-{run_id}"},
    ).scalar_one_or_none()
    if waiting is not None:
        return int(waiting)
    job_id = session.execute(
        text(
            "INSERT INTO procrastinate_jobs (queue_name, task_name, priority, queueing_lock, args)"
            " VALUES (:q, :task, :prio, :lock, CAST(:args AS jsonb)) RETURNING id"
        ),
        {
            "q": QUEUE,
            "task": RUN_TASK,
            "prio": priority,
            "lock": f"run-{run_id}",
            "args": json.dumps({"run_id": run_id}),
        },
    ).scalar_one()
    return int(job_id)


def cancel_job(session: Session, job_id: int | None) -> None:
    """A job not yet taken is cancelled; one being done is left to the worker."""
    if job_id is not None:
        session.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'cancelled'"
                " WHERE id = :id AND status = 'todo'"
            ),
            {"id": job_id},
        )


def fail_job(session: Session, job_id: int | None) -> None:
    """The job of a run whose worker died: mark it failed so it is not left `doing` forever."""
    if job_id is not None:
        session.execute(
            text(
                "UPDATE procrastinate_jobs SET status = 'failed'"
                " WHERE id = :id AND status = 'doing'"
            ),
            {"id": job_id},
        )
