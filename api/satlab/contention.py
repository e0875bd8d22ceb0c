"""Contention access on a DAMA return link (`return.dama.contention`, emulator/CONFIG.md): whether
a link has it, and a terminal's split of the requests it sent in contention slots, counted as the
emulator's Prometheus series count them (satlab_emulator_terminal_contention_*_total): tries,
successes, collisions with another terminal of the beam, and collisions that met only the
background load. The emulator's status gives the cumulative tries, collisions and beam
collisions of each terminal (`terminals[].dama`); the rest follow from those. The service stores
each return terminal's split as time series, the run result keeps its final split (`contention`,
docs/run-result.md), and the run view shows both only where the link has contention access."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# The split's fields, in the order the run view shows them.
SPLIT_FIELDS = ("tries", "successes", "beam_collisions", "background_collisions")


def configured(link: Mapping[str, Any]) -> bool:
    """Whether the link's return DAMA has contention access (`contention: {}`: its defaults)."""
    ret = link.get("return")
    dama = ret.get("dama") if isinstance(ret, Mapping) else None
    return isinstance(dama, Mapping) and isinstance(dama.get("contention"), Mapping)


def split(dama: Mapping[str, Any]) -> dict[str, int]:
    """One terminal's split from its DAMA status (an emulator without the beam/background split
    reports no `contention_beam_collisions`: every collision then counts as background)."""
    tries = int(dama.get("contention_attempts", 0))
    collisions = int(dama.get("contention_collisions", 0))
    beam = int(dama.get("contention_beam_collisions", 0))
    return {
        "tries": tries,
        "successes": tries - collisions,
        "beam_collisions": beam,
        "background_collisions": collisions - beam,
    }


def final_split(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each return terminal's split in the newest return record that has terminals (the counters
    are cumulative, so that one holds the run's totals), in the beam's order; none without a
    return beam."""
    newest: Mapping[str, Any] | None = None
    for rec in records:
        if rec.get("direction") == "return" and rec.get("terminals"):
            newest = rec
    if newest is None:
        return []
    return [
        {"terminal": t["name"], **split(t["dama"])}
        for t in newest["terminals"]
        if isinstance(t.get("dama"), Mapping)
    ]
