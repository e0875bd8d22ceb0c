"""A scenario's `hosts.terminals` checked against its link's beam (emulator/CONFIG.md, Beam): both
must name the same terminals, so every beam terminal has hosts and every group of hosts a terminal.
The testbed's side (an st edge per terminal, the prefixes it fills in) is satlab.testbed.terminals.
"""

from __future__ import annotations

from typing import Any


def _beam(link: dict[str, Any]) -> dict[str, Any] | None:
    forward = link.get("forward")
    beam = forward.get("beam") if isinstance(forward, dict) else None
    return beam if isinstance(beam, dict) else None


def beam_terminals(link: dict[str, Any]) -> list[dict[str, Any]] | None:
    """link.forward.beam.terminals, None without a beam."""
    beam = _beam(link)
    if beam is None:
        return None
    return [t for t in beam.get("terminals", []) if isinstance(t, dict)]


def check_terminal_clients(names: list[str], counts: list[int], clients: int, limit: int) -> None:
    """hosts.terminals' names are unique, their clients within the limit, and hosts.clients (when
    the scenario gave it, else it is their sum) matches."""
    for i, n in enumerate(names):
        if n in names[:i]:
            raise ValueError(f"hosts.terminals.{i}.name: {n!r} is the name of an earlier terminal")
    total = sum(counts)
    if total > limit:
        raise ValueError(
            f"hosts.terminals: {total} clients in all, at most {limit} (hosts.clients' limit)"
        )
    if clients != total:
        raise ValueError(
            f"hosts.clients: {clients}, but hosts.terminals hold {total} clients: leave "
            "hosts.clients out (it is their sum) or make it match"
        )


def check_against_link(names: list[str] | None, link: dict[str, Any]) -> None:
    """hosts.terminals (its names, None when absent) and the link's beam name the same terminals;
    without hosts.terminals a beam of several terminals must say by prefixes where hosts are, and
    cannot be on VLANs."""
    terms = beam_terminals(link)
    if names is None:
        if terms and len(terms) > 1 and any(t.get("vlan") is not None for t in terms):
            # the testbed makes each VLAN the access port of an st edge of its own, and which
            # clients sit behind which edge only hosts.terminals says (satlab.testbed.terminals)
            raise ValueError(
                f"hosts.terminals: the {len(terms)} terminals of link.forward.beam are on VLANs "
                "and the testbed gives each VLAN its own st edge: say which clients sit behind "
                "each terminal (hosts.terminals: [{name, clients}])"
            )
        if terms and len(terms) > 1 and not any(t.get("prefixes") for t in terms):
            raise ValueError(
                f"hosts.terminals: link.forward.beam has {len(terms)} terminals and none has "
                "prefixes: say which clients sit behind each (hosts.terminals: [{name, clients}])"
                " or give the terminals' prefixes"
            )
        return
    if terms is None:
        raise ValueError(
            "hosts.terminals: needs link.forward.beam.terminals with the same names "
            "(emulator/CONFIG.md, Beam)"
        )
    beam = [str(t.get("name")) for t in terms]
    for i, n in enumerate(names):
        if n not in beam:
            raise ValueError(f"hosts.terminals.{i}.name: {n!r} is no terminal of link.forward.beam")
    for i, n in enumerate(beam):
        if n not in names:
            raise ValueError(
                f"link.forward.beam.terminals.{i}.name: terminal {n!r} has no hosts.terminals "
                "entry (give it one with its clients)"
            )
