"""Prometheus exposition (text format 0.0.4) computed from the database at scrape time, so every
API process gives the same numbers: queue depth, runs and experiments by state, run durations
(histogram over finished runs), worker liveness."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from satlab.service.models import EXPERIMENT_STATES, RUN_STATES
from satlab.settings import get_settings

DURATION_BUCKETS_S = (10, 30, 60, 120, 300, 600, 1800, 3600)


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def render(session: Session) -> str:
    out: list[str] = []

    def head(name: str, kind: str, help_: str) -> None:
        out.append(f"# HELP {name} {help_}")
        out.append(f"# TYPE {name} {kind}")

    runs: dict[str, int] = dict(
        session.execute(text("SELECT state, count(*) FROM runs GROUP BY state")).all()
    )
    head("satlab_queue_depth", "gauge", "Runs waiting for a worker.")
    out.append(f"satlab_queue_depth {runs.get('queued', 0)}")
    head("satlab_runs", "gauge", "Runs by state.")
    for st in RUN_STATES:
        out.append(f'satlab_runs{{state="{st}"}} {runs.get(st, 0)}')
    exps: dict[str, int] = dict(
        session.execute(text("SELECT state, count(*) FROM experiments GROUP BY state")).all()
    )
    head("satlab_experiments", "gauge", "Experiments by state.")
    for st in EXPERIMENT_STATES:
        out.append(f'satlab_experiments{{state="{st}"}} {exps.get(st, 0)}')

    cols = ", ".join(f"count(*) FILTER (WHERE d <= {b})" for b in DURATION_BUCKETS_S)
    row = session.execute(
        text(
            f"SELECT {cols}, count(*), coalesce(sum(d), 0) FROM (SELECT extract(epoch FROM "
            "finished_at - started_at) AS d FROM runs WHERE state IN ('succeeded', 'failed') "
            "AND started_at IS NOT NULL AND finished_at IS NOT NULL) x"
        )
    ).one()
    head("satlab_run_duration_seconds", "histogram", "Wall time of finished runs.")
    for b, n in zip(DURATION_BUCKETS_S, row, strict=False):
        out.append(f'satlab_run_duration_seconds_bucket{{le="{b}"}} {n}')
    out.append(f'satlab_run_duration_seconds_bucket{{le="+Inf"}} {row[-2]}')
    out.append(f"satlab_run_duration_seconds_count {row[-2]}")
    out.append(f"satlab_run_duration_seconds_sum {float(row[-1]):.3f}")

    # A worker that stopped, or whose heartbeat is older than stale_after_s (killed), is gone:
    # its series disappear rather than report it busy forever.
    stale = get_settings().stale_after_s
    alive = session.execute(
        text(
            "SELECT id, extract(epoch FROM now() - heartbeat_at), current_run_id FROM workers"
            " WHERE stopped_at IS NULL AND heartbeat_at > now() - make_interval(secs => :stale)"
            " ORDER BY id"
        ),
        {"stale": stale},
    ).all()
    head("satlab_workers_alive", "gauge", f"Workers with a heartbeat in the last {stale:g} s.")
    out.append(f"satlab_workers_alive {len(alive)}")
    head("satlab_worker_heartbeat_age_seconds", "gauge", "Seconds since each live worker's beat.")
    for w in alive:
        out.append(
            f'satlab_worker_heartbeat_age_seconds{{worker="{_esc(w[0])}"}} {float(w[1]):.1f}'
        )
    head("satlab_worker_busy", "gauge", "1 when the live worker is running a run.")
    for w in alive:
        out.append(f'satlab_worker_busy{{worker="{_esc(w[0])}"}} {int(w[2] is not None)}')
    jobs = session.execute(
        text("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY status")
    ).all()
    head("satlab_queue_jobs", "gauge", "Queue jobs (procrastinate) by status.")
    for status, n in jobs:
        out.append(f'satlab_queue_jobs{{status="{status}"}} {n}')
    return "\n".join(out) + "\n"
