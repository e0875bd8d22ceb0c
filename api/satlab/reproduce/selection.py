"""Which scenarios a reproduction runs, and each one's scenario for a subset.

The reproduction set is the repository's scenarios/reproductions/*.yaml (one scenario per
experiment of the source papers) and scenarios/geo-rain-comparison.yaml: every one of them with a
`reproduction:` section. `select` narrows it by paper, by claim (an expectation id) and by subset
(`ci`: only the scenarios whose `reproduction.ci` says how to shrink them; `full`: as written).
Only these files are ever read: the service takes no path from a request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from satlab.scenario import (
    Scenario,
    ScenarioError,
    apply_subset,
    parse_scenario,
    resolve_link_paths,
)
from satlab.settings import REPO_ROOT

Subset = Literal["ci", "full"]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
PAPERS = ("eten", "ipern", "garcia", "yang", "ecn", "product")


class SelectionError(ValueError):
    """A selection that matches nothing or names an unknown paper/claim; the message says which."""


@dataclass(frozen=True)
class Entry:
    """One reproduction scenario file as written."""

    path: Path
    text: str
    data: dict[str, Any] = field(hash=False)

    @property
    def name(self) -> str:
        return str(self.data["name"])

    @property
    def paper(self) -> str:
        return str(self.data["reproduction"].get("paper", ""))

    @property
    def in_ci(self) -> bool:
        return self.data["reproduction"].get("ci") is not None

    @property
    def claims(self) -> list[str]:
        return [str(e.get("id")) for e in self.data.get("expectations") or []]

    def scenario(self, subset: Subset, resolve_paths: bool = True) -> Scenario:
        """The scenario to run: as written, or shrunk by its `reproduction.ci` overrides. File
        references become absolute against the file's folder for a local run (as `satlab run`
        resolves them); the service keeps them as upload names."""
        data = dict(self.data)
        if resolve_paths and isinstance(data.get("link"), dict):
            data["link"] = resolve_link_paths(data["link"], self.path.parent)
        try:
            sc = parse_scenario(data)
        except ScenarioError as err:
            raise SelectionError(f"{self.path}: not a valid scenario:\n{err}") from None
        return apply_subset(sc, "ci") if subset == "ci" else sc

    def service_yaml(self, subset: Subset) -> tuple[str, str]:
        """(scenario name, YAML) to import on a service: the file verbatim for the full subset;
        for `ci` the shrunk scenario under the name NAME-ci, so the library's NAME keeps the
        text of the repository (and its owner)."""
        if subset == "full":
            return self.name, self.text
        data = self.scenario("ci", resolve_paths=False).model_dump(mode="json")
        data["name"] = ci_name(self.name)
        return data["name"], yaml.safe_dump(data, sort_keys=False)


def ci_name(name: str) -> str:
    if len(name) > 61:
        raise SelectionError(f"name: {name!r} is too long for its CI variant ({name}-ci: 64 max)")
    return f"{name}-ci"


def repository_files(root: Path) -> list[Path]:
    comparison = root / "geo-rain-comparison.yaml"
    files = sorted((root / "reproductions").glob("*.yaml"))
    return files + ([comparison] if comparison.is_file() else [])


def load_entries(root: Path | None = None) -> list[Entry]:
    """Every repository scenario (under `root`, default the repository's scenarios/) with a
    `reproduction:` section."""
    entries = []
    for path in repository_files(root or SCENARIOS_DIR):
        text = path.read_text()
        try:
            data = yaml.safe_load(text)  # the repository's own files (the service's import of
            # the text still goes through safe_yaml)
        except yaml.YAMLError as err:
            raise SelectionError(f"{path}: not valid YAML: {err}") from None
        if isinstance(data, dict) and isinstance(data.get("reproduction"), dict):
            entries.append(Entry(path, text, data))
    return entries


def select(
    entries: list[Entry], subset: Subset, paper: str | None = None, claim: str | None = None
) -> list[Entry]:
    """The entries of a paper (or all), holding a claim (or all), in the subset; never empty."""
    if paper is not None and paper not in PAPERS:
        raise SelectionError(f"paper: {paper!r} is not one of {', '.join(PAPERS)}")
    chosen = [e for e in entries if paper is None or e.paper == paper]
    if claim is not None:
        chosen = [e for e in chosen if claim in e.claims]
        if not chosen:
            raise SelectionError(
                f"claim: no reproduction scenario{f' of paper {paper}' if paper else ''} has an "
                f"expectation with id {claim!r}"
            )
    if subset == "ci":
        chosen = [e for e in chosen if e.in_ci]
    if not chosen:
        raise SelectionError(
            f"no reproduction scenario matches (subset {subset}"
            f"{f', paper {paper}' if paper else ''}{f', claim {claim}' if claim else ''})"
        )
    return chosen
