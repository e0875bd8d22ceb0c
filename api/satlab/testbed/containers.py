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
  by their agents (POST /splice: the same ports a namespace edge has), undone when the run ends;
- the end hosts' eBPF schemes, the PEP and the withholding receiver start through the agents as on
  namespaces; what differs is only where the kernel objects live: the boxes mount the host's BPF
  filesystem and cgroup v2 hierarchy (docker-compose.yml), each box's agent makes its scheme's pin
  directory and traffic cgroup there (agent.server.scheme_dirs), and the emu box's Oracle ETEN
  writer opens the sender's pinned eten_notices in the same bpffs;
- no terrestrial hops: a scenario with `path.terrestrial` is refused naming that field. Its
  routers, hop emulators and cross hosts would be more boxes, and the wiring would differ per run:
  with hops the servers' LAN address 10.250.1.1 belongs to r1 and the gw edge must lose its
  address there (or the replies to srv1 go straight out of gw, past the hops) and take the last
  hop's LAN instead. The compose file wires each box once, at its start (docker/box-entrypoint),
  and the agents have no request that moves addresses and routes between runs, so hop runs go
  to a namespace testbed (the compose file's `netns` profile workers, or the native runner).

Selected with SATLAB_TESTBED=containers (satlab.testbed.backend).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from pathlib import Path

from satlab.agent.unixhttp import AgentError
from satlab.settings import SHARED_DIR
from satlab.testbed import topology
from satlab.testbed.gateway import OUTSIDE
from satlab.testbed.testbed import Testbed, TestbedError
from satlab.testbed.topology import GATEWAY_INSIDE

BOXES = SHARED_DIR / "boxes"  # ROLE.sock per box (docker/box-entrypoint)
RUNS = SHARED_DIR / "runs"  # one directory per open testbed
# Interfaces of each box as docker/box-entrypoint names them (the emulator's ports are gw and st;
# an edge's LAN side is one interface `lan`, the compose network being the LAN switch).
EDGE_INTERFACES = ["sat0", "lan"]
# How long opening the testbed waits for a box's agent: a box starts in about 1 s, a restarting
# one (restart: unless-stopped) in 1-2 s more.
BOX_START_TIMEOUT_S = 10.0


def box_address(role: str) -> str | None:
    """topology.py's address plan: what other boxes reach a box at."""
    if role.startswith("srv"):
        return f"{topology.SERVER_NET}.{10 + int(role[3:])}"
    if role.startswith("cli"):
        return f"{topology.CLIENT_NET}.{10 + int(role[3:])}"
    return {"gw": f"{topology.SAT_NET}.1", "st": f"{topology.SAT_NET}.2"}.get(role)


class ContainerTestbed(Testbed):
    """`with ContainerTestbed(servers=1, clients=1) as tb:`: the compose boxes as one testbed."""

    __test__ = False
    _lock: int | None = None  # the boxes' flock while open

    def _run_dir(self) -> Path:
        return RUNS / self.id

    def __enter__(self) -> ContainerTestbed:
        if self.hops:
            raise TestbedError(
                "path.terrestrial: the compose testbed has no terrestrial hops (routers and hop "
                "emulators between the servers and the gw edge); run scenarios with hops on a "
                "namespace testbed (SATLAB_TESTBED=namespaces: a `netns` profile worker)"
            )
        roles = [f"srv{i}" for i in range(1, self.servers + 1)] + ["gw", "emu", "st"]
        roles += [f"cli{i}" for i in range(1, self.clients + 1)]
        # A box that ever ran has its agent's directory; its socket may be gone for a moment (a
        # restarting box: _wait_for_agent waits for it), the directory is not.
        missing = [r for r in roles if not (BOXES / f"agent-{r}").is_dir()]
        if missing:
            have = sorted(p.name.removeprefix("agent-") for p in BOXES.glob("agent-*"))
            raise TestbedError(
                f"hosts: this compose testbed has boxes {have}, the scenario needs {missing} too "
                "(hosts.servers/hosts.clients at most the srvN/cliN services of docker-compose.yml)"
            )
        self._lock = os.open(BOXES / ".lock", os.O_CREAT | os.O_RDWR, 0o664)
        fcntl.flock(self._lock, fcntl.LOCK_EX)  # the boxes are one testbed: runs take turns
        try:
            for stale in RUNS.glob("*") if RUNS.is_dir() else []:
                shutil.rmtree(stale, ignore_errors=True)  # left by a worker that died mid-run
            self.dir.mkdir(parents=True)
            # whose testbed this is (backend.owned_testbed: the worker's live view and control)
            (self.dir / "state.json").write_text(json.dumps({"owner_pid": os.getpid()}))
            self.topo = topology.Topology(self.id, self.servers, self.clients, self.mtu)
            for role in roles:
                self.topo.boxes[role] = topology.Box(role, f"container:{role}", box_address(role))
                self._wait_for_agent(role)
                self._reset(role)
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
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            os.close(self._lock)  # releases the flock
            self._lock = None

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
        self.agent(edge, "POST", "/unsplice", {"interface": "sat0", "outside": OUTSIDE})

    def _splice_gateways(self) -> None:
        """The edge gateway's two ports in each edge box, as topology.build wires a namespace
        edge: sat0 becomes a veth whose peer the gateway reads, the Docker interface toward the
        emulator is renamed `wan`. Always undone first: a worker that died mid-run leaves it."""
        for edge, inside in GATEWAY_INSIDE.items():
            self._unsplice(edge)
            if self.gateway:
                body = {"interface": "sat0", "inside": inside, "outside": OUTSIDE}
                self.agent(edge, "POST", "/splice", body)

    def _configure_forwarding(self) -> None:
        assert self.topo is not None
        for edge in ("gw", "st"):
            self.agent(edge, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
        for role in self.topo.host_roles:
            ifaces = EDGE_INTERFACES if role in ("gw", "st") else ["eth0"]
            if role in GATEWAY_INSIDE and self.gateway:
                ifaces = [*ifaces, GATEWAY_INSIDE[role], OUTSIDE]
            self.agent(role, "POST", "/offloads", {"interfaces": ifaces})
        self.agent("emu", "POST", "/offloads", {"interfaces": ["gw", "st"]})

    def socket(self, role: str) -> Path:
        return BOXES / f"{role}.sock"

    def agent_alive(self, role: str) -> bool:
        try:
            self.agent(role, "GET", "/health", timeout=2)
        except AgentError:
            return False
        return True
