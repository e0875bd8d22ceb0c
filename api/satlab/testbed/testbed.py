"""A testbed's lifecycle: namespaces up, one agent per box, host settings, and a teardown that
leaves nothing behind, even after the orchestrator was SIGKILLed (the sweeper run at every start
finds what a dead owner left, by the project's name prefix and a state directory per testbed).
Every box has its namespace, including the routers, hop emulators and cross hosts of terrestrial
hops (topology.py), so the same sweep removes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from satlab.agent.tlshttp import TlsTarget
from satlab.agent.unixhttp import AgentError, request
from satlab.bounded import stop_processes
from satlab.scenario import HostSettings
from satlab.settings import STATE_ROOT
from satlab.testbed import schemes, topology

AGENT_START_TIMEOUT_S = 10.0
# The agents start at once and share the CPU: each interpreter's start-up is CPU time, so a testbed
# of many boxes (terrestrial hops add routers, hop emulators and cross hosts) gets more time. An
# agent that dies is seen at once (poll), so a generous bound only waits for one that hangs.
AGENT_START_PER_BOX_S = 2.0
AGENT_STOP_GRACE_S = 5.0


class TestbedError(RuntimeError):
    pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _is_our_agent(pid: int) -> bool:
    try:
        return b"satlab.agent.server" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def wait_for_agent(
    target: str | TlsTarget, proc: subprocess.Popen[bytes], log: Path, deadline: float, name: str
) -> None:
    """Returns once the agent at `target` (its Unix socket or TLS endpoint) answers /health; raises
    TestbedError with the end of its `log` when its process exited or `deadline` (monotonic
    clock) passed first."""
    while True:
        try:
            request(target, "GET", "/health", timeout=1)
            return
        except AgentError:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-1000:]
                raise TestbedError(f"agent {name} did not start: {tail}") from None
            time.sleep(0.05)


def kill_agent_group(agent_pid: int) -> None:
    """SIGKILL every process left in an agent's process group: the programs it started (emulator,
    traffic, captures) outlive an agent that was itself killed. A group is found by its members'
    pgid in /proc, so a dead agent's group is still found, and nothing outside it is touched."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == agent_pid:  # field 5 of /proc/PID/stat: the process group
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(stat.parent.name), signal.SIGKILL)


def sweep() -> list[str]:
    """Remove every testbed whose owner process is gone: its agents (by recorded PID), then its
    namespaces and pinned BPF maps. Namespaces with the project prefix and no state directory
    are leftovers too.

    Other processes create and close testbeds meanwhile, so whatever was listed may be gone, or
    just made, when the sweeper acts on it: each step decides on what is there at that moment."""
    swept = []
    known = set()
    if STATE_ROOT.is_dir():
        for d in STATE_ROOT.iterdir():
            known.add(d.name)
            try:
                state = json.loads((d / "state.json").read_text())
            except FileNotFoundError:
                # No state (any more): its owner is still writing it or already removing the
                # directory. Namespaces come only after the state, and go before it.
                continue
            except (OSError, json.JSONDecodeError):
                state = {"owner_pid": -1, "agents": {}}
            if state["owner_pid"] > 0 and _alive(state["owner_pid"]):
                continue
            for pid in state["agents"].values():
                if _is_our_agent(pid):
                    with contextlib.suppress(ProcessLookupError):  # it exited since the check
                        os.kill(pid, signal.SIGKILL)
                kill_agent_group(pid)
            topology.teardown(d.name)
            schemes.remove_pins(d.name)
            shutil.rmtree(d, ignore_errors=True)
            swept.append(d.name)
    for name in topology.project_namespaces():
        tid = name[len(topology.PREFIX) :].split("-", 1)[0]
        # A testbed started since the state directories were listed has its directory by now.
        if tid not in known and not (STATE_ROOT / tid).exists():
            topology.teardown(tid)
            swept.append(tid)
    return swept


class Testbed:
    """`with Testbed(servers=1, clients=1) as tb:` gives a wired testbed with an agent per box."""

    __test__ = False  # not a pytest test class, despite its name

    def __init__(
        self,
        servers: int = 1,
        clients: int = 1,
        mtu: int = 1500,
        gateway: bool = False,
        hops: list[int] | None = None,
        terminal_clients: list[int] | None = None,
        terminal_vlans: list[int] | None = None,
    ) -> None:
        self.id = secrets.token_hex(2)
        self.servers, self.clients, self.mtu = servers, clients, mtu
        self.gateway = gateway  # splice satlab-gateway in at both edges (topology.build)
        self.hops = list(hops or [])  # terrestrial hops: cross hosts at each end of each
        self.terminal_clients = terminal_clients  # several terminals (satlab.testbed.terminals)
        self.terminal_vlans = terminal_vlans  # their VLAN IDs on the st port (terminals.vlans)
        self.dir = self._run_dir()
        self.agent_procs: dict[str, subprocess.Popen[bytes]] = {}
        self.topo: topology.Topology | None = None

    def _run_dir(self) -> Path:
        """Where this testbed keeps its state.json (and, here, its agents' sockets) while open;
        each kind of testbed has its own root, which backend.owned_testbed searches."""
        return STATE_ROOT / self.id

    # -- lifecycle --
    def __enter__(self) -> Testbed:
        sweep()
        self.dir.mkdir(parents=True, exist_ok=False)
        self._save_state()
        try:
            self.topo = topology.build(
                self.id,
                self.servers,
                self.clients,
                self.mtu,
                self.gateway,
                self.hops,
                self.terminal_clients,
                self.terminal_vlans,
            )
            self._start_agents()
            self._configure_forwarding()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        stop_processes(self.agent_procs.values(), AGENT_STOP_GRACE_S)
        for p in self.agent_procs.values():
            kill_agent_group(p.pid)
        topology.teardown(self.id)
        schemes.remove_pins(self.id)
        shutil.rmtree(self.dir, ignore_errors=True)

    def _save_state(self) -> None:
        state = {
            "owner_pid": os.getpid(),
            "agents": {r: p.pid for r, p in self.agent_procs.items()},
        }
        # Written aside and renamed into place: a sweeper reading it meanwhile sees the old or
        # the new state, never a half-written file it would take for an orphan's.
        tmp = self.dir / "state.json.tmp"
        tmp.write_text(json.dumps(state))
        tmp.replace(self.dir / "state.json")

    def _start_agents(self) -> None:
        assert self.topo is not None
        for role, box in self.topo.boxes.items():
            argv = [
                "nsenter",
                f"--net=/run/netns/{box.netns}",
                "--",
                sys.executable,
                "-m",
                "satlab.agent.server",
                "--socket",
                str(self.socket(role)),
                "--name",
                role,
            ]
            log = open(self.dir / f"agent-{role}.log", "wb")  # noqa: SIM115 (the child owns it)
            self.agent_procs[role] = subprocess.Popen(
                argv, stdout=log, stderr=log, start_new_session=True
            )
            log.close()
        self._save_state()
        deadline = time.monotonic() + AGENT_START_TIMEOUT_S
        deadline += AGENT_START_PER_BOX_S * len(self.agent_procs)
        for role, proc in self.agent_procs.items():
            log_path = self.dir / f"agent-{role}.log"
            wait_for_agent(str(self.socket(role)), proc, log_path, deadline, role)

    def _configure_forwarding(self) -> None:
        assert self.topo is not None
        for edge in (*self.topo.edges, *self.topo.routers):
            self.agent(edge, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
        # Real packet sizes on every wire: the emulator must see each 1500-byte packet on its own,
        # and checksums must be complete before it flips bits (veth passes GSO super-packets and
        # partial checksums otherwise).
        for role in self.topo.host_roles + self.topo.routers:
            self.agent(
                role, "POST", "/offloads", {"interfaces": topology.interfaces(self.topo, role)}
            )

    # -- use --
    def socket(self, role: str) -> Path:
        return self.dir / f"{role}.sock"

    def agent(
        self, role: str, method: str, url: str, body: Any = None, timeout: float = 10.0
    ) -> Any:
        return request(str(self.socket(role)), method, url, body, timeout)

    def agent_alive(self, role: str) -> bool:
        return self.agent_procs[role].poll() is None

    def emulator_interfaces(self) -> dict[str, str]:
        """The emulator box's NIC toward each edge (a hardware box's are its registered NICs)."""
        return {"gw": "gw", "st": "st"}

    def apply_host_settings(self, s: HostSettings) -> None:
        """TCP settings of every end host (sysctls in its namespace, route metrics)."""
        assert self.topo is not None
        sysctls = {
            "net.ipv4.tcp_sack": int(s.sack),
            "net.ipv4.tcp_ecn": {"off": 0, "on": 1, "passive": 2}[s.ecn],
            "net.ipv4.tcp_timestamps": int(s.timestamps),
            "net.ipv4.tcp_recovery": int(s.rack),
            "net.ipv4.tcp_early_retrans": 3 if s.tlp else 0,
            "net.ipv4.tcp_reordering": s.reordering_packets,
            "net.ipv4.tcp_max_reordering": s.max_reordering_packets,
            "net.ipv4.tcp_rmem": f"4096 131072 {s.rmem_max_bytes}",
            "net.ipv4.tcp_wmem": f"4096 16384 {s.wmem_max_bytes}",
            # Every run starts from the same state: no cached ssthresh/RTT from an earlier flow.
            "net.ipv4.tcp_no_metrics_save": 1,
        }
        metrics = {}
        if s.window_clamp_bytes:
            metrics["window"] = s.window_clamp_bytes
            # Receive-buffer autotuning raises a connection's window clamp as the buffer grows
            # (tcp_rcv_space_adjust): with it on, the clamp holds only for the first RTTs.
            sysctls["net.ipv4.tcp_moderate_rcvbuf"] = 0
        if s.mss_bytes:
            metrics["advmss"] = s.mss_bytes
        if s.initial_cwnd_packets:
            metrics["initcwnd"] = s.initial_cwnd_packets
        for role in self.topo.host_roles:
            if role in self.topo.edges:
                continue
            out = self.agent(role, "POST", "/sysctl", sysctls)
            if out["failed"]:
                raise TestbedError(f"{role}: sysctls refused: {out['failed']}")
            if metrics:  # the box's agent sets them: the same request on every backend
                self.agent(role, "POST", "/route-metrics", {"metrics": metrics})
