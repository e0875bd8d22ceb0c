"""The terrestrial hops' wiring plan (satlab.agent.hop_plan), which the namespace testbed, the hop
box and the compose edges' addressing all execute: its address plan, and that every packet of the
chain gets where it is going by the plan's own cables, LANs and routes."""

from __future__ import annotations

import ipaddress
import itertools

import pytest

from satlab.agent import hop_plan
from satlab.agent.hop_plan import EDGE, Address, HopPlan
from satlab.testbed import containers

HOP_COUNTS = [[], [0], [1], [2, 0], [1, 0, 2], [0, 3, 1]]


def test_without_hops_the_servers_lan_is_the_gw_edges_and_nothing_else() -> None:
    p = hop_plan.plan([])
    assert [(lan.position, lan.net, lan.router, lan.hosts) for lan in p.lans] == [
        (1, "10.250.1", EDGE, ())
    ]
    assert [a.cidr for a in p.addresses_of(EDGE)] == ["10.250.1.1/24"]
    assert (p.nodes, p.cables, p.routes, p.far_nets) == ((), (), (), ())


def test_one_hop_follows_the_address_plan() -> None:
    """README, Terrestrial hops / satlab.agent.namespaces: hop 1's wire 10.250.11.0/24 (.1 its
    server end r1, .2 its client end, the gw edge), the gw edge's LAN 10.250.22.0/24, cross hosts
    at .101 (server end, the servers' LAN) and .201 (client end)."""
    p = hop_plan.plan([1])
    assert p.roles == ["r1", "hop1", "x1s1", "x1c1"]
    assert {(a.node, a.ifname, a.cidr) for a in p.addresses} == {
        ("r1", "lan", "10.250.1.1/24"),
        ("r1", "down", "10.250.11.1/24"),
        ("gw", "up", "10.250.11.2/24"),
        ("gw", "lan", "10.250.22.1/24"),
        ("x1s1", "eth0", "10.250.1.101/24"),
        ("x1c1", "eth0", "10.250.22.201/24"),
    }
    assert [(c.a, c.a_if, c.b, c.b_if) for c in p.cables] == [
        ("r1", "down", "hop1", "gw"),
        ("gw", "up", "hop1", "st"),
    ]
    assert {(r.node, r.dst, r.via, r.dev) for r in p.routes} == {
        ("r1", "default", "10.250.11.2", "down"),
        ("gw", "10.250.1.0/24", "10.250.11.1", "up"),
        ("x1s1", "default", "10.250.1.1", "eth0"),
        ("x1c1", "default", "10.250.22.1", "eth0"),
    }
    assert p.far_nets == ("10.250.22", "10.250.11")


def test_nodes_come_per_hop_and_each_lan_holds_the_cross_hosts_of_its_two_hops() -> None:
    p = hop_plan.plan([1, 0, 2])
    assert p.roles == ["r1", "hop1", "x1s1", "x1c1", "r2", "hop2", "r3", "hop3"] + [
        "x3s1",
        "x3s2",
        "x3c1",
        "x3c2",
    ]
    assert [(lan.router, [x.role for x in lan.hosts]) for lan in p.lans] == [
        ("r1", ["x1s1"]),
        ("r2", ["x1c1"]),
        ("r3", ["x3s1", "x3s2"]),
        (EDGE, ["x3c1", "x3c2"]),
    ]
    nodes = {n.role: n for n in p.nodes}
    assert (nodes["r3"].address, nodes["hop3"].address) == ("10.250.23.1", None)
    assert (nodes["x3c2"].address, nodes["x3c2"].lan_gateway) == ("10.250.24.202", "10.250.24.1")


def _segments(p: HopPlan) -> list[set[tuple[str, str]]]:
    """The plan's layer-2 segments, from its LANs and cables alone: each LAN, and each hop's two
    cables joined through its emulator (which forwards between its ports gw and st)."""
    segments = [{(lan.router, "lan"), *((x.role, "eth0") for x in lan.hosts)} for lan in p.lans]
    for emulator, cables in itertools.groupby(p.cables, key=lambda c: c.b):
        ends = list(cables)
        assert sorted(c.b_if for c in ends) == ["gw", "st"], emulator
        segments.append({(c.a, c.a_if) for c in ends})
    return segments


def _net(a: Address) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network(a.cidr, strict=False)


def _next_hop(p: HopPlan, node: str, dst: str) -> str:
    """Where `node` sends a packet for address `dst` by the plan: to its owner when dst is on one
    of the node's networks (and on that interface's segment), else to the gateway of the most
    specific route, which must sit on the segment of the route's interface."""
    by_address = {a.address: a for a in p.addresses}
    segment_of = {port: seg for seg in _segments(p) for port in seg}
    target = by_address[dst]
    on_link = [a for a in p.addresses_of(node) if ipaddress.IPv4Address(dst) in _net(a)]
    if on_link:
        assert (target.node, target.ifname) in segment_of[(node, on_link[0].ifname)], dst
        return target.node
    routes = p.routes_of(node)
    specific = [
        r
        for r in routes
        if r.dst != "default" and ipaddress.IPv4Address(dst) in ipaddress.IPv4Network(r.dst)
    ]
    chosen = specific + [r for r in routes if r.dst == "default"]
    assert chosen, f"{node} has no route to {dst}"
    gateway = by_address[chosen[0].via]
    assert (gateway.node, gateway.ifname) in segment_of[(node, chosen[0].dev)], chosen[0]
    return gateway.node


def _forward(p: HopPlan, src: str, dst: str) -> list[str]:
    """The nodes a packet from `src` to address `dst` visits, hop by hop."""
    path = [src]
    while path[-1] != next(a.node for a in p.addresses if a.address == dst):
        assert len(path) <= len(p.nodes) + 2, f"{src} -> {dst} loops: {path}"
        path.append(_next_hop(p, path[-1], dst))
    return path


@pytest.mark.parametrize("cross", HOP_COUNTS, ids=str)
def test_every_address_is_reached_from_every_node_along_the_chain(cross: list[int]) -> None:
    """From each router, cross host and the gw edge to each address of the chain: what the ping
    tests of tests/testbed/test_hops.py see on namespaces, here from the plan alone."""
    p = hop_plan.plan(cross)
    sources = [n.role for n in p.nodes if n.address] + [EDGE]
    for src, a in itertools.product(sources, p.addresses):
        path = _forward(p, src, a.address)
        assert path[-1] == a.node


@pytest.mark.parametrize("cross", HOP_COUNTS, ids=str)
def test_addresses_are_unique_and_each_on_its_segments_network(cross: list[int]) -> None:
    p = hop_plan.plan(cross)
    assert len({a.address for a in p.addresses}) == len(p.addresses)
    for seg in _segments(p):
        nets = {str(_net(a)) for a in p.addresses if (a.node, a.ifname) in seg}
        assert len(nets) == 1, seg
    # the st edges route exactly the chain's networks beyond the servers' LAN across the satellite
    chain = {str(_net(a)) for a in p.addresses}
    assert chain - {"10.250.1.0/24"} == {f"{net}.0/24" for net in p.far_nets}


@pytest.mark.parametrize(
    ("cross", "message"),
    [
        ([1] * 10, "hops: 10 hops, the address plan has room for 9"),
        ([0, -1], r"hops: cross hosts \[-1\] not within 0..54"),
        ([55], r"hops: cross hosts \[55\] not within 0..54"),
    ],
)
def test_a_plan_beyond_the_address_plan_is_refused_naming_the_limit(
    cross: list[int], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        hop_plan.plan(cross)


def test_the_compose_gw_box_gets_the_plans_edge_on_its_hop_interfaces() -> None:
    """containers.box_plans executes the plan for the gw box: with hops its `lan` gives up the
    servers' gateway (r1's), `hopup` is the plan's gw `up` and `hoplan` its `lan`; without, the
    compose file's wiring. The st box routes the chain across the satellite."""
    gw = containers.box_plans(2, servers=1, clients=1, mtu=1400)["gw"]["interfaces"]
    assert gw["lan"] == {"addresses": [], "mtu": 1400}
    assert gw["hopup"] == {
        "addresses": ["10.250.12.2/24"],
        "routes": [[f"10.250.{n}.0/24", "10.250.12.1"] for n in (1, 22, 11)],
        "mtu": 1400,
    }
    assert gw["hoplan"] == {"addresses": ["10.250.23.1/24"], "routes": [], "mtu": 1400}
    st = containers.box_plans(2, servers=1, clients=1, mtu=1400)["st"]["interfaces"]["sat0"]
    assert st["routes"] == [[f"10.250.{n}.0/24", "10.250.2.1"] for n in (1, 22, 23, 11, 12)]
    plain = containers.box_plans(0, servers=1, clients=1, mtu=1500)["gw"]["interfaces"]
    assert plain["lan"] == {"addresses": ["10.250.1.1/24"], "mtu": 1500}
    assert plain["hopup"] == plain["hoplan"] == {"addresses": [], "routes": [], "mtu": 1500}
