"""The links a scenario expands to (one per sweep point), their file references pinned to
uploads, and the emulator's own check of each.

Every file reference of every expanded link (the base link, each sweep value, an experiment's
sweep override) must name an upload; nothing else reaches the emulator, which reads the files it is
given. The check runs `satlab-emulator --check` on a temporary copy of exactly those uploads, so its
error messages can quote only content the caller uploaded.

A scenario's terrestrial hops (`path.terrestrial`) are emulator links too (satlab.testbed.hops):
each goes through the same pinning and the same check, and their errors name the hop.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from satlab.linkcheck import LinkConfigError, check_link
from satlab.scenario import Scenario as ScenarioSpec
from satlab.scenario import ScenarioError, expand_runs
from satlab.service import files
from satlab.service.errors import Invalid
from satlab.service.models import UploadedFile
from satlab.settings import EMULATOR_BIN


class Link(dict[str, Any]):
    """An emulator configuration and the scenario field it comes from, which its errors name:
    `link` (the satellite link), or `path.terrestrial.N` (a terrestrial hop's emulator link)."""

    def __init__(self, config: dict[str, Any], where: str = "link") -> None:
        super().__init__(config)
        self.where = where


def _where(link: dict[str, Any]) -> str:
    return link.where if isinstance(link, Link) else "link"


def hop_links(spec: ScenarioSpec) -> list[Link]:
    hops = spec.path.terrestrial if spec.path else []
    return [Link(h.link(), f"path.terrestrial.{i}") for i, h in enumerate(hops)]


def expanded_links(spec: ScenarioSpec) -> list[dict[str, Any]]:
    """The distinct links of the scenario's runs (one per sweep point that changes the link),
    then the distinct links of their terrestrial hops."""
    try:
        runs = expand_runs(spec.model_copy(update={"repetitions": 1}))
    except ScenarioError as err:  # a sweep path through a non-mapping
        raise Invalid(str(err)) from None
    distinct: dict[tuple[str, str], dict[str, Any]] = {}
    for link in [Link(r.link) for r in runs] + [
        h for r in runs for h in hop_links(r.scenario or spec)
    ]:
        distinct[(link.where, json.dumps(link, sort_keys=True))] = link
    return list(distinct.values())


def pin_files(
    session: Session, links: list[dict[str, Any]], hashes: dict[str, str] | None = None
) -> dict[str, int]:
    """name -> id of the upload of every file any of the links names: the content a revision
    pinned (`hashes`), else the newest upload of the name."""
    pinned: dict[str, int] = {}
    for link in links:
        pinned.update(files.resolve_refs(session, link, hashes, _where(link)))
    return pinned


def check_with_emulator(
    session: Session, links: list[dict[str, Any]], pinned: dict[str, int]
) -> None:
    """Each link must pass the emulator's own validation, so a bad link field is a 422 now, not a
    failed run later. Skipped where the API runs without the emulator binary (workers validate
    again before their runs)."""
    if not EMULATOR_BIN.is_file():
        return
    rows = {name: session.get(UploadedFile, fid) for name, fid in pinned.items()}
    with tempfile.TemporaryDirectory(prefix="satlab-check-") as tmp:
        paths = files.materialize(rows, Path(tmp))
        for link in links:
            try:
                check_link(files.rewrite_paths(link, paths))
            except LinkConfigError as err:
                raise Invalid([f"{_where(link)}: {err}".replace(tmp + "/", "")]) from None


def pin_and_check(session: Session, spec: ScenarioSpec) -> dict[str, str]:
    """name -> sha256 of the newest upload of every file the scenario's links name, after the
    emulator accepted each link with them: a revision's pins."""
    links = expanded_links(spec)
    pinned = pin_files(session, links)
    check_with_emulator(session, links, pinned)
    return files.content_hashes(session, pinned)


def current_pins(session: Session, spec: ScenarioSpec) -> dict[str, str]:
    """What pin_and_check would pin now, without the emulator's check."""
    return files.content_hashes(session, pin_files(session, expanded_links(spec)))
