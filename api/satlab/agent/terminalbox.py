"""The extra satellite terminals of a container testbed, built by the agent of the compose `st`
box (POST /terminals): with a scenario's hosts.terminals, terminal 1 is the st box itself with
the compose client boxes on its LAN, and each further terminal k is an st edge `stK` with its
clients, network namespaces inside the st box, each with a host agent of its own on a socket
beside the box's (SHARED/boxes/ROLE.sock), so the testbed drives them by role as it drives a
native testbed's (satlab.testbed.terminals has the plan: names, LANs, addresses).

Why namespaces in the st box, as the hops box does for hops (satlab.agent.hopbox): the number of
terminals and their clients change per run, while containers are wired once, at their start.

The switch: on namespaces a bridge `sw` joins the st edges to the emulator's st port; here the
compose network `satst` already is a switch (a Linux bridge on the Docker host) between the
emulator's st port and the st box's sat0. Each extra edge's satellite interface is a macvlan of
sat0 (bridge mode) with a MAC of its own, moved into the edge's namespace: its frames leave by
sat0 onto satst, and the frames satst delivers to its MAC reach it, so the emulator sees each
terminal as its own station (the beam tells them apart by address, emulator/CONFIG.md, Beam).
That takes neither sat0's address nor its name from the st box (the splice, addressing and
offload steps keep working on it) and needs no change to the compose file. A macvlan cannot
reach its parent's own address, so the st box and its extra edges never talk directly: they do
not need to, all their traffic crosses the satellite.

Unlike the hops box, the st box removes only the namespaces it made (it is an ordinary box, no
--hop-box): a restarted box has none (docker/box-entrypoint clears /run/netns).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from satlab.agent import namespaces
from satlab.agent.hopbox import SubAgents, _ip
from satlab.agent.namespaces import ip_json
from satlab.agent.requests import TerminalPlan


class TerminalBox(SubAgents):
    """The namespaces and sub-agents of the current run's extra terminals in this box."""

    def __init__(self, boxes: Path, workdir: Path) -> None:
        super().__init__(boxes, workdir / "terminals")
        self.made: list[str] = []  # the namespaces this box made, in order

    def build(
        self, terminals: list[TerminalPlan], mtu: int, uplink: str, gateway: bool = False
    ) -> dict[str, Any]:
        """Replaces whatever an earlier run left with `terminals` (their edges on macvlans of
        `uplink`, with the edge gateway's bump if `gateway`); returns each role's address,
        default gateway and data interfaces."""

        def wire(boxes: dict[str, dict[str, Any]]) -> None:
            for t in terminals:
                self._terminal(t, mtu, uplink, boxes, gateway)

        return {"boxes": self._replace(wire)}

    def _namespace(self, role: str, boxes: dict[str, dict[str, Any]], **box: Any) -> None:
        _ip("netns", "add", role)
        self.made.append(role)
        _ip("-n", role, "link", "set", "dev", "lo", "up")
        boxes[role] = {"lan_gateway": None, **box}

    def _terminal(
        self,
        t: TerminalPlan,
        mtu: int,
        uplink: str,
        boxes: dict[str, dict[str, Any]],
        gateway: bool = False,
    ) -> None:
        """Edge t["edge"] as topology.build wires a terminal's st edge: sat0 (here a macvlan)
        at its satellite address, a LAN bridge `lan` at NET.1 with a veth pI per client cliI
        (NET.(10+I)), routes to the gw edge's side by the gw edge. With `gateway`, the macvlan
        is the bump's `wan` and sat0 a veth to the gateway's `stx` (_bump)."""
        edge, net = t["edge"], t["net"]
        ports = [f"p{c}" for c in t["clients"]]
        ifaces = ["sat0", *ports] + (["stx", "wan"] if gateway else [])
        self._namespace(edge, boxes, address=t["sat_address"], interfaces=ifaces)
        tmp = f"m{edge}"  # sat0 is the uplink's name here: the macvlan takes it in the edge
        _ip("link", "add", "link", uplink, "name", tmp, "mtu", str(mtu), "type", "macvlan")
        _ip("link", "set", "dev", tmp, "netns", edge)
        _ip("-n", edge, "link", "set", "dev", tmp, "name", "wan" if gateway else "sat0")
        if gateway:
            self._bump(edge, mtu)
        _ip("-n", edge, "link", "set", "dev", "sat0", "up")
        _ip("-n", edge, "addr", "add", f"{t['sat_address']}/24", "dev", "sat0")
        # everything beyond the LAN (the servers, the hops' networks) is across the satellite
        _ip("-n", edge, "route", "add", "default", "via", f"{namespaces.SAT_NET}.1")
        _ip("-n", edge, "link", "add", "name", "lan", "mtu", str(mtu), "type", "bridge")
        _ip("-n", edge, "link", "set", "dev", "lan", "up")
        _ip("-n", edge, "addr", "add", f"{net}.1/24", "dev", "lan")
        for c, port in zip(t["clients"], ports, strict=True):
            cli, addr = f"cli{c}", f"{net}.{10 + c}"
            self._namespace(cli, boxes, address=addr, lan_gateway=f"{net}.1", interfaces=["eth0"])
            _ip("-n", edge, *f"link add name {port} mtu {mtu} type veth peer name eth0".split())
            _ip("-n", edge, "link", "set", "dev", "eth0", "netns", cli)
            _ip("-n", edge, "link", "set", "dev", port, "master", "lan", "up")
            _ip("-n", cli, "link", "set", "dev", "eth0", "up")
            _ip("-n", cli, "addr", "add", f"{addr}/24", "dev", "eth0")
            _ip("-n", cli, "route", "add", "default", "via", f"{net}.1")

    def _bump(self, edge: str, mtu: int) -> None:
        """The edge gateway's ports on an extra edge (the agent's POST /splice does this for a
        compose box's own NIC), built in place because a macvlan is a station by its MAC: the
        frames satst brings to a MAC no macvlan has go to the parent, the st box's NIC. So the
        router side sat0 (a veth to the gateway's stx) takes the macvlan's MAC, the one the far
        edge learns by ARP through the gateway, and the macvlan `wan` stays that station. The
        kernel must not take the link's frames on `wan` itself (they are addressed to its MAC
        too): it answers no ARP there, and strict reverse-path filtering drops the IPv4 packets
        it receives there (every source is routed by sat0), while the gateway's packet socket
        still reads them, before the IP layer."""
        mac = ip_json("-n", edge, "link", "show", "dev", "wan")[0]["address"]
        _ip("-n", edge, "link", "set", "dev", "wan", "arp", "off", "up")
        _ip("netns", "exec", edge, "sysctl", "-qw", "net.ipv4.conf.wan.rp_filter=1")
        veth = f"link add name sat0 mtu {mtu} address {mac} type veth peer name stx"
        _ip("-n", edge, *veth.split())
        _ip("-n", edge, "link", "set", "dev", "stx", "up")

    def teardown(self) -> list[str]:
        """Stops the sub-agents (each stops its programs), aborts the TCP sockets left in each
        namespace and removes the namespaces (their macvlans and veths go with them). Returns
        the roles removed."""
        self._stop_agents()
        removed, self.made = self.made, []
        for role in removed:
            namespaces.abort_tcp(role)
            with contextlib.suppress(RuntimeError):  # gone already
                _ip("netns", "del", role)
        return removed
