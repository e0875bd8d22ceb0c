"""The testbed topology of DESIGN.md built with netlink (pyroute2), one network namespace per box.

    srv1..N --[lan bridge]-- gw --sat0~~[emu: gw | st]~~sat0-- st --[lan bridge]-- cli1..M

With `gateway=True` the edge gateway (satlab-gateway, gateway/README.md) is spliced in as a bump at
each edge: sat0 becomes a veth whose peer (gwx / stx) the gateway reads, and the edge's `wan`
interface is cabled to the emulator:  gw: sat0=veth=gwx [gateway] wan ~~ emu.

Addresses come from 10.250.0.0/16, which exists only inside the namespaces; several testbeds can use
the same addresses at once because each has its own namespaces. Namespace names carry the project
prefix `sl` and the testbed id, so a sweeper finds leftovers of a crashed run by name.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

from pyroute2 import NetNS, netns

PREFIX = "sl"
SERVER_NET = "10.250.1"  # servers and the gw edge's LAN side
SAT_NET = "10.250.2"  # gw edge <-> st edge across the emulator
CLIENT_NET = "10.250.3"  # st edge's LAN side and the clients
GATEWAY_INSIDE = {"gw": "gwx", "st": "stx"}  # the gateway's router-side port (peer of sat0)


@dataclass
class Box:
    role: str  # srv1, gw, emu, st, cli1, ...
    netns: str
    address: str | None  # the address other boxes reach it at (None for the emulator)


@dataclass
class Topology:
    testbed_id: str
    servers: int
    clients: int
    mtu: int
    gateway: bool = False
    boxes: dict[str, Box] = field(default_factory=dict)

    def ns(self, role: str) -> str:
        return self.boxes[role].netns

    def address(self, role: str) -> str:
        addr = self.boxes[role].address
        assert addr is not None, f"{role} has no address"
        return addr

    @property
    def host_roles(self) -> list[str]:
        return [r for r in self.boxes if r != "emu"]


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
    testbed_id: str, servers: int, clients: int, mtu: int = 1500, gateway: bool = False
) -> Topology:
    """Create every namespace, link, address and route. On any error, removes what it made."""
    topo = Topology(testbed_id, servers, clients, mtu, gateway)
    roles = [f"srv{i}" for i in range(1, servers + 1)] + ["gw", "emu", "st"]
    roles += [f"cli{i}" for i in range(1, clients + 1)]
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


def _wire(topo: Topology, h: dict[str, NetNS], mtu: int) -> None:
    def veth(a: str, a_if: str, b: str, b_if: str) -> None:
        h[a].link("add", ifname=a_if, kind="veth", peer={"ifname": b_if, "net_ns_fd": topo.ns(b)})
        _up(h[a], a_if, mtu)
        _up(h[b], b_if, mtu)

    def addr(role: str, ifname: str, address: str, prefixlen: int = 24) -> None:
        h[role].addr(
            "add", index=h[role].link_lookup(ifname=ifname)[0], address=address, prefixlen=prefixlen
        )

    for role in h:
        topo.boxes[role] = Box(role, namespace_name(topo.testbed_id, role), None)

    # The two edges: a LAN bridge each, a satellite-side interface cabled to the emulator box.
    for edge, lan_net, side_prefix in (("gw", SERVER_NET, "srv"), ("st", CLIENT_NET, "cli")):
        h[edge].link("add", ifname="lan", kind="bridge")
        _up(h[edge], "lan", mtu)
        addr(edge, "lan", f"{lan_net}.1")
        count = topo.servers if side_prefix == "srv" else topo.clients
        for i in range(1, count + 1):
            host = f"{side_prefix}{i}"
            veth(edge, f"p{i}", host, "eth0")
            h[edge].link(
                "set",
                index=h[edge].link_lookup(ifname=f"p{i}")[0],
                master=h[edge].link_lookup(ifname="lan")[0],
            )
            addr(host, "eth0", f"{lan_net}.{10 + i}")
            h[host].route("add", dst="0.0.0.0/0", gateway=f"{lan_net}.1")
            topo.boxes[host].address = f"{lan_net}.{10 + i}"
        if topo.gateway:
            veth(edge, "sat0", edge, GATEWAY_INSIDE[edge])
            veth(edge, "wan", "emu", edge)
        else:
            veth(edge, "sat0", "emu", edge)  # the emulator's ports are named gw and st
    addr("gw", "sat0", f"{SAT_NET}.1")
    addr("st", "sat0", f"{SAT_NET}.2")
    h["gw"].route("add", dst=f"{CLIENT_NET}.0/24", gateway=f"{SAT_NET}.2")
    h["st"].route("add", dst=f"{SERVER_NET}.0/24", gateway=f"{SAT_NET}.1")
    topo.boxes["gw"].address = f"{SAT_NET}.1"
    topo.boxes["st"].address = f"{SAT_NET}.2"


def interfaces(topo: Topology, role: str) -> list[str]:
    """The data interfaces of a box (what offload settings apply to)."""
    if role.startswith(("srv", "cli")):
        return ["eth0"]
    if role == "emu":
        return ["gw", "st"]
    count = topo.servers if role == "gw" else topo.clients
    gateway = [GATEWAY_INSIDE[role], "wan"] if topo.gateway else []
    return ["sat0", *gateway] + [f"p{i}" for i in range(1, count + 1)]


def teardown(testbed_id: str) -> list[str]:
    """Remove every namespace of the testbed (their interfaces go with them)."""
    removed = []
    for name in project_namespaces(testbed_id):
        # Gone since the listing (its owner or a sweeper removed it meanwhile): nothing to do.
        with contextlib.suppress(FileNotFoundError):
            netns.remove(name)
            removed.append(name)
    return removed


def set_default_route_metrics(topo: Topology, role: str, metrics: dict[str, int]) -> None:
    """Window clamp, advertised MSS and initial cwnd are route metrics in Linux."""
    lan = SERVER_NET if role.startswith("srv") else CLIENT_NET
    with NetNS(topo.ns(role)) as ns:
        ns.route("replace", dst="0.0.0.0/0", gateway=f"{lan}.1", metrics=metrics)


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
