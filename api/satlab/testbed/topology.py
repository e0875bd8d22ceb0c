"""The testbed topology (README, "Architecture") built with netlink (pyroute2), one network
namespace per box.

    srv1..N --[lan bridge]-- gw --sat0~~[emu: gw | st]~~sat0-- st --[lan bridge]-- cli1..M

With `gateway=True` the edge gateway (satlab-gateway, gateway/README.md) is spliced in as a bump at
each edge: sat0 becomes a veth whose peer (gwx / stx) the gateway reads, and the edge's `wan`
interface is cabled to the emulator:  gw: sat0=veth=gwx [gateway] wan ~~ emu.

Terrestrial hops (a scenario's `path.terrestrial`, satlab.testbed.hops) put routers r1..rK between
the servers and the gw edge, each hop an emulator box of its own (hopN, ports gw and st like emu):

    srv1..N --[lan]-- r1 down~~[hop1]~~up r2 down~~[hop2]~~up gw --sat0~~[emu]~~ ...
             x1s1 --'   x1c1, x2s1 --'        x2c1 --'

A hop is a second satlab-emulator (`kind: fixed`: exact delay, rate, queue, bit errors) rather than
a kernel link: this kernel has no netem, and HTB/TBF shape a rate but add no delay. Cross-traffic
hosts of hop N sit on the LANs of its two ends (xNsI on the servers' side, xNcI on the clients'
side), so their traffic crosses hop N and no other link. The hops' cables, LANs, addresses and
routes are satlab.agent.hop_plan's plan, which the compose hop box executes too; here each step
of it runs with netlink (_hop_lans, _hop_wires, _hop_routes).

Several satellite terminals (a scenario's hosts.terminals, satlab.testbed.terminals) give each its
st edge (st, st2, ...) with its clients, the edges joined to the emulator's st port by a bridge in
namespace `sw` (a switch: no agent, no address); with the gateway, each st edge has its bump and
its `wan` is the switch's port. When the beam's terminals have VLAN IDs the switch is an 802.1Q
switch instead (satlab.testbed.vlan_switch): each st edge's port an access port of its terminal's
VLAN, the emulator's st port the trunk; this holds for one terminal on a VLAN too.

Addresses come from 10.250.0.0/16, which exists only inside the namespaces; several testbeds can use
the same addresses at once because each has its own namespaces. Namespace names carry the project
prefix `sl` and the testbed id, so a sweeper finds leftovers of a crashed run by name.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from pyroute2 import NetNS, netns

from satlab.agent import hop_plan
from satlab.agent.hop_plan import HopPlan
from satlab.agent.namespaces import SAT_NET, SERVER_NET, abort_tcp
from satlab.testbed import terminals, vlan_switch

PREFIX = "sl"
GATEWAY_INSIDE = {"gw": "gwx", "st": "stx"}  # the gateway's router-side port (peer of sat0)
IFF_NOARP = 0x80  # linux/if.h
_EMULATOR_ROLE = re.compile(r"emu|hop\d+")
_ROUTER_ROLE = re.compile(r"r\d+")


@dataclass
class Box:
    role: str  # srv1, gw, emu, st, cli1, r1, hop1, x1s1, ...
    netns: str
    address: str | None  # the address other boxes reach it at (None for an emulator)
    lan_gateway: str | None = None  # an end host's default route
    interfaces: list[str] = field(default_factory=list)  # data interfaces (offload settings)


@dataclass
class Topology:
    testbed_id: str
    servers: int
    clients: int
    mtu: int
    gateway: bool = False
    hops: list[int] = field(default_factory=list)  # cross hosts at each end, per terrestrial hop
    terminals: list[int] = field(default_factory=list)  # clients per terminal; []: one terminal
    vlans: list[int] = field(default_factory=list)  # each terminal's VLAN ID; []: untagged
    boxes: dict[str, Box] = field(default_factory=dict)

    def ns(self, role: str) -> str:
        return self.boxes[role].netns

    def address(self, role: str) -> str:
        addr = self.boxes[role].address
        assert addr is not None, f"{role} has no address"
        return addr

    @property
    def host_roles(self) -> list[str]:
        """The end hosts and the two satellite edges (no emulators, no terrestrial routers)."""
        return [r for r in self.boxes if not _EMULATOR_ROLE.fullmatch(r) and r not in self.routers]

    @property
    def edges(self) -> list[str]:
        """The satellite edges: gw and every terminal's st edge."""
        return ["gw"] + [t.edge for t in terminals.plan(self.terminals)]

    @property
    def routers(self) -> list[str]:
        return [r for r in self.boxes if _ROUTER_ROLE.fullmatch(r)]

    @property
    def switched(self) -> bool:
        """The st edges reach the emulator through the switch namespace: several terminals, or
        terminals on VLANs of the st port."""
        return len(self.terminals) > 1 or bool(self.vlans)


def gateway_inside(edge: str) -> str:
    """The gateway's router-side port at an edge: every terminal's st edge (st, st2, ...) is an
    `st` edge, each in its own namespace or box."""
    return GATEWAY_INSIDE["gw" if edge == "gw" else "st"]


def namespace_name(testbed_id: str, role: str) -> str:
    return f"{PREFIX}{testbed_id}-{role}"


def project_namespaces(testbed_id: str | None = None) -> list[str]:
    """Namespaces of one testbed, or of every SatLab testbed when testbed_id is None."""
    start = f"{PREFIX}{testbed_id}-" if testbed_id else PREFIX
    return [n for n in netns.listnetns() if n.startswith(start) and "-" in n]


def _up(ns: NetNS, ifname: str, mtu: int | None = None) -> int:
    idx: int = ns.link_lookup(ifname=ifname)[0]
    if mtu is None:
        ns.link("set", index=idx, state="up")
    else:
        ns.link("set", index=idx, state="up", mtu=mtu)
    return idx


def build(
    testbed_id: str,
    servers: int,
    clients: int,
    mtu: int = 1500,
    gateway: bool = False,
    hops: list[int] | None = None,
    terminal_clients: list[int] | None = None,
    terminal_vlans: list[int] | None = None,
) -> Topology:
    """Create every namespace, link, address and route. `hops` gives, per terrestrial hop from the
    servers, its cross hosts at each end; `terminal_clients` the clients behind each of several
    terminals (None: one terminal); `terminal_vlans` each terminal's VLAN ID on the emulator's st
    port (satlab.testbed.terminals.vlans; None: untagged). On any error, removes what it made."""
    topo = Topology(
        testbed_id,
        servers,
        clients,
        mtu,
        gateway,
        list(hops or []),
        list(terminal_clients or []),
        list(terminal_vlans or []),
    )
    if topo.vlans and len(topo.vlans) != len(topo.edges) - 1:
        raise ValueError(f"{len(topo.vlans)} VLAN IDs for {len(topo.edges) - 1} terminals")
    roles = [f"srv{i}" for i in range(1, servers + 1)] + hop_plan.plan(topo.hops).roles
    roles += ["gw", "emu"] + topo.edges[1:] + [f"cli{i}" for i in range(1, clients + 1)]
    if topo.switched:
        roles.append(terminals.SWITCH)
    try:
        handles: dict[str, NetNS] = {}
        for role in roles:
            name = namespace_name(testbed_id, role)
            netns.create(name)
            handles[role] = NetNS(name)
            _up(handles[role], "lo")
        try:
            _wire(topo, handles, mtu)
        finally:
            for h in handles.values():
                h.close()
    except Exception:
        teardown(testbed_id)
        raise
    return topo


class _Links:
    """The namespace testbed's cabling steps (veths, addresses, LAN bridges), shared by the hops'
    plan and the satellite side."""

    def __init__(self, topo: Topology, h: dict[str, NetNS], mtu: int) -> None:
        self.topo, self.h, self.mtu = topo, h, mtu

    def veth(self, a: str, a_if: str, b: str, b_if: str) -> None:
        peer = {"ifname": b_if, "net_ns_fd": namespace_name(self.topo.testbed_id, b)}
        self.h[a].link("add", ifname=a_if, kind="veth", peer=peer)
        _up(self.h[a], a_if, self.mtu)
        _up(self.h[b], b_if, self.mtu)
        for role, ifname in ((a, a_if), (b, b_if)):
            if role in self.topo.boxes:  # not the switch
                self.topo.boxes[role].interfaces.append(ifname)

    def addr(self, role: str, ifname: str, address: str, prefixlen: int = 24) -> None:
        ns = self.h[role]
        ns.addr("add", index=ns.link_lookup(ifname=ifname)[0], address=address, prefixlen=prefixlen)

    def route(self, role: str, dst: str, via: str) -> None:
        """A route through a gateway; `dst` "default" or "a.b.c.d/len"."""
        self.h[role].route("add", dst="0.0.0.0/0" if dst == "default" else dst, gateway=via)

    def bridge(self, edge: str) -> None:
        """The LAN bridge `lan` on `edge`."""
        self.h[edge].link("add", ifname="lan", kind="bridge")
        _up(self.h[edge], "lan", self.mtu)

    def port(self, edge: str, port: str, host: str) -> None:
        """`host`'s eth0 cabled to port `port` of `edge`'s LAN bridge."""
        self.veth(edge, port, host, "eth0")
        ns = self.h[edge]
        ns.link("set", index=ns.link_lookup(ifname=port)[0], master=ns.link_lookup(ifname="lan")[0])

    def host(self, edge: str, port: str, host: str, address: str, gateway: str) -> None:
        """An end host on `edge`'s LAN: its address, and its default route through the edge."""
        self.port(edge, port, host)
        self.addr(host, "eth0", address)
        self.route(host, "default", gateway)
        self.topo.boxes[host].address = address
        self.topo.boxes[host].lan_gateway = gateway

    def lan(self, edge: str, net: str, members: list[tuple[str, str, int]]) -> None:
        """A LAN bridge on `edge` with a host (role, bridge port, address suffix) per member."""
        self.bridge(edge)
        self.addr(edge, "lan", f"{net}.1")
        for host, port, suffix in members:
            self.host(edge, port, host, f"{net}.{suffix}", f"{net}.1")


def _hop_lans(links: _Links, plan: HopPlan) -> None:
    """LAN p of the hops' plan: a bridge in its router's namespace (r_p, or gw after the last
    hop), the servers on LAN 1, each cross host's eth0 on a port named as the host."""
    servers = [(f"srv{i}", f"p{i}", 10 + i) for i in range(1, links.topo.servers + 1)]
    for lan in plan.lans:
        links.bridge(lan.router)
        for host, port, suffix in servers if lan.position == 1 else []:
            links.host(lan.router, port, host, f"{lan.net}.{suffix}", lan.gateway)
        for x in lan.hosts:
            links.port(lan.router, x.role, x.role)


def _hop_wires(links: _Links, plan: HopPlan) -> None:
    """Each hop's two cables to its emulator box, then every address of the plan, each node's
    address and LAN gateway in the topology."""
    for c in plan.cables:
        links.veth(c.a, c.a_if, c.b, c.b_if)
    for a in plan.addresses:
        links.addr(a.node, a.ifname, a.address, hop_plan.PREFIXLEN)
    for n in plan.nodes:
        links.topo.boxes[n.role].address = n.address
        links.topo.boxes[n.role].lan_gateway = n.lan_gateway


def _hop_routes(links: _Links, plan: HopPlan, edges: list[str]) -> None:
    """The plan's routes along the hops, and each st edge's to the hops' networks across the
    satellite (the servers' LAN has its route already)."""
    for r in plan.routes:
        links.route(r.node, r.dst, r.via)
    for net, edge in itertools.product(plan.far_nets, edges):
        links.route(edge, f"{net}.0/24", f"{SAT_NET}.1")


def _wire(topo: Topology, h: dict[str, NetNS], mtu: int) -> None:
    links = _Links(topo, h, mtu)
    veth, addr, lan = links.veth, links.addr, links.lan
    hops = hop_plan.plan(topo.hops)

    for role in (r for r in h if r != terminals.SWITCH):
        topo.boxes[role] = Box(role, namespace_name(topo.testbed_id, role), None)

    # The server side (the hops' plan): LANs, the hops' cables and addresses.
    _hop_lans(links, hops)
    _hop_wires(links, hops)
    terms = terminals.plan(topo.terminals or [topo.clients])
    for t in terms:
        lan(t.edge, t.net, [(f"cli{i}", f"p{i}", 10 + i) for i in t.clients])

    def satellite_port(edge: str, peer: str, peer_if: str) -> None:
        """The edge's satellite-side cable to `peer`: sat0 itself, or with the gateway the bump
        sat0=veth=inside [gateway] wan, wan being the cable."""
        if not topo.gateway:
            veth(edge, "sat0", peer, peer_if)
            return
        veth(edge, "sat0", edge, gateway_inside(edge))
        veth(edge, "wan", peer, peer_if)
        # wan is the gateway's wire, not a router port: without NOARP the edge's kernel answers
        # ARP on it for sat0's address, faster than sat0's own reply through the gateway, so
        # the far edge addresses its frames to wan and this kernel routes them past the
        # gateway (whose rewrites, e.g. CETEN's forward stamps, never reached the hosts).
        wan = h[edge].link_lookup(ifname="wan")[0]
        h[edge].link("set", index=wan, flags=IFF_NOARP, change=IFF_NOARP)

    # The satellite: each edge's satellite-side interface cabled to the emulator box (several
    # terminals' edges through the switch), through its gateway bump when the run has one.
    for edge in ["gw"] if topo.switched else topo.edges:
        satellite_port(edge, "emu", edge)  # the emulator's ports are named gw and st
    if topo.switched:  # the switch: a port to the emulator's st port, one per st edge
        veth(terminals.SWITCH, "emu", "emu", "st")
        for t in terms:
            satellite_port(t.edge, terminals.SWITCH, t.edge)
        _switch(topo, h[terminals.SWITCH], [t.edge for t in terms], mtu)
    addr("gw", "sat0", f"{SAT_NET}.1")
    topo.boxes["gw"].address = f"{SAT_NET}.1"
    for t in terms:
        addr(t.edge, "sat0", t.sat_address)
        h["gw"].route("add", dst=f"{t.net}.0/24", gateway=t.sat_address)
        h[t.edge].route("add", dst=f"{SERVER_NET}.0/24", gateway=f"{SAT_NET}.1")
        topo.boxes[t.edge].address = t.sat_address

    # Routes along the hops, and across the satellite to the hops' networks.
    _hop_routes(links, hops, [t.edge for t in terms])


def _switch(topo: Topology, ns: NetNS, edge_ports: list[str], mtu: int) -> None:
    """The switch between the emulator's st port (port `emu`) and the st edges' ports: a bridge
    for untagged terminals, an 802.1Q switch when they have VLANs (the emulator's port the trunk,
    each edge's port an access port of its terminal's VLAN)."""
    if not topo.vlans:
        _bridge(ns, ["emu", *edge_ports], mtu)
        return
    sw = namespace_name(topo.testbed_id, terminals.SWITCH)
    access = dict(zip(edge_ports, topo.vlans, strict=True))
    vlan_switch.build(topo.testbed_id, sw, ns, "emu", access)


def _bridge(ns: NetNS, ports: list[str], mtu: int) -> None:
    """A Linux bridge `br` in `ns` over `ports` (no VLAN filtering: untagged terminals)."""
    ns.link("add", ifname="br", kind="bridge")
    bridge = _up(ns, "br", mtu)
    for port in ports:
        ns.link("set", index=ns.link_lookup(ifname=port)[0], master=bridge)


def new_namespace(name: str) -> None:
    """Create network namespace `name` with its loopback up."""
    netns.create(name)
    with NetNS(name) as ns:
        _up(ns, "lo")


@dataclass(frozen=True)
class WireEnd:
    """One host of a bare wire: its namespace, interface, address (/24) and, if set, its MAC."""

    netns: str
    ifname: str
    address: str
    mac: str | None = None


def bare_wire(emu: str, ports: tuple[str, str], ends: tuple[WireEnd, WireEnd], mtu: int) -> None:
    """Two hosts joined through an emulator box and nothing else (no routers, no LANs, no routes):

        end0 --veth-- [emu: ports[0] | ports[1]] --veth-- end1

    The namespaces exist already (`new_namespace`); the caller removes them. The smallest
    topology a component test needs to put a link model between two hosts."""
    for end, port in zip(ends, ports, strict=True):
        with NetNS(end.netns) as host:
            host.link(
                "add", ifname=end.ifname, kind="veth", peer={"ifname": port, "net_ns_fd": emu}
            )
            if end.mac:  # before the link is up
                host.link("set", index=host.link_lookup(ifname=end.ifname)[0], address=end.mac)
            idx = _up(host, end.ifname, mtu)
            host.addr("add", index=idx, address=end.address, prefixlen=24)
        with NetNS(emu) as e:
            _up(e, port, mtu)


def interfaces(topo: Topology, role: str) -> list[str]:
    """The data interfaces of a box (what offload settings apply to)."""
    return list(topo.boxes[role].interfaces)


def teardown(testbed_id: str) -> list[str]:
    """Remove every namespace of the testbed (their interfaces go with them, and the VLAN
    switch's programs with its ports), then the switch's pins."""
    removed = []
    for name in project_namespaces(testbed_id):
        # Gone since the listing (its owner or a sweeper removed it meanwhile): nothing to do.
        with contextlib.suppress(FileNotFoundError):
            abort_tcp(name)
            netns.remove(name)
            removed.append(name)
    vlan_switch.remove(testbed_id)
    return removed


def socket_in_netns(name: str, family: int, kind: int, proto: int = 0) -> socket.socket:
    """A socket made inside network namespace `name` (by its /run/netns name). setns(2) runs in a
    short-lived thread, so the caller's own namespace is never touched; a socket keeps the
    namespace it was made in, so it is then used from any thread."""
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            netns.setns(name, flags=0)  # flags=0: join an existing namespace, never create one
            out["sock"] = socket.socket(family, kind, proto)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread
            out["error"] = e

    t = threading.Thread(target=target, name=f"netns-{name}")
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    sock: socket.socket = out["sock"]
    return sock
