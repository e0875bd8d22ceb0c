"""The scenario library: the repository's scenarios (scenarios/*.yaml, the paper reproductions in
scenarios/reproductions/*.yaml) imported into the service, so a new deployment offers them from
its first start. `satlab library sync` runs it (scripts/run.sh, the service image's command), after
the migration and before the API answers.

Each scenario and every file its link names (traces, delay files, tables, uploaded under the name
the scenario uses, e.g. `traces/quickstart-fade.txt`) is owned by the system identity
`satlab-library`: an admin token row revoked at birth, so nobody can sign in with it. Users see the
library scenarios, submit them and copy them (a scenario of another name with the same text); a
submitter cannot revise them or add a version of their files (service/scenarios.py, files.py:
the first owner of a name keeps it). Syncing again is idempotent: a scenario gets a new revision
only when its text or the content of a file it names changed. A scenario of the same name that a
user created before the library existed is left alone (reported, not taken over).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from satlab import safe_yaml
from satlab.scenario import link_file_kind, link_file_refs
from satlab.service import auth, files, scenarios
from satlab.service.auth import Principal
from satlab.service.errors import Invalid, ServiceError
from satlab.service.models import ApiToken, Scenario

SYSTEM_NAME = "satlab-library"
LIBRARY_GLOBS = ("scenarios/*.yaml", "scenarios/reproductions/*.yaml")


@dataclass(frozen=True)
class Outcome:
    path: str  # relative to the repository
    name: str
    action: str  # created, revised, unchanged, kept (a user's scenario of that name), failed
    detail: str = ""


def system_principal(session: Session) -> Principal:
    """The library's owner, made on first use: an admin token that was revoked when it was made
    (its secret is thrown away too), so it owns rows but never authenticates."""
    row = session.scalar(
        select(ApiToken).where(ApiToken.name == SYSTEM_NAME).order_by(ApiToken.id).limit(1)
    )
    if row is None:
        row, _ = auth.create_token(session, SYSTEM_NAME, "admin")
        auth.revoke_token(session, row.id)
        session.commit()
    return Principal(row.id, row.name, row.role, None, 0)


def library_files(root: Path) -> list[Path]:
    return [p for pattern in LIBRARY_GLOBS for p in sorted(root.glob(pattern))]


def sync(session: Session, root: Path) -> list[Outcome]:
    """Imports every library scenario under `root` (the repository); one Outcome each. A scenario
    that fails (invalid, a file missing) is reported and the others still go in."""
    who = system_principal(session)
    return [_sync_one(session, who, root, path) for path in library_files(root)]


def _sync_one(session: Session, who: Principal, root: Path, path: Path) -> Outcome:
    rel = str(path.relative_to(root))
    text = path.read_text()
    try:
        spec = scenarios.parse_yaml(text)
        existing = session.scalar(select(Scenario).where(Scenario.name == spec.name))
        if existing is not None and existing.created_by != who.id:
            return Outcome(rel, spec.name, "kept", f"created by token {existing.created_by}")
        _upload_files(
            session, who, root / "scenarios", path, safe_yaml.load(text).get("link") or {}
        )
        if existing is None:
            scenarios.create(session, who, text)
            return Outcome(rel, spec.name, "created")
        before = existing.revisions[-1].id
        rev = scenarios.revise(session, who, existing.id, text)
        return Outcome(rel, spec.name, "unchanged" if rev.id == before else "revised")
    except (ServiceError, OSError) as err:
        session.rollback()
        return Outcome(rel, path.stem, "failed", str(err))


def _upload_files(
    session: Session, who: Principal, folder: Path, scenario: Path, link: object
) -> None:
    """Uploads each file the link names (relative to the scenario file, inside the scenarios
    folder) under the name written in the scenario; unchanged content is not a new version
    (files.upload finds it)."""
    for where, key, ref in link_file_refs(link):
        path = (scenario.parent / ref).resolve()
        if not path.is_relative_to(folder.resolve()):
            raise Invalid(f"{where}: {ref!r} is outside the scenarios folder")
        files.upload(session, who, ref, link_file_kind(where, key), path.read_bytes())
