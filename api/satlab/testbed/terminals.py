"""The testbed's plan for a scenario's `hosts.terminals`: which clients sit behind which satellite
terminal, each terminal's st edge, and the addresses the emulator's beam finds it by.

With one terminal (no `hosts.terminals`, or a list of one) the testbed is the usual one: one st edge
`st` with every client on CLIENT_NET. With several, terminal k (1-based, in `hosts.terminals`
order) gets its own st edge namespace and client LAN, and the edges share the emulator's one st
port through an L2 switch (a Linux bridge in namespace `sw`):

    gw --sat0~~[emu: gw | st]~~[sw bridge]--sat0 st  --[lan]-- cli1..cliA   (terminal 1)
                                          `--sat0 st2 --[lan]-- cli(A+1)..  (terminal 2) ...

Clients are numbered across terminals in order (terminal 1's first), so `traffic[].client` keeps
meaning one host. The forward beam tells terminals apart by destination prefix, the return beam by
source prefix (emulator/CONFIG.md, Beam); the runner gives each beam terminal without `prefixes`
its client LAN and its st edge's satellite-side address (that address is what ARP between gw and
the edge asks for, and ARP goes by its target / sender address).

Address choice (satlab.agent.namespaces' plan leaves room): terminal 1 keeps CLIENT_NET
(10.250.3.0/24) and st edge address SAT_NET.2, so one-terminal runs are unchanged; terminal
k >= 2 has the LAN 10.250.(40+k).0/24 (free of the server side's 10.250.1-29) and st edge
address SAT_NET.(1+k).

When the beam's terminals have VLAN IDs (link.forward.beam.terminals[].vlan), the emulator's st
port is an 802.1Q trunk: it tags each terminal's frames with its VLAN ID and takes a frame
arriving with a VLAN ID for that terminal's. The switch `sw` then is an 802.1Q switch
(satlab.testbed.vlan_switch): each st edge's port an access port of its terminal's VLAN, the
emulator's port the trunk. `vlans` gives each testbed terminal its VLAN ID, and refuses before
any namespace is built what the emulator would refuse only once started (a VLAN used twice,
VLANs on some terminals only) and what the testbed cannot build (several terminals on VLANs
without hosts.terminals: one st edge cannot be several VLANs' access port).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from satlab.agent.namespaces import CLIENT_NET, SAT_NET
from satlab.beam_hosts import beam_terminals
from satlab.scenario import BulkTcp, Hosts, ShortFlows, UdpCross

SWITCH = "sw"  # the namespace of the switch between the emulator's st port and the st edges
FIRST_EXTRA_LAN = 40  # terminal k >= 2: LAN 10.250.(FIRST_EXTRA_LAN + k).0/24
VLAN_IDS = range(1, 4095)  # 802.1Q: 0 means "no VLAN" and 4095 is reserved


class TerminalsError(ValueError):
    """A scenario's terminals the testbed cannot build; the message names the field."""


def edge_role(k: int) -> str:
    """The st edge of terminal k (1-based): `st` for the first, as in a one-terminal testbed."""
    return "st" if k == 1 else f"st{k}"


def client_net(k: int) -> str:
    return CLIENT_NET if k == 1 else f"10.250.{FIRST_EXTRA_LAN + k}"


def edge_address(k: int) -> str:
    """Terminal k's st edge address on the satellite side (the gw edge is SAT_NET.1)."""
    return f"{SAT_NET}.{1 + k}"


@dataclass(frozen=True)
class Terminal:
    edge: str  # the st edge's role
    net: str  # the client LAN, first three octets
    sat_address: str
    clients: list[int]  # global client numbers (cli<n>)

    @property
    def prefixes(self) -> list[str]:
        """Where its hosts are: its LAN and its edge's satellite address (what the beam tells
        terminals apart by)."""
        return [f"{self.net}.0/24", f"{self.sat_address}/32"]


def plan(counts: list[int]) -> list[Terminal]:
    """Each terminal's edge, LAN and clients from its client count, in hosts.terminals order
    (an empty list: one terminal)."""
    out, first = [], 1
    for k, count in enumerate(counts or [0], 1):
        clients = list(range(first, first + count))
        out.append(Terminal(edge_role(k), client_net(k), edge_address(k), clients))
        first += count
    return out


def counts(hosts: Hosts) -> list[int]:
    """The testbed's terminals (client counts) for a scenario's hosts; [] for one terminal."""
    terms = hosts.terminals or []
    return [t.clients for t in terms] if len(terms) > 1 else []


def _by_name(hosts: Hosts) -> dict[str, Terminal]:
    """Each hosts.terminals entry's plan, by its name (empty without them)."""
    terms = hosts.terminals or []
    if not terms:  # plan([]) is the one default terminal, which has no name
        return {}
    return dict(zip((t.name for t in terms), plan([t.clients for t in terms]), strict=True))


def terminal_of_client(hosts: Hosts, client: int) -> str | None:
    """The name of the hosts.terminals entry client `client` sits behind (None without them)."""
    return next((n for n, t in _by_name(hosts).items() if client in t.clients), None)


def flow_terminal(hosts: Hosts, t: BulkTcp | ShortFlows | UdpCross) -> dict[str, str]:
    """`{"terminal": name}` for a flow summary: the terminal its client sits behind (nothing
    without hosts.terminals, or for a terrestrial hop's cross traffic)."""
    name = None if t.hop is not None else terminal_of_client(hosts, t.client)
    return {"terminal": name} if name else {}


def fill_beam_prefixes(cfg: dict[str, Any], hosts: Hosts) -> None:
    """Give each beam terminal without `prefixes` those of its hosts (forward and, through the
    same list, a return beam's); a scenario's own prefixes stay as written."""
    beam = cfg.get("forward", {}).get("beam")
    if not beam or not hosts.terminals or len(hosts.terminals) < 2:
        return
    by_name = _by_name(hosts)
    for term in beam.get("terminals", []):
        t = by_name.get(term.get("name"))
        if t is not None and not term.get("prefixes"):
            term["prefixes"] = t.prefixes


def vlans(hosts: Hosts, link: dict[str, Any]) -> list[int] | None:
    """Each testbed terminal's VLAN ID (in `plan` order: hosts.terminals', or the one terminal
    without them) when the beam's terminals have VLANs; None when they have none."""
    beam = beam_terminals(link) or []
    if all(t.get("vlan") is None for t in beam):
        return None
    for i, t in enumerate(beam):
        _check_vlan(beam, i, t)
    by_name = {t.get("name"): int(t["vlan"]) for t in beam}
    names = [t.name for t in hosts.terminals or []]
    if not names and len(beam) > 1:
        raise TerminalsError(
            f"hosts.terminals: the {len(beam)} terminals of link.forward.beam are on VLANs and "
            "the testbed gives each VLAN its own st edge: say which clients sit behind each "
            "terminal (hosts.terminals: [{name, clients}])"
        )
    return [by_name[n] for n in names] if names else list(by_name.values())


def _check_vlan(beam: list[dict[str, Any]], i: int, t: dict[str, Any]) -> None:
    """Beam terminal i's vlan (some terminal has one): present, an 802.1Q VLAN ID, its own."""
    field = f"link.forward.beam.terminals.{i}.vlan"
    v = t.get("vlan")
    if v is None:
        other = next(o.get("name") for o in beam if o.get("vlan") is not None)
        raise TerminalsError(
            f"{field}: terminal {t.get('name')!r} has no vlan and {other!r} has one: give "
            "every terminal a vlan, or none"
        )
    if isinstance(v, bool) or not isinstance(v, int) or v not in VLAN_IDS:
        raise TerminalsError(f"{field}: {v!r} is not a VLAN ID (an integer from 1 to 4094)")
    earlier = next((o.get("name") for o in beam[:i] if o.get("vlan") == v), None)
    if earlier is not None:
        raise TerminalsError(f"{field}: VLAN {v} is terminal {earlier!r}'s already")
