"""Uploaded link files: attenuation traces, delay files, MODCOD and PER tables.

Each is checked by the emulator's own parsers (`satlab-emulator --check-file`, through
satlab.linkmodel), so an upload that the emulator would refuse is refused at once, with the line
and the limit (the formats: emulator/CONFIG.md).

Files are immutable: uploading a name again with other content adds a version. A scenario
revision pins the content (sha256) of every file its links name when it is stored, and its
experiments use exactly that content (service/links.py).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from satlab import linkmodel
from satlab.scenario import link_file_refs, map_link_files
from satlab.service.auth import Principal
from satlab.service.errors import Forbidden, Invalid, NotFound, TooLarge, link_model_answers
from satlab.service.models import FILE_KINDS, UploadedFile
from satlab.settings import get_settings

# Upload names (see upload()): segments joined by single '/', each a letter or digit then up to 63
# of [A-Za-z0-9_.-] (as scenario names, satlab.scenario), none a Windows device name; 200 in all.
NAME_RE = re.compile(
    r"""
    ^(?=.{1,200}\Z)
    (?!(?:.*/)?(?:CON|PRN|AUX|NUL|COM[1-9]|LPT[1-9])(?:\.[^/]*)?(?:/|\Z))
    [A-Za-z0-9][A-Za-z0-9_.-]{0,63}
    (?:/[A-Za-z0-9][A-Za-z0-9_.-]{0,63})*\Z
    """,
    re.VERBOSE | re.IGNORECASE,
)


def validate(kind: str, content: bytes) -> int:
    """The number of data rows; raises Invalid naming the line of the first problem."""
    if kind not in FILE_KINDS:
        raise Invalid(f"kind: must be one of {', '.join(FILE_KINDS)}")
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as err:
        line = content[: err.start].count(b"\n") + 1
        raise Invalid(f"line {line}: not UTF-8 text") from None
    with link_model_answers(unavailable="the upload check failed: "):
        return linkmodel.check_file(kind, text)


def upload(session: Session, who: Principal, name: str, kind: str, content: bytes) -> UploadedFile:
    """Store a file under `name`, a relative path: segments separated by single '/', each starting
    with a letter or digit followed by up to 63 letters, digits, '_', '.' or '-' (so no '.', '..',
    '-rf', '.hidden', empty segment), none a Windows device name (CON, PRN, AUX, NUL, COM1-9,
    LPT1-9, any case, with or without an extension), at most 200 characters. Uploads are written
    out under their names for runs, so a name may not also be a directory of another upload's name
    (`a` and `a/b`)."""
    limit = get_settings().max_upload_bytes
    if len(content) > limit:
        raise TooLarge(f"file is {len(content)} bytes; the limit is {limit}")
    if not NAME_RE.match(name):
        raise Invalid(
            f"name: {name!r} is not a valid file name: segments separated by single '/', each a "
            "letter or digit followed by up to 63 of A-Z a-z 0-9 _ . -, none a Windows device "
            "name (CON, PRN, AUX, NUL, COM1-9, LPT1-9), 200 characters at most"
        )
    if kind not in FILE_KINDS:
        raise Invalid(f"kind: must be one of {', '.join(FILE_KINDS)}")
    try:
        validate(kind, content)
    except Invalid as err:
        raise Invalid([f"{name}: {e}" for e in err.errors]) from None
    digest = hashlib.sha256(content).hexdigest()
    existing = session.scalar(
        select(UploadedFile).where(UploadedFile.name == name, UploadedFile.sha256 == digest)
    )
    if existing is not None:
        return existing
    _check_owner(session, who, name)
    # One upload at a time from here to the commit (a transaction-scoped lock), so two concurrent
    # uploads `a` and `a/b` cannot both pass the clash check below.
    session.execute(select(func.pg_advisory_xact_lock(0x5A7_F11E5)))
    parents = ["/".join(name.split("/")[:i]) for i in range(1, name.count("/") + 1)]
    clash = session.scalar(
        select(UploadedFile.name)
        .where(
            UploadedFile.name.in_(parents)
            | UploadedFile.name.startswith(name + "/", autoescape=True)
        )
        .limit(1)
    )
    if clash is not None:
        raise Invalid(
            f"name: {name!r} clashes with the uploaded file {clash!r}: "
            "a name cannot be both a file and a directory of other files"
        )
    row = UploadedFile(
        name=name,
        kind=kind,
        size_bytes=len(content),
        sha256=digest,
        content=content,
        created_by=who.id,
    )
    session.add(row)
    session.commit()
    return row


def _check_owner(session: Session, who: Principal, name: str) -> None:
    """A name belongs to whoever uploaded it first: only they (or an admin) add versions, so
    nobody changes the files another submitter's scenarios name."""
    first = session.execute(
        select(UploadedFile.created_by)
        .where(UploadedFile.name == name)
        .order_by(UploadedFile.id)
        .limit(1)
    ).first()
    if first is None:
        return  # a new name
    if who.role != "admin" and first.created_by != who.id:
        raise Forbidden(
            f"name: {name!r} belongs to another user's uploads; only they or an admin may add "
            "a version (choose another name)"
        )


def get(session: Session, file_id: int) -> UploadedFile:
    row = session.get(UploadedFile, file_id)
    if row is None:
        raise NotFound(f"file {file_id} does not exist")
    return row


def list_files(
    session: Session, name: str | None, limit: int, offset: int
) -> tuple[list[UploadedFile], int]:
    q = select(UploadedFile)
    if name:
        q = q.where(UploadedFile.name == name)
    total = session.scalar(select(func.count()).select_from(q.subquery())) or 0
    rows = session.scalars(q.order_by(UploadedFile.id.desc()).limit(limit).offset(offset)).all()
    return list(rows), total


def resolve_refs(
    session: Session, link: Any, hashes: dict[str, str] | None = None, where: str = "link"
) -> dict[str, int]:
    """The upload of every file the link names: the one with the content hash in `hashes` (a
    revision's pins), else the newest of that name. Invalid naming each field whose file was
    never uploaded."""
    hashes = hashes or {}
    pinned: dict[str, int] = {}
    errors = []
    for field, _, name in link_file_refs(link, where):
        if name in pinned:
            continue
        q = select(UploadedFile.id).where(UploadedFile.name == name)
        if name in hashes:
            q = q.where(UploadedFile.sha256 == hashes[name])
        row_id = session.scalar(q.order_by(UploadedFile.id.desc()).limit(1))
        if row_id is None:
            errors.append(
                f"{field}: no uploaded file named {name!r} "
                "(upload it first: POST /api/files?name=...&kind=...)"
            )
        else:
            pinned[name] = row_id
    if errors:
        raise Invalid(errors)
    return pinned


def content_hashes(session: Session, pinned: dict[str, int]) -> dict[str, str]:
    """name -> sha256 of pinned uploads."""
    rows = session.execute(
        select(UploadedFile.name, UploadedFile.sha256).where(UploadedFile.id.in_(pinned.values()))
    )
    return {name: digest for name, digest in rows}


def materialize(rows: dict[str, UploadedFile | None], root: Path) -> dict[str, str]:
    """Write uploaded files under root by their names; returns name -> path on disk."""
    paths = {}
    for name, f in rows.items():
        assert f is not None, f"file {name} vanished"
        target = root / name
        # Upload names are relative (NAME_RE); checked again here because the worker writes as root.
        if not target.resolve().is_relative_to(root.resolve()):
            raise Invalid(f"file name {name!r} leads outside the run's directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(f.content)
        paths[name] = str(target)
    return paths


def rewrite_paths(link: Any, paths: dict[str, str], where: str = "link") -> Any:
    """The link with every file reference replaced by its path on disk. A reference that is not
    one of the materialised uploads is refused (Invalid naming the field), never passed on: the
    emulator runs as root and would read whatever path it was given."""
    return map_link_files(link, lambda field, name: _materialised(paths, name, field), where)


def _materialised(paths: dict[str, str], name: str, where: str) -> str:
    if name not in paths:
        raise Invalid(f"{where}: {name!r} is not one of the experiment's uploaded files")
    return paths[name]
