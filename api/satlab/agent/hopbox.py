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
topology.build's LAN bridges are; links, addresses and routes are satlab.agent.hop_plan's. The
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

from satlab.agent import hop_plan, namespaces
from satlab.agent.hop_plan import EDGE, Cable, HopPlan, Lan, Node
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
        plan = hop_plan.plan(hops)  # refuses (400) before anything is torn down
        boxes = self._replace(lambda made: self._wire(plan, mtu, uplinks, made))
        # the veths of this namespace: the Docker uplinks and the LAN bridges' ports
        own = [link["ifname"] for link in ip_json("link", "show", "type", "veth")] if hops else []
        return {"boxes": boxes, "interfaces": own}

    def _wire(
        self,
        plan: HopPlan,
        mtu: int,
        uplinks: tuple[str, str, str],
        boxes: dict[str, dict[str, Any]],
    ) -> None:
        """Executes the hops' plan (satlab.agent.hop_plan) in this box: every node a namespace,
        every LAN a bridge here, and the gw edge's side of it across the uplinks."""
        if not plan.nodes:
            return
        wiring = _HopBoxWiring(mtu, boxes)
        for node in plan.nodes:
            wiring.namespace(node)
        wiring.bridges(plan, uplinks)
        for lan in plan.lans:
            wiring.lan_members(lan)
        for cable in plan.cables:
            wiring.cable(cable)
        for a in plan.addresses:
            if a.node != EDGE:  # the gw box's own: POST /addressing (containers.box_plans)
                _ip("-n", a.node, "addr", "add", a.cidr, "dev", a.ifname)
        for r in plan.routes:
            if r.node != EDGE:
                _ip("-n", r.node, "route", "add", r.dst, "via", r.via)

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


class _HopBoxWiring:
    """The hop box's steps for the parts of the plan: namespaces, LAN bridges in the box's own
    namespace (with the uplinks as ports), and veths, each with the run's MTU."""

    def __init__(self, mtu: int, boxes: dict[str, dict[str, Any]]) -> None:
        self.mtu = mtu
        self.boxes = boxes  # role -> address, LAN gateway and data interfaces, for the runner

    def namespace(self, node: Node) -> None:
        _ip("netns", "add", node.role)
        _ip("-n", node.role, "link", "set", "dev", "lo", "up")
        self.boxes[node.role] = {
            "address": node.address,
            "lan_gateway": node.lan_gateway,
            "interfaces": [],
        }

    def veth(self, a: str | None, a_if: str, b: str, b_if: str) -> None:
        """A veth from namespace `a` (None: this box's own) to namespace `b`."""
        where = ["-n", a] if a else []
        _ip(*where, *f"link add name {a_if} mtu {self.mtu} type veth peer name {b_if}".split())
        _ip(*where, "link", "set", "dev", b_if, "netns", b)
        _ip(*where, "link", "set", "dev", a_if, "up")
        _ip("-n", b, "link", "set", "dev", b_if, "mtu", str(self.mtu), "up")
        for role, ifname in ((a, a_if), (b, b_if)):
            if role:
                self.boxes[role]["interfaces"].append(ifname)

    def bridge(self, name: str, ports: list[str]) -> None:
        _ip("link", "add", "name", name, "mtu", str(self.mtu), "type", "bridge")
        _ip("link", "set", "dev", name, "up")
        for port in ports:
            _ip("link", "set", "dev", port, "mtu", str(self.mtu), "master", name, "up")

    def bridges(self, plan: HopPlan, uplinks: tuple[str, str, str]) -> None:
        """LAN p's bridge brP, the servers' LAN (1) and the gw box's (K+1) with their uplinks as
        ports, and br-up, hop K's wire to the gw box across its uplink."""
        server_uplink, hop_uplink, lan_uplink = uplinks
        first, last = plan.lans[0].position, plan.lans[-1].position
        ports = {first: [server_uplink], last: [lan_uplink]}
        for lan in plan.lans:
            self.bridge(f"br{lan.position}", ports.get(lan.position, []))
        self.bridge("br-up", [hop_uplink])

    def lan_members(self, lan: Lan) -> None:
        """LAN p's router (on `lan`; the gw box is across the uplink) and cross hosts (`eth0`),
        each by a veth v<role> from this box's bridge."""
        members = [] if lan.router == EDGE else [(lan.router, "lan")]
        for role, ifname in members + [(x.role, "eth0") for x in lan.hosts]:
            self.veth(None, f"v{role}", role, ifname)
            _ip("link", "set", "dev", f"v{role}", "master", f"br{lan.position}")

    def cable(self, cable: Cable) -> None:
        """A hop's cable; the one to the gw edge ends at br-up, toward the gw box's `hopup`."""
        if cable.a != EDGE:
            self.veth(cable.a, cable.a_if, cable.b, cable.b_if)
            return
        self.veth(None, f"v{cable.b}", cable.b, cable.b_if)
        _ip("link", "set", "dev", f"v{cable.b}", "master", "br-up")
