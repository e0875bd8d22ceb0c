"""Experiments: one scenario revision times a matrix (configurations x sweep values x
repetitions) becomes runs, each queued as one job.

- Estimate: runs x (duration_s + set-up/teardown overhead). The overhead is the mean of
  (wall_s - duration_s) over the last 50 successful runs, or 3 s until there are any.
- Idempotency: an `Idempotency-Key` header, unique per token: the same key again returns the
  experiment it created the first time (200 instead of 201), whatever the body.
- Cancel: queued runs are cancelled at once (their jobs too); a running run is marked
  cancel_requested and becomes cancelled when its worker finishes it.
- Retry: failed runs are queued again (attempt counts every try).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, defer, load_only

from satlab.scenario import Sweep, drop_stale_claims, expand_runs
from satlab.service import doccache, events, limits, links, queue, scenarios
from satlab.service.auth import Principal
from satlab.service.errors import Invalid, NotFound
from satlab.service.models import Experiment, Run, ScenarioRevision
from satlab.settings import get_settings

TERMINAL = ("succeeded", "failed", "cancelled")


class ExperimentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    scenario_id: int | None = Field(None, description="the scenario (or give scenario_name)")
    scenario_name: str | None = Field(None, max_length=64)
    revision: int | None = Field(None, ge=1, description="revision number; default the latest")
    priority: int = Field(0, ge=-100, le=100, description="higher runs first")
    configurations: list[str] | None = Field(
        None, min_length=1, max_length=32, description="a subset of the scenario's; default all"
    )
    sweep: Sweep | Annotated[list[Sweep], Field(min_length=1, max_length=2)] | None = Field(
        None, description="replaces the scenario's sweep (one dimension or a list of two)"
    )
    repetitions: int | None = Field(None, ge=1, le=100, description="replaces the scenario's")


def _effective_spec(rev: ScenarioRevision, body: ExperimentIn) -> dict[str, Any]:
    spec = dict(rev.spec)
    errors = []
    if body.configurations is not None:
        known = {c["name"]: c for c in spec["configurations"]}
        for i, name in enumerate(body.configurations):
            if name not in known:
                errors.append(
                    f"configurations.{i}: {name!r} is not a configuration of the scenario "
                    f"({', '.join(known)})"
                )
        spec["configurations"] = [known[n] for n in body.configurations if n in known]
    if errors:
        raise Invalid(errors)
    if body.sweep is not None:
        spec["sweep"] = (
            [d.model_dump(mode="json") for d in body.sweep]
            if isinstance(body.sweep, list)
            else body.sweep.model_dump(mode="json")
        )
        # Its CI subset names the scenario's own sweep values.
        spec["reproduction"] = None
    if body.repetitions is not None:
        spec["repetitions"] = body.repetitions
    # Expectations about configurations or sweep points this experiment does not run are left
    # out (its verdicts cover the rest).
    return drop_stale_claims(spec)


def setup_overhead_s(session: Session) -> tuple[float, str]:
    measured = session.execute(
        text(
            "SELECT avg(greatest(0, (document->>'wall_s')::float"
            " - (document->'inputs'->'scenario'->>'duration_s')::float)), count(*)"
            " FROM (SELECT document FROM results WHERE document->>'status' = 'ok'"
            " AND document ? 'wall_s' ORDER BY created_at DESC LIMIT 50) r"
        )
    ).one()
    if measured[1]:
        return float(measured[0]), f"measured over {measured[1]} run(s)"
    return get_settings().default_setup_overhead_s, "default"


def plan(session: Session, who: Principal, body: ExperimentIn) -> dict[str, Any]:
    """The revision, the effective scenario, its runs and the estimate, without creating."""
    if body.scenario_id is not None:
        sc = scenarios.get(session, who, body.scenario_id)
    elif body.scenario_name is not None:
        sc = scenarios.get_by_name(session, who, body.scenario_name)
    else:
        raise Invalid("scenario_id: give scenario_id or scenario_name")
    who.check_scenario(sc.name)
    rev = (
        scenarios.revision(session, who, sc.id, body.revision)
        if body.revision
        else sc.revisions[-1]
    )
    spec_data = _effective_spec(rev, body)
    spec = scenarios.parse_spec(spec_data)
    overhead, source = setup_overhead_s(session)
    per_run = spec.duration_s + overhead
    # Counted before anything is expanded: a plan over the limits costs nothing.
    dims = spec.sweeps()
    n_values = math.prod(len(d.values) for d in dims)
    n_runs = len(spec.configurations) * n_values * spec.repetitions
    shape = (
        f"{len(spec.configurations)} configurations x "
        + "".join(
            f"{len(d.values)} sweep{'' if len(dims) == 1 else f'.{i}'}.values x "
            for i, d in enumerate(dims)
        )
        + f"{spec.repetitions} repetitions"
    )
    # A swept duration_s: the mean of its values.
    for d in dims:
        if d.path == "duration_s":
            per_run = sum(float(v) for v in d.values) / len(d.values) + overhead
    limits.check_plan(session, who, n_runs, n_runs * per_run, shape)
    expanded = links.expanded_links(spec)
    runs = expand_runs(spec)
    pinned = links.pin_files(session, expanded, rev.files)
    if body.sweep is not None:
        # The revision's own links passed the check when it was stored; an override's did not.
        links.check_with_emulator(session, expanded, pinned)
    return {
        "scenario": sc,
        "revision": rev,
        "spec": spec.model_dump(mode="json"),
        "runs": runs,
        "files": pinned,
        "estimate": {
            "runs": len(runs),
            "duration_s": spec.duration_s,
            "overhead_s": round(overhead, 3),
            "overhead_source": source,
            "per_run_s": round(per_run, 3),
            "total_s": round(len(runs) * per_run, 3),
        },
    }


def create(
    session: Session, who: Principal, body: ExperimentIn, idempotency_key: str | None
) -> tuple[Experiment, bool]:
    """(experiment, created). A known idempotency key returns the earlier experiment."""
    if idempotency_key is not None:
        if not 1 <= len(idempotency_key) <= 200:
            raise Invalid("Idempotency-Key: must be 1 to 200 characters")
        prior = _by_key(session, who, idempotency_key)
        if prior is not None:
            return prior, False
    p = plan(session, who, body)
    exp = Experiment(
        revision_id=p["revision"].id,
        scenario_name=p["scenario"].name,
        matrix={
            "configurations": [c["name"] for c in p["spec"]["configurations"]],
            "sweep": p["spec"]["sweep"],
            "repetitions": p["spec"]["repetitions"],
        },
        scenario_spec=p["spec"],
        files=p["files"],
        idempotency_key=idempotency_key,
        priority=body.priority,
        state="queued",
        estimate_s=p["estimate"]["total_s"],
        created_by=who.id,
    )
    session.add(exp)
    try:
        session.flush()
    except IntegrityError:  # the same key submitted concurrently: the other one won
        session.rollback()
        prior = _by_key(session, who, idempotency_key or "")
        if prior is None:
            raise
        return prior, False
    for i, spec in enumerate(p["runs"]):
        run = Run(
            experiment_id=exp.id,
            index=i,
            configuration=spec.configuration.name,
            sweep_value=spec.sweep_value,
            repetition=spec.repetition,
            seed=spec.seed,
            spec=spec.model_dump(mode="json"),
            state="queued",
            attempt=0,
        )
        session.add(run)
        session.flush()
        run.job_id = queue.enqueue_run(session, run.id, body.priority)
        events.record(session, run, "queued", 0.0, "queued")
    session.commit()
    return exp, True


def _by_key(session: Session, who: Principal, key: str) -> Experiment | None:
    return session.scalar(
        select(Experiment).where(Experiment.created_by == who.id, Experiment.idempotency_key == key)
    )


def get(session: Session, who: Principal, experiment_id: int) -> Experiment:
    exp = session.get(Experiment, experiment_id)
    if exp is None or not who.may_use(exp.scenario_name):
        raise NotFound(f"experiment {experiment_id} does not exist")
    return exp


def get_head(session: Session, who: Principal, experiment_id: int) -> Experiment:
    """Like get, loading only the columns a cached document's key and the comparison's default
    baseline need (not the scenario spec)."""
    exp = session.get(
        Experiment,
        experiment_id,
        options=[
            load_only(
                Experiment.scenario_name,
                Experiment.state,
                Experiment.finished_at,
                Experiment.matrix,
            )
        ],
    )
    if exp is None or not who.may_use(exp.scenario_name):
        raise NotFound(f"experiment {experiment_id} does not exist")
    return exp


def list_experiments(
    session: Session,
    who: Principal,
    *,
    state: str | None,
    scenario: str | None,
    mine: bool,
    limit: int,
    offset: int,
) -> tuple[list[Experiment], int]:
    q = select(Experiment)
    if state:
        q = q.where(Experiment.state == state)
    if scenario:
        q = q.where(Experiment.scenario_name == scenario)
    if mine:
        q = q.where(Experiment.created_by == who.id)
    if who.scope is not None:
        names = [n for n in _scenario_names(session) if who.may_use(n)]
        q = q.where(Experiment.scenario_name.in_(names))
    total = session.scalar(select(func.count()).select_from(q.subquery())) or 0
    # A page shows no scenario spec, the largest column of an experiment: not read at all.
    page = q.options(defer(Experiment.scenario_spec)).order_by(Experiment.id.desc())
    rows = session.scalars(page.limit(limit).offset(offset)).all()
    return list(rows), total


def _scenario_names(session: Session) -> list[str]:
    return list(session.scalars(select(Experiment.scenario_name).distinct()).all())


def counts(session: Session, experiment_ids: list[int]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {i: {} for i in experiment_ids}
    if experiment_ids:
        for eid, state, n in session.execute(
            select(Run.experiment_id, Run.state, func.count())
            .where(Run.experiment_id.in_(experiment_ids))
            .group_by(Run.experiment_id, Run.state)
        ):
            out[eid][state] = n
    return out


def page_counts(session: Session, exps: list[Experiment]) -> dict[int, dict[str, int]]:
    """counts for a page of experiments. A finished experiment's are fixed until a retry makes it
    run again (a new state, then a new finished_at), so they are kept in doccache under those:
    counting runs by state cost a scan of the runs table per page (most of a list request)."""
    out: dict[int, dict[str, int]] = {}
    missing = []
    for e in exps:
        hit = doccache.documents.get(_counts_key(e)) if e.state in TERMINAL else None
        if hit is None:
            missing.append(e)
        else:
            out[e.id] = json.loads(hit)
    fresh = counts(session, [e.id for e in missing])
    for e in missing:
        out[e.id] = fresh[e.id]
        if e.state in TERMINAL:
            doccache.documents.put(_counts_key(e), json.dumps(fresh[e.id]).encode())
    return out


def _counts_key(e: Experiment) -> tuple[str, int, str, datetime | None]:
    return ("counts", e.id, e.state, e.finished_at)


def refresh_state(session: Session, experiment_id: int) -> str:
    """The experiment's state from its runs' (call in the transaction that changed a run).

    The row is locked FOR NO KEY UPDATE, not FOR UPDATE: the run_events row the same transaction
    inserted already holds a KEY SHARE lock on it (its foreign key), and so may another worker's
    transaction on another run of this experiment; FOR UPDATE conflicts with that lock and two
    such workers deadlocked (seen in make soak), FOR NO KEY UPDATE only waits for the other's
    refresh."""
    exp = session.get(Experiment, experiment_id, with_for_update={"key_share": True})
    assert exp is not None
    states = set(session.scalars(select(Run.state).where(Run.experiment_id == experiment_id)).all())
    if states & {"running"} or (states & {"queued"} and states & set(TERMINAL)):
        new = "running"
    elif states == {"queued"} or not states:
        new = "queued"
    elif "failed" in states:
        new = "failed"
    elif "succeeded" in states:
        new = "succeeded"
    else:
        new = "cancelled"
    if new != exp.state:
        exp.state = new
        exp.finished_at = datetime.now(UTC) if new in TERMINAL else None
    return new


def cancel(session: Session, who: Principal, experiment_id: int) -> Experiment:
    exp = get(session, who, experiment_id)
    who.owns_or_admin(exp.created_by, "experiment")
    runs = session.scalars(
        select(Run)
        .where(Run.experiment_id == exp.id, Run.state.in_(("queued", "running")))
        .with_for_update()
    ).all()
    for run in runs:
        if run.state == "queued":
            run.state = "cancelled"
            run.finished_at = datetime.now(UTC)
            queue.cancel_job(session, run.job_id)
            events.record(session, run, "cancelled", run.progress, "cancelled")
        else:
            run.cancel_requested = True
    refresh_state(session, exp.id)
    session.commit()
    return exp


def retry(session: Session, who: Principal, experiment_id: int) -> tuple[Experiment, int]:
    exp = get(session, who, experiment_id)
    who.owns_or_admin(exp.created_by, "experiment")
    runs = session.scalars(
        select(Run).where(Run.experiment_id == exp.id, Run.state == "failed").with_for_update()
    ).all()
    for run in runs:
        run.state = "queued"
        run.error = None
        run.progress = 0.0
        run.worker_id = run.worker_host = run.testbed_id = None
        run.heartbeat_at = run.started_at = run.finished_at = None
        run.job_id = queue.enqueue_run(session, run.id, exp.priority)
        events.record(session, run, "queued", 0.0, f"retry (after {run.attempt} attempt(s))")
    refresh_state(session, exp.id)
    session.commit()
    return exp, len(runs)
