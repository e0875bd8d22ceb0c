"""The terrestrial hops' wiring, planned once: which node gets which cable, LAN, address and route
for a run's `path.terrestrial` (README, "Terrestrial hops"). Pure data, no kernel calls; each
testbed kind executes the same plan its own way:

- satlab.testbed.topology: every node a network namespace, LAN p a bridge in its router's;
- satlab.agent.hopbox: the routers, emulators and cross hosts as namespaces inside the compose
  `hops` box (or a hardware hop box), the LANs bridges in the box's own namespace, the gw edge
  across the box's uplinks;
- satlab.testbed.containers.box_plans: the gw and st boxes' addressing (POST /addressing).

The chain, on satlab.agent.namespaces' address plan: positions 1..K on the server side are the
routers r1..rK, position K+1 is the gw edge (`EDGE`). Position p has LAN p (lan_net(p)), its
router at .1 on interface `lan`; hop k is an emulator box hopk between position k's `down` (hop
k's .1) and position k+1's `up` (hop k's .2), on the emulator's ports `gw` and `st`. Hop k's cross
hosts sit on the LANs at its two ends (xkSi at .(100+i) of LAN k, xkCi at .(200+i) of LAN k+1),
so their traffic crosses hop k and no other link. Each router routes toward the satellite by
default and back to what lies behind it through the hop behind; the st edges reach every network
of the chain across the satellite.

Every link carries the run's MTU (the executors apply it). Nothing here shapes traffic: a hop's
delay, rate and queue are its emulator's (satlab.testbed.hops says why not a kernel qdisc).
"""

from __future__ import annotations

from dataclasses import dataclass

from satlab.agent.namespaces import cross_host, hop_box, hop_net, lan_net, router

EDGE = "gw"  # the satellite edge at the chain's client end (position K+1)
PREFIXLEN = 24  # every network of the chain is a /24
# A cross host's address on its LAN: .(base + i), by the end of its hop it is at (server, client).
CROSS_SUFFIX = {"s": 100, "c": 200}
# The address plan's room: hop wires 10.250.11-19 stay below the LANs 10.250.22-; cross hosts
# .101-.154 and .201-.254 on a LAN.
MAX_HOPS = 9
MAX_CROSS_HOSTS = 54


@dataclass(frozen=True)
class Node:
    """A box the hops add (a router, a hop's emulator or a cross host): its role, the address
    other boxes reach it at (None for an emulator) and, for a cross host, its LAN's gateway."""

    role: str
    address: str | None = None
    lan_gateway: str | None = None


@dataclass(frozen=True)
class Lan:
    """LAN `position`: network `net` (first three octets), its router (r_p, or EDGE for the last
    position) at .1 on its `lan` interface, and the cross hosts on it, each on its `eth0`."""

    position: int
    net: str
    router: str
    hosts: tuple[Node, ...]

    @property
    def gateway(self) -> str:
        return f"{self.net}.1"


@dataclass(frozen=True)
class Cable:
    """A point-to-point link from node `a`'s interface `a_if` to node `b`'s `b_if` (a veth; a
    cable out of the box where one end is EDGE)."""

    a: str
    a_if: str
    b: str
    b_if: str


@dataclass(frozen=True)
class Address:
    """An IPv4 address of a node's interface, /PREFIXLEN."""

    node: str
    ifname: str
    address: str

    @property
    def cidr(self) -> str:
        return f"{self.address}/{PREFIXLEN}"


@dataclass(frozen=True)
class Route:
    """A route of `node` to `dst` ("default" or "a.b.c.0/24") through `via`, a neighbour on the
    node's interface `dev`."""

    node: str
    dst: str
    via: str
    dev: str


@dataclass(frozen=True)
class HopPlan:
    """The hops' wiring: its nodes in the order they are made (per hop: router, emulator, cross
    hosts of the server end, of the client end), the LANs of positions 1..K+1, the hops' cables
    (per hop: down side, up side), every address and route, and `far_nets`, the networks of the
    chain beyond the servers' LAN that the st edges route across the satellite."""

    nodes: tuple[Node, ...]
    lans: tuple[Lan, ...]
    cables: tuple[Cable, ...]
    addresses: tuple[Address, ...]
    routes: tuple[Route, ...]
    far_nets: tuple[str, ...]

    @property
    def roles(self) -> list[str]:
        return [n.role for n in self.nodes]

    def addresses_of(self, node: str, ifname: str | None = None) -> list[Address]:
        return [a for a in self.addresses if a.node == node and ifname in (None, a.ifname)]

    def routes_of(self, node: str, dev: str | None = None) -> list[Route]:
        return [r for r in self.routes if r.node == node and dev in (None, r.dev)]


def _position_box(position: int, hops: int) -> str:
    """The box at `position` of the server side: router r_p, or the edge after the last hop."""
    return router(position) if position <= hops else EDGE


def _cross_hosts(hop: int, end: str, count: int) -> list[Node]:
    """Hop `hop`'s cross hosts at its server end (`s`, on LAN hop) or client end (`c`, LAN
    hop+1)."""
    net = lan_net(hop if end == "s" else hop + 1)
    return [
        Node(cross_host(hop, end, i), f"{net}.{CROSS_SUFFIX[end] + i}", f"{net}.1")
        for i in range(1, count + 1)
    ]


def _lans(cross: list[int]) -> tuple[Lan, ...]:
    """LAN p's cross hosts: hop p's server end, then hop p-1's client end."""
    lans = []
    for p in range(1, len(cross) + 2):
        hosts = _cross_hosts(p, "s", cross[p - 1]) if p <= len(cross) else []
        if p > 1:
            hosts += _cross_hosts(p - 1, "c", cross[p - 2])
        lans.append(Lan(p, lan_net(p), _position_box(p, len(cross)), tuple(hosts)))
    return tuple(lans)


def _nodes(cross: list[int]) -> tuple[Node, ...]:
    nodes: list[Node] = []
    for k, count in enumerate(cross, 1):
        nodes += [Node(router(k), f"{lan_net(k)}.1"), Node(hop_box(k))]
        nodes += _cross_hosts(k, "s", count) + _cross_hosts(k, "c", count)
    return tuple(nodes)


def _cables(hops: int) -> tuple[Cable, ...]:
    """Per hop k: position k's `down` to the emulator's `gw`, position k+1's `up` to its `st`."""
    cables: list[Cable] = []
    for k in range(1, hops + 1):
        cables += [
            Cable(_position_box(k, hops), "down", hop_box(k), "gw"),
            Cable(_position_box(k + 1, hops), "up", hop_box(k), "st"),
        ]
    return tuple(cables)


def _addresses(lans: tuple[Lan, ...], nodes: tuple[Node, ...], hops: int) -> tuple[Address, ...]:
    """Each LAN's router at .1, each hop's ends at .1 (down) and .2 (up), each cross host."""
    out = [Address(lan.router, "lan", lan.gateway) for lan in lans]
    for k in range(1, hops + 1):
        out += [
            Address(_position_box(k, hops), "down", f"{hop_net(k)}.1"),
            Address(_position_box(k + 1, hops), "up", f"{hop_net(k)}.2"),
        ]
    out += [Address(n.role, "eth0", n.address) for n in nodes if n.lan_gateway and n.address]
    return tuple(out)


def _behind(position: int) -> list[str]:
    """The networks behind position p, toward the servers: LANs 1..p-1, hop wires 1..p-2."""
    return [lan_net(q) for q in range(1, position)] + [hop_net(q) for q in range(1, position - 1)]


def _routes(nodes: tuple[Node, ...], hops: int) -> tuple[Route, ...]:
    """Positions 1..K: default toward the satellite through their hop's far end; every position
    back to the networks behind through the hop behind it; cross hosts by their LAN's router."""
    out: list[Route] = []
    for p in range(1, hops + 2):
        box = _position_box(p, hops)
        if p <= hops:
            out.append(Route(box, "default", f"{hop_net(p)}.2", "down"))
        out += [Route(box, f"{net}.0/24", f"{hop_net(p - 1)}.1", "up") for net in _behind(p)]
    out += [Route(n.role, "default", n.lan_gateway, "eth0") for n in nodes if n.lan_gateway]
    return tuple(out)


def plan(cross: list[int]) -> HopPlan:
    """The wiring of len(cross) hops, cross[k-1] cross hosts at each end of hop k (scenario
    `path.terrestrial`; 1-3 hops, each validated there). No hops: LAN 1 on the edge, nothing
    else."""
    if len(cross) > MAX_HOPS:
        raise ValueError(f"hops: {len(cross)} hops, the address plan has room for {MAX_HOPS}")
    if bad := [c for c in cross if not 0 <= c <= MAX_CROSS_HOSTS]:
        raise ValueError(f"hops: cross hosts {bad} not within 0..{MAX_CROSS_HOSTS} per hop end")
    hops = len(cross)
    lans, nodes = _lans(cross), _nodes(cross)
    far = [lan_net(p) for p in range(2, hops + 2)] + [hop_net(k) for k in range(1, hops + 1)]
    return HopPlan(
        nodes=nodes,
        lans=lans,
        cables=_cables(hops),
        addresses=_addresses(lans, nodes, hops),
        routes=_routes(nodes, hops),
        far_nets=tuple(far),
    )
