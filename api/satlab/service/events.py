"""Live progress: run state changes and current metrics.

Whoever changes a run (the API on submit/cancel/retry, the worker on claim, heartbeat and finish,
the janitor) writes a run_events row and NOTIFYs channel `satlab_events` with its id in the same
transaction. The SSE endpoint streams rows after the client's Last-Event-ID (or `after`), polling
the table every half second (one indexed query; works across API processes and survives
reconnects: the event id is the row id). A stream holds no database connection between polls (the
route closes its request session before streaming; each poll takes a connection for its
queries) and ends with `event: end` (`{"reason": ...}`) once the caller's token is revoked or
expires: it is checked on every poll. While a run is going the worker adds a row per heartbeat
with its progress, the emulator's current status (MODCOD, Es/N0, useful rate, queue depth) and
`tcp`: the newest TCP_INFO sample of each sender connection (cwnd, ssthresh, srtt, delivery rate).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from satlab import db
from satlab.service.models import ApiToken, Experiment, Run, RunEvent

CHANNEL = "satlab_events"
POLL_S = 0.5
KEEPALIVE_S = 15.0
TERMINAL = ("succeeded", "failed", "cancelled")


def record(
    session: Session,
    run: Run,
    state: str,
    progress: float,
    message: str,
    metrics: dict[str, Any] | None = None,
) -> None:
    ev = RunEvent(
        run_id=run.id,
        experiment_id=run.experiment_id,
        state=state,
        progress=progress,
        message=message,
        metrics=metrics,
    )
    session.add(ev)
    session.flush()
    session.execute(
        text("SELECT pg_notify(:ch, :payload)"),
        {"ch": CHANNEL, "payload": json.dumps({"event": ev.id, "run": run.id})},
    )


def as_dict(ev: RunEvent) -> dict[str, Any]:
    return {
        "id": ev.id,
        "run_id": ev.run_id,
        "experiment_id": ev.experiment_id,
        "at": ev.at.isoformat(),
        "state": ev.state,
        "progress": ev.progress,
        "message": ev.message,
        "metrics": ev.metrics,
    }


def fetch(
    experiment_id: int, run_id: int | None, after: int, token_id: int | None, limit: int = 500
) -> tuple[list[dict[str, Any]], bool, str | None]:
    """Events after `after`, whether the experiment (or run) has ended, and why the caller may
    no longer read them (its token revoked or expired), if so."""
    with db.new_session() as s:
        if token_id is not None:
            token = s.get(ApiToken, token_id)
            if token is None or token.revoked_at is not None:
                return [], True, "the token was revoked"
            if token.expires_at is not None and token.expires_at <= datetime.now(UTC):
                return [], True, "the token expired"
        q = select(RunEvent).where(RunEvent.experiment_id == experiment_id, RunEvent.id > after)
        if run_id is not None:
            q = q.where(RunEvent.run_id == run_id)
        rows = [as_dict(e) for e in s.scalars(q.order_by(RunEvent.id).limit(limit)).all()]
        if run_id is not None:
            state = s.scalar(select(Run.state).where(Run.id == run_id))
        else:
            state = s.scalar(select(Experiment.state).where(Experiment.id == experiment_id))
        return rows, state in TERMINAL, None


async def stream(
    experiment_id: int,
    run_id: int | None,
    after: int,
    follow: bool = True,
    token_id: int | None = None,
) -> AsyncIterator[str]:
    """Server-Sent Events: `event: run`, `id: <event id>`, `data: <json>`; a final
    `event: end` once the experiment (or run) has ended and every event was sent, or at once
    (with the reason) when the token `token_id` is revoked or expires."""
    last = after
    quiet = 0.0
    while True:
        rows, ended, refused = await asyncio.to_thread(fetch, experiment_id, run_id, last, token_id)
        if refused is not None:
            yield f"event: end\nid: {last}\ndata: {json.dumps({'reason': refused})}\n\n"
            return
        for row in rows:
            last = row["id"]
            yield f"event: run\nid: {last}\ndata: {json.dumps(row)}\n\n"
        if not rows:
            if ended or not follow:
                yield f"event: end\nid: {last}\ndata: {{}}\n\n"
                return
            quiet += POLL_S
            if quiet >= KEEPALIVE_S:
                quiet = 0.0
                yield ": keepalive\n\n"
            await asyncio.sleep(POLL_S)
        else:
            quiet = 0.0
