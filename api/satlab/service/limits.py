"""How much work one experiment, and one token's queued and running work, may ask for.

An experiment is configurations x sweep values x repetitions runs, each estimated at duration_s +
set-up overhead (service/experiments.py). Limits (settings, SATLAB_* in the environment, so the
deployment's admin sets them):
- per experiment: at most max_runs_per_experiment runs and max_experiment_hours of estimated time;
- per token (the submitter): its queued and running runs, with the new experiment's, at most
  max_pending_runs_per_token runs and max_pending_hours_per_token of estimated time.
A plan or submission over a limit is a 422 naming the fields that multiply up and the limit.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from satlab.service.auth import Principal
from satlab.service.errors import Invalid
from satlab.settings import get_settings

# Queued and running runs of a token's experiments and their share of each estimate.
PENDING = text(
    "SELECT count(*), coalesce(sum(e.estimate_s / n.runs), 0)"
    " FROM runs r JOIN experiments e ON e.id = r.experiment_id"
    " JOIN (SELECT experiment_id, count(*) AS runs FROM runs GROUP BY experiment_id) n"
    "   ON n.experiment_id = e.id"
    " WHERE e.created_by = :who AND r.state IN ('queued', 'running')"
)


def check_plan(session: Session, who: Principal, runs: int, total_s: float, shape: str) -> None:
    """Invalid when the plan (`runs` runs, `total_s` estimated, `shape` saying how the runs
    multiply up) passes a limit."""
    st = get_settings()
    errors = []
    if runs > st.max_runs_per_experiment:
        errors.append(
            f"(plan): {runs} runs ({shape}) exceed the limit of {st.max_runs_per_experiment} "
            "runs per experiment"
        )
    if total_s > st.max_experiment_hours * 3600:
        errors.append(
            f"(plan): {total_s / 3600:.1f} h estimated ({shape}) exceed the limit of "
            f"{st.max_experiment_hours:g} h per experiment"
        )
    pending_runs, pending_s = session.execute(PENDING, {"who": who.id}).one()
    if pending_runs + runs > st.max_pending_runs_per_token:
        errors.append(
            f"(plan): {runs} runs with the {pending_runs} this token has queued or running exceed "
            f"its limit of {st.max_pending_runs_per_token}"
        )
    if (pending_s + total_s) > st.max_pending_hours_per_token * 3600:
        errors.append(
            f"(plan): {total_s / 3600:.1f} h with the {pending_s / 3600:.1f} h this token has "
            f"queued or running exceed its limit of {st.max_pending_hours_per_token:g} h"
        )
    if errors:
        raise Invalid(errors)
