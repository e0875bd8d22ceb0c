"""Runs: list, show, result document, time series (downsampled), artifacts, live control, events."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.responses import StreamingResponse
from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.service import control, results, runs
from satlab.service.auth import Submitter, Viewer
from satlab.service.errors import NotFound
from satlab.service.models import Artifact
from satlab.service.result_schemas import ArtifactInfo, SeriesBuckets, SeriesInfo
from satlab.service.routes import Id, Limit, Offset
from satlab.service.routes.experiments import event_stream
from satlab.service.schemas import ControlOut, Page, RunOut

router = APIRouter(prefix="/api/runs", tags=["runs"])
DB = Annotated[Session, Depends(get_session)]


@router.get("", response_model=Page[RunOut])
def list_runs(
    who: Viewer,
    session: DB,
    experiment_id: Annotated[int | None, Query(ge=1, le=2_147_483_647)] = None,
    state: Literal["queued", "running", "succeeded", "failed", "cancelled"] | None = None,
    configuration: Annotated[str | None, Query(max_length=40)] = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Page[RunOut]:
    rows, total = runs.list_runs(
        session,
        who,
        experiment_id=experiment_id,
        state=state,
        configuration=configuration,
        limit=limit,
        offset=offset,
    )
    return Page(items=[RunOut.of(r) for r in rows], total=total, limit=limit, offset=offset)


@router.get("/{run_id}", response_model=RunOut)
def get_run(who: Viewer, session: DB, run_id: Id) -> RunOut:
    return RunOut.of(runs.get_visible(session, who, run_id))


@router.get(
    "/{run_id}/result",
    summary="The run result document (docs/run-result.md), no series",
    response_model=dict[str, Any],
)
def get_result(who: Viewer, session: DB, run_id: Id) -> Response:
    return Response(runs.result_json(session, who, run_id), media_type="application/json")


@router.get(
    "/{run_id}/series",
    response_model=list[SeriesInfo],
    summary="The run's time series: names and sample counts",
)
def list_series(who: Viewer, session: DB, run_id: Id) -> list[dict[str, Any]]:
    runs.get_visible(session, who, run_id)
    return results.list_series(session, run_id)


@router.get(
    "/{run_id}/series/{name}",
    response_model=SeriesBuckets,
    summary="One series downsampled: min/max/mean per time bucket",
)
def get_series(
    who: Viewer,
    session: DB,
    run_id: Id,
    name: str,
    buckets: Annotated[int, Query(ge=1, le=5000)] = 200,
    t_from: Annotated[float | None, Query(alias="from", ge=-1e9, le=1e9)] = None,
    t_to: Annotated[float | None, Query(alias="to", ge=-1e9, le=1e9)] = None,
) -> dict[str, Any]:
    runs.get_visible(session, who, run_id)
    return results.downsample(session, run_id, name, buckets, t_from, t_to)


@router.get(
    "/{run_id}/artifacts",
    response_model=list[ArtifactInfo],
    summary="Stored artifacts (pcaps, logs): names and sizes",
)
def list_artifacts(who: Viewer, session: DB, run_id: Id) -> list[dict[str, Any]]:
    runs.get_visible(session, who, run_id)
    rows = session.execute(
        select(Artifact.name, Artifact.content_type, Artifact.size_bytes)
        .where(Artifact.run_id == run_id)
        .order_by(Artifact.name)
    ).all()
    return [{"name": n, "content_type": c, "size_bytes": s} for n, c, s in rows]


@router.get("/{run_id}/artifacts/{name}", response_class=Response)
def get_artifact(who: Viewer, session: DB, run_id: Id, name: str) -> Response:
    runs.get_visible(session, who, run_id)
    a = session.scalar(select(Artifact).where(Artifact.run_id == run_id, Artifact.name == name))
    if a is None:
        raise NotFound(f"run {run_id} has no artifact {name!r}")
    return Response(
        a.content,
        media_type=a.content_type,
        headers={"Content-Disposition": f'attachment; filename="run-{run_id}-{name}"'},
    )


@router.post(
    "/{run_id}/control",
    response_model=ControlOut,
    summary="Live control of the running emulator (the run's owner or an admin)",
)
def run_control(who: Submitter, session: DB, run_id: Id, body: control.ControlIn) -> ControlOut:
    return ControlOut(**control.request(session, who, run_id, body))


@router.get("/{run_id}/events", response_class=StreamingResponse, summary="SSE for one run")
def run_events(
    who: Viewer,
    session: DB,
    run_id: Id,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    follow: bool = True,
    last_event_id: Annotated[str | None, Header(max_length=30)] = None,
) -> StreamingResponse:
    run = runs.get_visible(session, who, run_id)
    return event_stream(session, who, run.experiment_id, run_id, follow, after, last_event_id)
