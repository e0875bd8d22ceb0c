"""Reproductions on the service: submit the selected repository scenarios as experiments, and
assemble the report of a commit from its experiments.

- Every reproduction experiment carries the idempotency key `reproduce-COMMIT-SUBSET-NAME` (the
  CLI's `satlab reproduce --service` sets the same keys), so a second submission for the commit
  finds the first one whoever submits it, and the report finds a commit's experiments by key.
- Only the repository's scenario files (reproduce/selection.py) are read, never a path from a
  request; the trace and table files they name are uploaded from beside them (the same content
  again adds nothing), and each scenario is imported unless the library's latest revision already
  has its text: the full subset under its own name, the CI subset as NAME-ci. Scenarios and files
  are the library's (service/library.py's system identity owns them, as the synced repository
  scenarios), so any submitter's next commit can revise them; the experiments are the caller's.
  The plan limits (service/limits.py) are checked for the whole selection before anything is
  created.
- The report gathers, for the commit (default: the newest one with a reproduction experiment),
  the newest experiment of each reproduction scenario, each part dated with its commit and time.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab import __version__
from satlab.reproduce import report, selection
from satlab.reproduce.parts import seeds, verdicts_for
from satlab.reproduce.selection import (
    Entry,
    SelectionError,
    Subset,
    load_entries,
)
from satlab.reproduce.selection import (
    select as select_entries,
)
from satlab.scenario import expand_runs, link_file_kind, link_file_refs
from satlab.service import experiments, files, library, limits, links, results, scenarios
from satlab.service.auth import Principal
from satlab.service.errors import Invalid, NotFound
from satlab.service.experiments import ExperimentIn
from satlab.service.models import Experiment, Result, Run, Scenario

KEY_RE = re.compile(r"^reproduce-(?P<commit>[0-9A-Za-z]+)-(?P<subset>ci|full)-(?P<name>.+)$")


def key(commit: str, subset: str, name: str) -> str:
    return f"reproduce-{commit}-{subset}-{name}"


def _upload_files(session: Session, who: Principal, entry: Entry) -> None:
    base = selection.SCENARIOS_DIR.resolve()
    for where, k, ref in link_file_refs(entry.data.get("link") or {}):
        path = (entry.path.parent / ref).resolve()
        if not path.is_relative_to(base):
            raise Invalid(f"{entry.path.name}: {where}: {ref!r} is outside the scenarios folder")
        files.upload(session, who, ref, link_file_kind(where, k), path.read_bytes())


def _scenario_id(
    session: Session, who: Principal, owner: Principal, entry: Entry, subset: Subset
) -> int:
    name, text = entry.service_yaml(subset)
    who.check_scenario(name)
    sc = session.scalar(select(Scenario).where(Scenario.name == name))
    if sc is not None and sc.revisions:
        latest = sc.revisions[-1]
        spec = scenarios.parse_yaml(text)
        if latest.yaml == text and latest.files == links.current_pins(session, spec):
            return sc.id  # the library has it as it is (whoever owns it)
    rev, _ = scenarios.import_yaml(session, owner, text)
    return rev.scenario_id


def submit(
    session: Session,
    who: Principal,
    commit: str,
    subset: Subset,
    paper: str | None = None,
    claim: str | None = None,
) -> list[tuple[Experiment, bool]]:
    """(experiment, created) per selected scenario, in selection order."""
    try:
        chosen = select_entries(load_entries(selection.SCENARIOS_DIR), subset, paper, claim)
        shrunk = {e.name: e.scenario(subset, resolve_paths=False) for e in chosen}
    except SelectionError as err:
        raise Invalid(str(err)) from None
    prior = {
        e.name: session.scalar(
            select(Experiment)
            .where(Experiment.idempotency_key == key(commit, subset, e.name))
            .order_by(Experiment.id)
            .limit(1)
        )
        for e in chosen
    }
    new = [e for e in chosen if prior[e.name] is None]
    if new:
        overhead, _ = experiments.setup_overhead_s(session)
        n_runs = {e.name: len(expand_runs(shrunk[e.name])) for e in new}
        total_s = sum(n_runs[e.name] * (shrunk[e.name].duration_s + overhead) for e in new)
        shape = " + ".join(f"{n_runs[e.name]} ({e.name})" for e in new)
        limits.check_plan(session, who, sum(n_runs.values()), total_s, shape)
    owner = library.system_principal(session)
    out = []
    for e in chosen:
        exp = prior[e.name]
        if exp is not None:
            out.append((exp, False))
            continue
        _upload_files(session, owner, e)
        body = ExperimentIn(scenario_id=_scenario_id(session, who, owner, e, subset))
        out.append(experiments.create(session, who, body, key(commit, subset, e.name)))
    return out


def _kernel(session: Session, exp: Experiment) -> str | None:
    doc = session.scalar(
        select(Result.document)
        .join(Run, Run.id == Result.run_id)
        .where(Run.experiment_id == exp.id)
        .limit(1)
    )
    kernel = ((doc or {}).get("inputs") or {}).get("versions", {}).get("kernel")
    return None if kernel is None else str(kernel)


def part(session: Session, exp: Experiment, commit: str, subset: str, name: str) -> dict[str, Any]:
    spec = exp.scenario_spec
    rows = results.aggregate(session, exp)
    return {
        "scenario": name,
        "paper": (spec.get("reproduction") or {}).get("paper", "unknown"),
        "subset": subset,
        "commit": commit,
        "at": (exp.finished_at or exp.created_at).isoformat(timespec="seconds"),
        "state": exp.state,
        "experiment_id": exp.id,
        "results_dir": None,
        "seeds": seeds(spec),
        "kernel": _kernel(session, exp),
        "satlab": __version__,
        "spec": spec,
        "rows": rows,
        "verdicts": verdicts_for(spec, rows),
    }


def assemble(session: Session, who: Principal, commit: str | None = None) -> dict[str, Any]:
    """The report of `commit` (default: the newest commit with reproduction experiments)."""
    newest_first = session.scalars(
        select(Experiment)
        .where(Experiment.idempotency_key.like("reproduce-%"))
        .order_by(Experiment.id.desc())
    ).all()
    latest: dict[str, tuple[Experiment, str]] = {}
    for exp in newest_first:
        m = KEY_RE.match(exp.idempotency_key or "")
        if m is None or not who.may_use(exp.scenario_name):
            continue
        commit = commit or m["commit"]
        if m["commit"] == commit and m["name"] not in latest:
            latest[m["name"]] = (exp, m["subset"])
    if commit is None or not latest:
        raise NotFound(
            "no reproduction experiments"
            + (f" for commit {commit}" if commit else "")
            + ": start them with POST /api/reproductions or `satlab reproduce`"
        )
    parts = [part(session, exp, commit, subset, name) for name, (exp, subset) in latest.items()]
    return report.assemble(parts, commit)
