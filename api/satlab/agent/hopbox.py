"""The terrestrial hops of a container testbed, built by the agent of the compose `hops` box
(POST /hops): the routers r1..rK, the hop emulator boxes hop1..hopK and the cross hosts xNsI /
xNcI of topology.py, each a network namespace inside this one container, each with a host agent
of its own on a socket beside this agent's (SHARED/boxes/ROLE.sock), so the testbed drives them
by role exactly as it drives the namespaces of a native testbed.

Why namespaces in one box rather than one container per router and hop: a run has 0 to 3 hops
(the ETEN reproductions 2, the IP-ERN one 1) and 0 to several cross hosts at each end, and the
wires between them change with that count; containers are wired once, at their start, while
namespaces are made per run. The box's three Docker interfaces are its only fixed wiring:

    srv     (srvlan)  the servers' LAN: bridged into LAN 1, where r1 holds 10.250.1.1
    hopup   (hopup)   hop K's client-side wire: bridged to hop K's `st` port, toward the gw box
    hoplan  (hoplan)  the LAN at the client end of hop K: bridged into LAN K+1, with the gw box

Every LAN p (1..K+1) is a bridge `brP` in this box's own namespace, joined by veths to its router
(r_p's `lan`; LAN K+1's router is the gw box, across `hoplan`) and its cross hosts (`eth0`), as
topology.build's LAN bridges are; the addresses and routes are satlab.agent.namespaces' plan. The
gw box gives up 10.250.1.1 and takes hop K's and LAN K+1's addresses by POST /addressing
(satlab.testbed.containers). With no hops the box has no namespace, and the servers' LAN is the
gw box's, as before.

A hardware hop box (role `hop`, satlab.testbed.hardware) is a machine running this agent with
--hop-box on TLS: the same build on its three registered NICs (POST /hops `uplinks`). Its
sub-agents' sockets are on that machine, so the controller reaches them through this agent
(`/boxes/ROLE/...`, agent.server). The box owns every named network namespace it sees (teardown
removes them all): run its agent in a mount namespace of its own with a private /run/netns
(README, hardware).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from satlab.agent import namespaces
from satlab.agent.namespaces import ip_json
from satlab.bounded import stop_processes

# The box's Docker interfaces (docker-compose.yml names them with SATLAB_IFACES); a hardware hop
# box names its NICs in the registry, and POST /hops passes them as `uplinks` in this order.
UPLINKS = ("srv", "hopup", "hoplan")
AGENT_START_TIMEOUT_S = 10.0
AGENT_STOP_GRACE_S = 5.0  # each sub-agent stops its own programs first
# What build() makes in the box's own namespace: LAN bridges brP, br-up, and veths v<role>.
_OWN_LINK = re.compile(r"br(\d+|-up)|v(r|hop|x)\d\w*")


def _ip(*args: str) -> None:
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {r.stderr.strip()}")


class SubAgents(ABC):
    """A host agent per namespace a box makes for a run (this module's hops, or a compose st
    box's extra terminals, satlab.agent.terminalbox), each on a socket beside the box's own."""

    def __init__(self, boxes: Path, workdir: Path) -> None:
        self.boxes = boxes  # where the sub-agents' sockets go (beside this agent's)
        self.workdir = workdir  # their programs' output, removed with them
        self.agents: dict[str, subprocess.Popen[bytes]] = {}

    def _start_agent(self, role: str) -> None:
        sock = self.boxes / f"{role}.sock"
        with contextlib.suppress(FileNotFoundError):
            sock.unlink()  # a stale one from an agent that was killed
        argv = ["nsenter", f"--net=/run/netns/{role}", "--", sys.executable, "-m"]
        argv += ["satlab.agent.server", "--socket", str(sock), "--name", role]
        argv += ["--workdir", str(self.workdir / role)]
        self.agents[role] = subprocess.Popen(argv, stdout=subprocess.DEVNULL)

    def _wait_for_agents(self) -> None:
        deadline = time.monotonic() + AGENT_START_TIMEOUT_S + 2.0 * len(self.agents)
        for role, proc in self.agents.items():
            while not (self.boxes / f"{role}.sock").exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the agent of {role} did not start")
                time.sleep(0.05)

    @abstractmethod
    def teardown(self) -> list[str]:
        """Removes the namespaces this box made and stops their agents; the roles removed."""

    def _replace(self, wire: Callable[[dict[str, dict[str, Any]]], None]) -> dict[str, Any]:
        """Tears down what an earlier run left, then `wire` makes the namespaces (filling each
        role's address, default gateway and data interfaces) and an agent starts in each; on
        any error, nothing stays. Returns the roles' boxes."""
        self.teardown()
        boxes: dict[str, dict[str, Any]] = {}
        try:
            wire(boxes)
            for role in boxes:
                self._start_agent(role)
            self._wait_for_agents()
        except BaseException:
            self.teardown()
            raise
        return boxes

    def _stop_agents(self) -> None:
        """Each sub-agent stops its own programs first."""
        stop_processes(self.agents.values(), AGENT_STOP_GRACE_S)
        self.agents.clear()
        shutil.rmtree(self.workdir, ignore_errors=True)


class HopBox(SubAgents):
    """The namespaces and sub-agents of the current run's hops in this box."""

    def __init__(self, boxes: Path, workdir: Path) -> None:
        super().__init__(boxes, workdir / "hops")

    def build(
        self, hops: list[int], mtu: int, uplinks: tuple[str, str, str] = UPLINKS
    ) -> dict[str, Any]:
        """Replaces whatever an earlier run left with `hops` (the cross hosts at each end of each
        hop); returns each role's address, default gateway and data interfaces, and this box's
        own interfaces (for offload settings). `uplinks`: this box's interfaces to the servers'
        LAN, to hop K's far end and to LAN K+1 (module docstring)."""
        boxes = self._replace(lambda made: self._wire(hops, mtu, uplinks, made))
        # the veths of this namespace: the Docker uplinks and the LAN bridges' ports
        own = [link["ifname"] for link in ip_json("link", "show", "type", "veth")] if hops else []
        return {"boxes": boxes, "interfaces": own}

    def _wire(
        self,
        hops: list[int],
        mtu: int,
        uplinks: tuple[str, str, str],
        boxes: dict[str, dict[str, Any]],
    ) -> None:
        server_uplink, hop_uplink, lan_uplink = uplinks
        k_hops = len(hops)
        if not k_hops:
            return

        def box(role: str, address: str | None = None, gateway: str | None = None) -> None:
            _ip("netns", "add", role)
            _ip("-n", role, "link", "set", "dev", "lo", "up")
            boxes[role] = {"address": address, "lan_gateway": gateway, "interfaces": []}

        def veth(a: str | None, a_if: str, b: str, b_if: str) -> None:
            """A veth from namespace `a` (None: this box's own) to namespace `b`."""
            where = ["-n", a] if a else []
            _ip(*where, *f"link add name {a_if} mtu {mtu} type veth peer name {b_if}".split())
            _ip(*where, "link", "set", "dev", b_if, "netns", b)
            _ip(*where, "link", "set", "dev", a_if, "up")
            _ip("-n", b, "link", "set", "dev", b_if, "mtu", str(mtu), "up")
            for role, ifname in ((a, a_if), (b, b_if)):
                if role:
                    boxes[role]["interfaces"].append(ifname)

        def address(role: str, ifname: str, addr: str) -> None:
            _ip("-n", role, "addr", "add", f"{addr}/24", "dev", ifname)

        def lan_member(p: int, role: str, ifname: str, addr: str) -> None:
            veth(None, f"v{role}", role, ifname)
            _ip("link", "set", "dev", f"v{role}", "master", f"br{p}")
            address(role, ifname, addr)

        for p in range(1, k_hops + 2):  # LAN p: a bridge here (namespaces.lan_net(p))
            _ip("link", "add", "name", f"br{p}", "mtu", str(mtu), "type", "bridge")
            _ip("link", "set", "dev", f"br{p}", "up")
        for uplink, p in ((server_uplink, 1), (lan_uplink, k_hops + 1)):
            _ip("link", "set", "dev", uplink, "mtu", str(mtu), "master", f"br{p}", "up")
        _ip("link", "add", "name", "br-up", "mtu", str(mtu), "type", "bridge")
        _ip("link", "set", "dev", "br-up", "up")
        _ip("link", "set", "dev", hop_uplink, "mtu", str(mtu), "master", "br-up", "up")
        for k, cross in enumerate(hops, 1):
            r, hop = namespaces.router(k), namespaces.hop_box(k)
            box(r, f"{namespaces.lan_net(k)}.1")
            box(hop)
            lan_member(k, r, "lan", f"{namespaces.lan_net(k)}.1")
            veth(r, "down", hop, "gw")  # the hop emulator's ports: gw and st
            address(r, "down", f"{namespaces.hop_net(k)}.1")
            for end, p, base in (("s", k, 100), ("c", k + 1, 200)):
                gateway = f"{namespaces.lan_net(p)}.1"
                for i in range(1, cross + 1):
                    x, addr = (
                        namespaces.cross_host(k, end, i),
                        f"{namespaces.lan_net(p)}.{base + i}",
                    )
                    box(x, addr, gateway)
                    lan_member(p, x, "eth0", addr)
                    _ip("-n", x, "route", "add", "default", "via", gateway)
        for k in range(1, k_hops + 1):
            hop = namespaces.hop_box(k)
            if k < k_hops:
                veth(namespaces.router(k + 1), "up", hop, "st")
                address(namespaces.router(k + 1), "up", f"{namespaces.hop_net(k)}.2")
            else:  # toward the gw box's `hopup`, across this box's own
                veth(None, f"v{hop}", hop, "st")
                _ip("link", "set", "dev", f"v{hop}", "master", "br-up")
        for p in range(1, k_hops + 1):  # toward the satellite by default, back by what is behind
            r = namespaces.router(p)
            _ip("-n", r, "route", "add", "default", "via", f"{namespaces.hop_net(p)}.2")
            behind = [namespaces.lan_net(q) for q in range(1, p)]
            behind += [namespaces.hop_net(q) for q in range(1, p - 1)]
            for net in behind:
                _ip("-n", r, "route", "add", f"{net}.0/24", "via", f"{namespaces.hop_net(p - 1)}.1")

    def teardown(self) -> list[str]:
        """Stops the sub-agents (each stops its programs), aborts the TCP sockets left in each
        namespace (an orphan would keep it, and its veths, alive) and removes the namespaces and
        this box's bridges and veths; the Docker interfaces stay. Returns the roles removed."""
        self._stop_agents()
        roles = [n["name"] for n in ip_json("netns", "list")]
        for role in roles:
            namespaces.abort_tcp(role)
            _ip("netns", "del", role)
        for link in ip_json("link", "show"):
            if _OWN_LINK.fullmatch(link["ifname"]):
                with contextlib.suppress(RuntimeError):  # a veth gone with its peer's namespace
                    _ip("link", "del", link["ifname"])
        return sorted(roles)
