"""Scenarios with immutable revisions.

A scenario is created from a YAML document (kept verbatim, comments and all) that must validate
against the scenario schema (satlab.scenario); revising it adds revision N+1 and never changes an
old one, so a run always points at the exact text it ran. File references in every link the
scenario expands to (traces, delay files, tables; sweep values included) must name uploaded files
(service/links.py). A scenario can be deleted while no experiment uses
any of its revisions.
"""

from __future__ import annotations

from typing import Any

import yaml
from sqlalchemy import exists, func, select
from sqlalchemy.orm import Session

from satlab import safe_yaml
from satlab.scenario import Scenario as ScenarioSpec
from satlab.scenario import ScenarioError, parse_scenario
from satlab.service import links
from satlab.service.auth import Principal
from satlab.service.errors import Conflict, Invalid, NotFound, TooLarge
from satlab.service.models import Experiment, Scenario, ScenarioRevision
from satlab.settings import get_settings


def parse_yaml(text: str) -> ScenarioSpec:
    """The validated scenario of a YAML document; Invalid with `field: reason` lines."""
    limit = get_settings().max_scenario_bytes
    if len(text.encode()) > limit:
        raise TooLarge(f"scenario is {len(text.encode())} bytes; the limit is {limit}")
    try:
        data = safe_yaml.load(text)  # no aliases, bounded nesting
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "(document)"
        raise Invalid(f"{where}: not valid YAML: {getattr(err, 'problem', None) or err}") from None
    if not isinstance(data, dict):
        raise Invalid("(scenario): must be a mapping (name, link, traffic, configurations, ...)")
    return parse_spec(data)


def parse_spec(data: Any) -> ScenarioSpec:
    try:
        return parse_scenario(data)
    except ScenarioError as err:
        raise Invalid(str(err)) from None


def spec_yaml(spec: ScenarioSpec) -> str:
    return yaml.safe_dump(spec.model_dump(mode="json", exclude_unset=True), sort_keys=False)


def _add_revision(
    session: Session, sc: Scenario, text: str, spec: ScenarioSpec, who: Principal
) -> ScenarioRevision:
    pins = links.pin_and_check(session, spec)
    number = (
        session.scalar(
            select(func.max(ScenarioRevision.number)).where(ScenarioRevision.scenario_id == sc.id)
        )
        or 0
    ) + 1
    rev = ScenarioRevision(
        scenario_id=sc.id,
        number=number,
        yaml=text,
        spec=spec.model_dump(mode="json"),
        files=pins,
        created_by=who.id,
    )
    session.add(rev)
    session.flush()
    return rev


def create(session: Session, who: Principal, text: str) -> ScenarioRevision:
    spec = parse_yaml(text)
    who.check_scenario(spec.name)
    if session.scalar(select(Scenario.id).where(Scenario.name == spec.name)) is not None:
        raise Conflict(
            f"name: a scenario named {spec.name!r} exists; revise it "
            "(POST /api/scenarios/{id}/revisions) or import (POST /api/scenarios/import)"
        )
    sc = Scenario(name=spec.name, created_by=who.id)
    session.add(sc)
    session.flush()
    rev = _add_revision(session, sc, text, spec, who)
    session.commit()
    return rev


def revise(session: Session, who: Principal, scenario_id: int, text: str) -> ScenarioRevision:
    sc = get(session, who, scenario_id)
    who.owns_or_admin(sc.created_by, "scenario")
    spec = parse_yaml(text)
    if spec.name != sc.name:
        raise Invalid(f"name: {spec.name!r} differs from the scenario's name {sc.name!r}")
    latest = sc.revisions[-1] if sc.revisions else None
    if (
        latest is not None
        and latest.yaml == text
        and latest.files == links.current_pins(session, spec)
    ):
        return latest  # neither the text nor a file it names changed: no new revision
    rev = _add_revision(session, sc, text, spec, who)
    session.commit()
    return rev


def import_yaml(session: Session, who: Principal, text: str) -> tuple[ScenarioRevision, bool]:
    """Creates the scenario or revises the one of the same name; (revision, created)."""
    spec = parse_yaml(text)
    who.check_scenario(spec.name)
    sc_id = session.scalar(select(Scenario.id).where(Scenario.name == spec.name))
    if sc_id is None:
        return create(session, who, text), True
    return revise(session, who, sc_id, text), False


def get(session: Session, who: Principal, scenario_id: int) -> Scenario:
    sc = session.get(Scenario, scenario_id)
    if sc is None or not who.may_use(sc.name):
        raise NotFound(f"scenario {scenario_id} does not exist")
    return sc


def get_by_name(session: Session, who: Principal, name: str) -> Scenario:
    sc = session.scalar(select(Scenario).where(Scenario.name == name))
    if sc is None or not who.may_use(sc.name):
        raise NotFound(f"scenario {name!r} does not exist")
    return sc


def revision(session: Session, who: Principal, scenario_id: int, number: int) -> ScenarioRevision:
    sc = get(session, who, scenario_id)
    for rev in sc.revisions:
        if rev.number == number:
            return rev
    raise NotFound(f"scenario {scenario_id} has no revision {number}")


def latest(session: Session, who: Principal, scenario_id: int) -> ScenarioRevision:
    sc = get(session, who, scenario_id)
    return sc.revisions[-1]


def list_scenarios(
    session: Session, who: Principal, name: str | None, limit: int, offset: int
) -> tuple[list[Scenario], int]:
    q = select(Scenario)
    if name:
        q = q.where(Scenario.name.contains(name, autoescape=True))
    rows = [s for s in session.scalars(q.order_by(Scenario.id.desc())).all() if who.may_use(s.name)]
    return rows[offset : offset + limit], len(rows)


def delete(session: Session, who: Principal, scenario_id: int) -> None:
    sc = get(session, who, scenario_id)
    who.owns_or_admin(sc.created_by, "scenario")
    used = session.scalar(
        select(
            exists().where(
                Experiment.revision_id == ScenarioRevision.id,
                ScenarioRevision.scenario_id == sc.id,
            )
        )
    )
    if used:
        raise Conflict(f"scenario {sc.name!r} is used by experiments and cannot be deleted")
    session.delete(sc)
    session.commit()
