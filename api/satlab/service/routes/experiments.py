"""Experiments: plan (estimate only), submit (idempotent), list, show, cancel, retry, results,
comparison, report, export and live events."""

from __future__ import annotations

import json
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Header, Query, Response
from fastapi.responses import HTMLResponse, StreamingResponse
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.service import comparisons, doccache, events, experiments, report, results
from satlab.service.auth import Principal, Submitter, Viewer
from satlab.service.experiments import ExperimentIn
from satlab.service.models import EXPERIMENT_STATES, Experiment
from satlab.service.result_schemas import ComparisonOut, ResultsOut, VerdictOut
from satlab.service.routes import Id, Limit, Offset
from satlab.service.schemas import Estimate, ExperimentOut, Page, PlanOut, SubmitOut

router = APIRouter(prefix="/api/experiments", tags=["experiments"])
DB = Annotated[Session, Depends(get_session)]
State = Literal["queued", "running", "succeeded", "failed", "cancelled"]
assert set(State.__args__) == set(EXPERIMENT_STATES)  # type: ignore[attr-defined]
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def _out(session: Session, exp: Experiment, with_runs: bool = False) -> ExperimentOut:
    return ExperimentOut.of(exp, experiments.counts(session, [exp.id])[exp.id], with_runs)


@router.post("/plan", response_model=PlanOut, summary="The runs and the estimate, nothing created")
def plan(who: Submitter, session: DB, body: ExperimentIn) -> PlanOut:
    p = experiments.plan(session, who, body)
    return PlanOut(
        scenario=p["scenario"].name,
        revision=p["revision"].number,
        runs=[
            {
                "configuration": r.configuration.name,
                "sweep_value": r.sweep_value,
                "repetition": r.repetition,
                "seed": r.seed,
            }
            for r in p["runs"]
        ],
        estimate=Estimate(**p["estimate"]),
    )


@router.post(
    "",
    status_code=201,
    response_model=SubmitOut,
    summary="Submit: the matrix becomes queued runs (200 and the first one for a known key)",
)
def submit(
    who: Submitter,
    session: DB,
    body: ExperimentIn,
    response: Response,
    idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
) -> SubmitOut:
    exp, created = experiments.create(session, who, body, idempotency_key)
    if not created:
        response.status_code = 200
    n = len(exp.runs)
    per_run = exp.estimate_s / n if n else 0.0
    est = Estimate(
        runs=n,
        duration_s=float(exp.scenario_spec.get("duration_s", 0)),
        overhead_s=round(per_run - float(exp.scenario_spec.get("duration_s", 0)), 3),
        overhead_source="as estimated at submission",
        per_run_s=round(per_run, 3),
        total_s=exp.estimate_s,
    )
    return SubmitOut(experiment=_out(session, exp), estimate=est, created=created)


@router.get("", response_model=Page[ExperimentOut])
def list_experiments(
    who: Viewer,
    session: DB,
    state: State | None = None,
    scenario: Annotated[str | None, Query(max_length=64)] = None,
    mine: bool = False,
    limit: Limit = 50,
    offset: Offset = 0,
) -> Response:
    rows, total = experiments.list_experiments(
        session, who, state=state, scenario=scenario, mine=mine, limit=limit, offset=offset
    )
    counts = experiments.page_counts(session, rows)
    page: Page[ExperimentOut] = Page(
        items=[ExperimentOut.of(e, counts[e.id]) for e in rows],
        total=total,
        limit=limit,
        offset=offset,
    )
    # Serialized here, once: through response_model FastAPI validates the page again first.
    return Response(page.model_dump_json(), media_type="application/json")


@router.get("/{experiment_id}", response_model=ExperimentOut)
def get_experiment(who: Viewer, session: DB, experiment_id: Id) -> ExperimentOut:
    return _out(session, experiments.get(session, who, experiment_id), with_runs=True)


@router.post("/{experiment_id}/cancel", response_model=ExperimentOut)
def cancel(who: Submitter, session: DB, experiment_id: Id) -> ExperimentOut:
    return _out(session, experiments.cancel(session, who, experiment_id), with_runs=True)


@router.post("/{experiment_id}/retry", response_model=ExperimentOut)
def retry(who: Submitter, session: DB, experiment_id: Id) -> ExperimentOut:
    exp, _ = experiments.retry(session, who, experiment_id)
    return _out(session, exp, with_runs=True)


@router.get(
    "/{experiment_id}/results",
    response_model=ResultsOut,
    summary="Mean and 95% CI per configuration and sweep value",
)
def aggregate(who: Viewer, session: DB, experiment_id: Id) -> dict[str, object]:
    exp = experiments.get(session, who, experiment_id)
    return {"experiment_id": exp.id, "rows": results.aggregate(session, exp)}


@router.get(
    "/{experiment_id}/comparison",
    response_model=ComparisonOut,
    summary="Each configuration against a baseline per sweep point (ratio, Fieller 95% CI)",
)
def comparison(
    who: Viewer,
    session: DB,
    experiment_id: Id,
    baseline: Annotated[str | None, Query(max_length=40)] = None,
    metric: Annotated[list[str] | None, Query(max_length=10)] = None,
) -> Response:
    exp = experiments.get_head(session, who, experiment_id)
    base = baseline or exp.matrix["configurations"][0]
    # A finished experiment's comparison is fixed until a retry makes it run again, which gives
    # it a new state and then a new finished_at (service/doccache.py).
    key = (
        ("comparison", exp.id, exp.state, exp.finished_at, base, tuple(metric or ()))
        if exp.state in experiments.TERMINAL
        else None
    )
    doc = doccache.documents.get(key) if key else None
    if doc is None:
        out = comparisons.compare(results.aggregate(session, exp), base, metric)
        full = {"experiment_id": exp.id, "state": exp.state, **out}
        doc = ComparisonOut.model_validate(full).model_dump_json().encode()
        if key:
            doccache.documents.put(key, doc)
    return Response(doc, media_type="application/json")


@router.get(
    "/{experiment_id}/expectations",
    response_model=list[VerdictOut],
    summary="The scenario's expectations judged on the comparison (no-data until runs have "
    "results)",
)
def expectations(who: Viewer, session: DB, experiment_id: Id) -> list[dict[str, object]]:
    exp = experiments.get(session, who, experiment_id)
    return comparisons.verdicts(results.aggregate(session, exp), exp.scenario_spec)


@router.get(
    "/{experiment_id}/report",
    response_class=HTMLResponse,
    summary="One self-contained HTML report: scenario, comparison with CIs, verdicts, charts",
)
def report_html(who: Viewer, session: DB, experiment_id: Id) -> HTMLResponse:
    exp = experiments.get(session, who, experiment_id)
    name = f"satlab-experiment-{exp.id}.html"
    return HTMLResponse(
        report.render(session, exp),
        headers={"Content-Disposition": f'attachment; filename="{name}"'},
    )


@router.get("/{experiment_id}/export", summary="Runs or aggregates as CSV or JSON")
def export(
    who: Viewer,
    session: DB,
    experiment_id: Id,
    format: Literal["csv", "json"] = "csv",
    what: Literal["runs", "aggregate"] = "runs",
) -> Response:
    exp = experiments.get(session, who, experiment_id)
    name = f"experiment-{exp.id}-{what}.{format}"
    disp = {"Content-Disposition": f'attachment; filename="{name}"'}
    if what == "aggregate":
        rows = results.aggregate(session, exp)
        if format == "csv":
            return Response(results.aggregate_csv(rows), media_type="text/csv", headers=disp)
        return Response(json.dumps(rows), media_type="application/json", headers=disp)
    if format == "csv":
        return Response(results.runs_csv(session, exp), media_type="text/csv", headers=disp)
    payload = [
        {
            "id": r.id,
            "configuration": r.configuration,
            "sweep_value": r.sweep_value,
            "repetition": r.repetition,
            "seed": r.seed,
            "state": r.state,
            "attempt": r.attempt,
            "error": r.error,
            "summary": r.summary,
        }
        for r in exp.runs
    ]
    return Response(json.dumps(payload), media_type="application/json", headers=disp)


@router.get(
    "/{experiment_id}/events",
    response_class=StreamingResponse,
    summary="Server-Sent Events: run states and current metrics (resumable by Last-Event-ID)",
)
def experiment_events(
    who: Viewer,
    session: DB,
    experiment_id: Id,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    follow: bool = True,
    last_event_id: Annotated[str | None, Header(max_length=30)] = None,
) -> StreamingResponse:
    experiments.get(session, who, experiment_id)
    return event_stream(session, who, experiment_id, None, follow, after, last_event_id)


def event_stream(
    session: Session,
    who: Principal,
    experiment_id: int,
    run_id: int | None,
    follow: bool,
    after: int,
    last_event_id: str | None,
) -> StreamingResponse:
    """The events of an experiment (or of one of its runs) as Server-Sent Events, from the one
    after `after`, or after the Last-Event-ID of a client that reconnects."""
    start = int(last_event_id) if last_event_id and last_event_id.isdigit() else after
    session.close()  # the stream polls with its own short sessions: hold no connection meanwhile
    return StreamingResponse(
        events.stream(experiment_id, run_id, start, follow, who.id),
        media_type="text/event-stream",
        headers=SSE_HEADERS,
    )
