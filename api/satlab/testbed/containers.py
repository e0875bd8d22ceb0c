"""The Docker Compose testbed: the boxes are containers (docker-compose.yml) instead of network
namespaces, each running the same host agent (satlab.agent.server, started by
docker/box-entrypoint) on a Unix socket in a volume it shares with the workers. The runner drives it
exactly as it drives a namespace testbed; only building and tearing down differ:

- the boxes exist before the run and after it: opening the testbed checks every agent answers and
  resets it (stops whatever an earlier run left), closing resets them again;
- the wiring is the compose file's, on topology.py's address plan (srv1 10.250.1.11, gw sat
  10.250.2.1, st sat 10.250.2.2, cli1 10.250.3.11), so the runner's addresses are unchanged;
- one testbed per set of boxes: workers sharing a set take turns (an exclusive lock on the shared
  volume), so `--scale worker=N` adds queue consumers, not parallel runs (README, Docker Compose);
- the per-run directory (emulator and gateway files, the telemetry socket) is on the shared volume
  (SATLAB_SHARED_DIR/runs/ID), where the boxes see it at the same path;
- a configuration with a `gateway` section gets the edge gateway spliced into the gw and st boxes
  by their agents (POST /splice: the same ports a namespace edge has), undone when the run ends,
  and terminals 2..N's st edges are built with it (satlab.agent.terminalbox);
- the end hosts' eBPF schemes, the PEP and the withholding receiver start through the agents as on
  namespaces; what differs is only where the kernel objects live: the boxes mount the host's BPF
  filesystem and cgroup v2 hierarchy (docker-compose.yml), each box's agent makes its scheme's pin
  directory and traffic cgroup there (agent.server.scheme_dirs), and the emu box's Oracle ETEN
  writer opens the sender's pinned eten_notices in the same bpffs;
- terrestrial hops (`path.terrestrial`): the `hops` box's agent builds the run's routers, hop
  emulators and cross hosts as namespaces inside that one box, each with an agent of its own
  (POST /hops, satlab.agent.hopbox says why namespaces there rather than containers), on
  satlab.agent.namespaces' address plan. The box sits on the servers' LAN and on two networks
  to the gw box (`hopup`, `hoplan`); for the run the gw box gives 10.250.1.1 up to r1 and takes
  hop K's and LAN K+1's addresses, the st box routes the hops' networks across the satellite
  (POST /addressing, box_plans); closing puts them back. Without hops the `hops` box is idle and
  not on the path;
- several terminals of a beam (`hosts.terminals`, satlab.testbed.terminals): the st box is
  terminal 1's edge with the compose clients (cli1..) on its LAN, and its agent builds terminals
  2..N, each an st edge stK with its clients, as namespaces inside the box, each with an agent of
  its own (POST /terminals, satlab.agent.terminalbox), on terminals.py's address plan. Where the
  namespace testbed puts a bridge `sw` between the emulator's st port and the edges, the compose
  network satst already is that switch: each extra edge's satellite port is a macvlan of the st
  box's sat0, a station of its own on it (terminalbox says why). The gw box routes each
  terminal's LAN by its edge for the run (box_plans); closing removes them. Chosen over a
  container per terminal for the reason the hops box gives: the count changes per run;
- every box's data interfaces take the run's MTU (hosts.mtu_bytes) when the testbed opens, and
  the Docker networks' again when it closes.
- `link.backend: opensand`: the emu box's agent wires and starts OpenSAND's entities (POST
  /opensand, satlab.agent.opensandbox) as on namespaces; the box has OpenSAND only with the
  override docker/opensand/compose.yml, and a run without it fails naming the missing binary.

Selected with SATLAB_TESTBED=containers (satlab.testbed.backend).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from satlab.agent import hop_plan, namespaces
from satlab.agent.requests import (
    Addressing,
    HopsBuild,
    InterfacePlan,
    TerminalPlan,
    TerminalsBuild,
)
from satlab.agent.unixhttp import AgentError
from satlab.settings import SHARED_DIR
from satlab.testbed import gateway as edge_gateway
from satlab.testbed import terminals, topology
from satlab.testbed.gateway import OUTSIDE
from satlab.testbed.testbed import Testbed, TestbedError
from satlab.testbed.topology import GATEWAY_INSIDE

BOXES = SHARED_DIR / "boxes"  # ROLE.sock per box (docker/box-entrypoint)
RUNS = SHARED_DIR / "runs"  # one directory per open testbed
# Interfaces of each box as docker/box-entrypoint names them (the emulator's ports are gw and st;
# an edge's LAN side is one interface `lan`, the compose network being the LAN switch).
EDGE_INTERFACES = ["sat0", "lan"]
COMPOSE_MTU = 1500  # the Docker networks' (docker-compose.yml): the boxes' MTU between runs
HOP_BOX = "hops"  # the box whose agent builds a run's terrestrial hops (docker-compose.yml)
# The gw box's interfaces toward the hops box (docker-compose.yml): hop K's wire and LAN K+1.
GW_HOP_INTERFACES = ["hopup", "hoplan"]
GW_PLAN_INTERFACES = ["up", "lan"]  # the same, as the hops' plan names a namespace gw's
# How long opening the testbed waits for a box's agent: a box starts in about 1 s, a restarting
# one (restart: unless-stopped) in 1-2 s more.
BOX_START_TIMEOUT_S = 10.0


def box_address(role: str) -> str | None:
    """The address plan (satlab.agent.namespaces): what other boxes reach a box at."""
    if role.startswith("srv"):
        return f"{namespaces.SERVER_NET}.{10 + int(role[3:])}"
    if role.startswith("cli"):
        return f"{namespaces.CLIENT_NET}.{10 + int(role[3:])}"
    return {"gw": f"{namespaces.SAT_NET}.1", "st": f"{namespaces.SAT_NET}.2"}.get(role)


def box_plans(
    hops: int, servers: int, clients: int, mtu: int, extra: Sequence[terminals.Terminal] = ()
) -> dict[str, Addressing]:
    """What each compose box's data interfaces get for a run (POST /addressing): the run's MTU
    (hosts.mtu_bytes, as topology.build gives every link), the gw box's routes to the LAN of
    `clients` compose clients (terminal 1, the st box) and of each `extra` terminal (by its st
    edge in the st box, satlab.agent.terminalbox), and with `hops` terrestrial hops the
    edges as the hops' plan has them (satlab.agent.hop_plan, which topology.build executes
    too; 0: the compose file's own wiring). The gw edge then sits
    at position K+1 of the server side (its LAN 10.250.(21+K).1, its hop wire hop K's .2, the
    networks behind reached through hop K's .1) and the st edge reaches them across the
    satellite. The servers keep their route; POST /addressing forgets their neighbours, as
    10.250.1.1 is r1's or gw's by turns."""
    hop_wiring = hop_plan.plan([0] * hops)  # the edges' wiring is the same whatever cross hosts
    via_sat = f"{namespaces.SAT_NET}.1"
    st_routes = [[f"{net}.0/24", via_sat] for net in [namespaces.SERVER_NET, *hop_wiring.far_nets]]
    gw = _gw_edge_plan(hop_wiring)
    gw["sat0"] = {
        "routes": [[f"{t.net}.0/24", t.sat_address] for t in [*terminals.plan([clients]), *extra]]
    }
    srv: dict[str, InterfacePlan] = {
        "eth0": {"routes": [["default", f"{namespaces.SERVER_NET}.1"]]}
    }
    plans: dict[str, dict[str, InterfacePlan]] = {
        "gw": gw,
        "emu": {"gw": {}, "st": {}},
        "st": {"lan": {}, "sat0": {"routes": st_routes}},
        **{f"srv{i}": srv for i in range(1, servers + 1)},
        **{f"cli{i}": {"eth0": {}} for i in range(1, clients + 1)},
    }
    for ifaces in plans.values():
        for plan in ifaces.values():
            plan["mtu"] = mtu
    return {box: {"interfaces": ifaces} for box, ifaces in plans.items()}


def _gw_edge_plan(hop_wiring: hop_plan.HopPlan) -> dict[str, InterfacePlan]:
    """The gw box's interfaces toward the servers for the hops' plan: without hops its `lan` holds
    the servers' gateway and hopup/hoplan nothing; with hops, `lan` gives 10.250.1.1 up to r1 and
    the plan's gw edge is across `hopup` (hop K's wire, a namespace gw's `up`) and `hoplan` (LAN
    K+1, a namespace gw's `lan`)."""
    edge = hop_plan.EDGE
    if not hop_wiring.nodes:
        addresses = [a.cidr for a in hop_wiring.addresses_of(edge, "lan")]
        gw: dict[str, InterfacePlan] = {"lan": {"addresses": addresses}}
        return gw | {i: InterfacePlan(addresses=[], routes=[]) for i in GW_HOP_INTERFACES}
    gw = {"lan": {"addresses": []}}  # 10.250.1.1 is r1's
    for box_if, plan_if in zip(GW_HOP_INTERFACES, GW_PLAN_INTERFACES, strict=True):
        gw[box_if] = {
            "addresses": [a.cidr for a in hop_wiring.addresses_of(edge, plan_if)],
            "routes": [[r.dst, r.via] for r in hop_wiring.routes_of(edge, plan_if)],
        }
    return gw


class ContainerTestbed(Testbed):
    """`with ContainerTestbed(servers=1, clients=1) as tb:`: the compose boxes as one testbed."""

    __test__ = False
    _lock: int | None = None  # the boxes' flock while open

    def _run_dir(self) -> Path:
        return RUNS / self.id

    @property
    def _terminals(self) -> list[terminals.Terminal]:
        """Terminal 1 (the st box and compose clients) and the extra ones (in the st box)."""
        return terminals.plan(self.terminal_clients or [self.clients])

    def __enter__(self) -> ContainerTestbed:
        roles = [f"srv{i}" for i in range(1, self.servers + 1)] + ["gw", "emu", "st"]
        roles += [f"cli{i}" for i in self._terminals[0].clients]
        self._check_boxes(roles)
        self._lock = os.open(BOXES / ".lock", os.O_CREAT | os.O_RDWR, 0o664)
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # the boxes are one testbed: runs take turns
        try:
            for stale in RUNS.glob("*") if RUNS.is_dir() else []:
                shutil.rmtree(stale, ignore_errors=True)  # left by a worker that died mid-run
            self.dir.mkdir(parents=True)
            # whose testbed this is (backend.owned_testbed: the worker's live view and control)
            (self.dir / "state.json").write_text(json.dumps({"owner_pid": os.getpid()}))
            self.topo = topology.Topology(
                self.id,
                self.servers,
                self.clients,
                self.mtu,
                terminals=list(self.terminal_clients or []),
            )
            for role in roles:
                self.topo.boxes[role] = topology.Box(role, f"container:{role}", box_address(role))
                self._wait_for_agent(role)
                self._reset(role)
            for edge in GATEWAY_INSIDE:  # a worker that died mid-run leaves it spliced
                self._unsplice(edge)
            self._wire_hops()
            self._wire_terminals()
            self._splice_gateways()
            self._configure_forwarding()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self.topo is not None:
            for role in self.topo.boxes:
                if self.agent_alive(role):
                    self._reset(role)
                    if role in GATEWAY_INSIDE:
                        self._unsplice(role)
            if self.hops and self.agent_alive(HOP_BOX):
                self.agent(HOP_BOX, "POST", "/hops", HopsBuild(hops=[], mtu=self.mtu), timeout=30)
            if len(self._terminals) > 1 and self.agent_alive("st"):
                self.agent("st", "POST", "/terminals", self._terminals_build([]), timeout=30)
            # the compose file's wiring again, for whatever uses the boxes next
            n = len(self._terminals[0].clients)
            for box, plan in box_plans(0, self.servers, n, COMPOSE_MTU).items():
                if box in self.topo.boxes and self.agent_alive(box):
                    self.agent(box, "POST", "/addressing", plan)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

    def _check_boxes(self, roles: list[str]) -> None:
        """Refuses, naming the field, a run that needs boxes this deployment lacks."""
        # A box that ever ran has its agent's directory; its socket may be gone for a moment (a
        # restarting box: _wait_for_agent waits for it), the directory is not.
        missing = [r for r in roles if not (BOXES / f"agent-{r}").is_dir()]
        have = sorted(p.name.removeprefix("agent-") for p in BOXES.glob("agent-*"))
        if missing:
            raise TestbedError(
                f"hosts: this compose testbed has boxes {have}, the scenario needs {missing} too "
                "(hosts.servers/hosts.clients at most the srvN/cliN services of docker-compose.yml)"
            )
        extra = [r for t in self._terminals[1:] for r in (t.edge, *(f"cli{c}" for c in t.clients))]
        if clash := [r for r in extra if r in have]:
            raise TestbedError(
                f"hosts.terminals: terminals 2.. are built in the st box, but {clash} are boxes "
                "of this compose testbed too: put those clients behind the first terminal"
            )
        if self.hops and HOP_BOX not in have:
            raise TestbedError(
                f"path.terrestrial: this compose testbed has no `{HOP_BOX}` box for the hops' "
                f"routers, emulators and cross hosts (boxes {have}; docker-compose.yml)"
            )

    def _wire_hops(self) -> None:
        """The run's terrestrial hops in the hops box, the gw and st boxes addressed for them
        (without hops: as the compose file wires them), every box at the run's MTU (box_plans).
        Every box the hops box made joins the topology by role, with its own agent."""
        assert self.topo is not None
        if self.hops:
            self._wait_for_agent(HOP_BOX)
            build = HopsBuild(hops=self.hops, mtu=self.mtu)
            built = self.agent(HOP_BOX, "POST", "/hops", build, timeout=60)
            for role, box in built["boxes"].items():
                self.topo.boxes[role] = topology.Box(role, f"container:{HOP_BOX}/{role}", **box)
                self._wait_for_agent(role)
            self.agent(HOP_BOX, "POST", "/offloads", {"interfaces": built["interfaces"]})
        elif self.agent_alive(HOP_BOX):  # what a worker that died mid-run left there
            self.agent(HOP_BOX, "POST", "/hops", HopsBuild(hops=[], mtu=self.mtu), timeout=30)
        first, *extra = self._terminals
        plans = box_plans(len(self.hops), self.servers, len(first.clients), self.mtu, extra)
        for box, plan in plans.items():
            self.agent(box, "POST", "/addressing", plan)

    def _terminals_build(self, extra: list[terminals.Terminal]) -> TerminalsBuild:
        plans = [
            TerminalPlan(edge=t.edge, net=t.net, sat_address=t.sat_address, clients=t.clients)
            for t in extra
        ]
        return TerminalsBuild(terminals=plans, mtu=self.mtu, uplink="sat0", gateway=self.gateway)

    def _wire_terminals(self) -> None:
        """hosts.terminals: terminals 2..N, their st edges and clients, built by the st box's
        agent inside it (satlab.agent.terminalbox); each joins the topology by role, with its
        own agent. The gw box routes their LANs by their edges (box_plans)."""
        assert self.topo is not None
        extra = self._terminals[1:]
        if not extra:
            return
        built = self.agent("st", "POST", "/terminals", self._terminals_build(extra), timeout=60)
        for role, box in built["boxes"].items():
            self.topo.boxes[role] = topology.Box(role, f"container:st/{role}", **box)
            self._wait_for_agent(role)

    def _wait_for_agent(self, role: str) -> None:
        """A box that Docker is (re)starting answers within a second (tests/bench/setup_time.py):
        a run that comes meanwhile waits for it instead of failing."""
        deadline = time.monotonic() + BOX_START_TIMEOUT_S
        while True:
            try:
                self.agent(role, "GET", "/health", timeout=3)
                return
            except AgentError as exc:
                if time.monotonic() > deadline:
                    raise TestbedError(f"box {role}: {exc}") from None
                time.sleep(0.1)

    def _reset(self, role: str) -> None:
        self.agent(role, "DELETE", "/processes", timeout=15)

    def _unsplice(self, edge: str) -> None:
        self.agent(edge, "POST", "/unsplice", edge_gateway.unsplice("sat0"))

    def _splice_gateways(self) -> None:
        """The edge gateway's two ports in each edge box, as topology.build wires a namespace
        edge: sat0 becomes a veth whose peer the gateway reads, the Docker interface toward the
        emulator is renamed `wan` (its addresses and routes move with it). Terminals 2..N's
        edges in the st box got theirs when they were built (satlab.agent.terminalbox says why
        in place). The st box's `wan` stays their macvlans' parent, so its gateway's port also
        sees the frames satst brings to them (its box's kernel drops what the gateway forwards
        of those: another station's MAC)."""
        for edge in GATEWAY_INSIDE:
            if self.gateway:
                self.agent(edge, "POST", "/splice", edge_gateway.splice(edge, "sat0"))

    def _configure_forwarding(self) -> None:
        assert self.topo is not None
        for edge in (*self.topo.edges, *self.topo.routers):
            self.agent(edge, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
        for role, box in self.topo.boxes.items():
            # the hops box's boxes know theirs; the compose boxes' are docker-compose.yml's
            ifaces = box.interfaces or (EDGE_INTERFACES if role in ("gw", "st") else ["eth0"])
            if role == "emu":
                ifaces = ["gw", "st"]
            if role == "gw" and self.hops:
                ifaces = [*ifaces, *GW_HOP_INTERFACES]
            if role in GATEWAY_INSIDE and self.gateway:
                ifaces = [*ifaces, GATEWAY_INSIDE[role], OUTSIDE]
            self.agent(role, "POST", "/offloads", {"interfaces": ifaces})

    def socket(self, role: str) -> Path:
        return BOXES / f"{role}.sock"

    def agent_alive(self, role: str) -> bool:
        try:
            self.agent(role, "GET", "/health", timeout=2)
        except AgentError:
            return False
        return True
