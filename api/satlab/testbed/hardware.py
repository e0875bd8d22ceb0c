"""The hardware testbed: the boxes are registered machines (satlab.service.boxes), each running the
host agent on TCP with mutual TLS (satlab.agent.tlshttp). The runner drives it as it drives the
other kinds; what differs is where the boxes come from and how they are reached:

- the boxes are picked from the registry by role (server, client, gw, emu, st) for the scenario's
  hosts, and leased for the run: a PostgreSQL advisory lock per box, held on a connection of the
  worker's own, so two runs never use one box at a time, and a worker that dies loses its
  connection and with it its leases (PostgreSQL ends the session);
- a run waits for free boxes (SATLAB_BOX_WAIT_S, default 600 s), then fails naming the busy ones;
- every agent is reached by its registered address, and its certificate must carry its registered
  name (a box answering at another's address is refused); the worker presents the controller
  certificate SATLAB_TLS_CERT / SATLAB_TLS_KEY, and trusts the project CA SATLAB_TLS_CA;
- a box whose agent does not answer fails the run with the box's name and address;
- the emulator box's ports are its two registered NICs (af_packet, {gw: first, st: second}), an
  end host's address is the IPv4 address of its registered interface, an edge's that of its
  second (satellite-side) one; the operator wires the experiment network on topology.py's address
  plan (servers behind gw, clients behind st, routes across the satellite), as the compose file
  does for containers;
- the run directory (emulator and gateway files, the emulator's telemetry socket) is
  SATLAB_HARDWARE_DIR/ID, which the worker and the boxes must see at the same path, and the
  telemetry socket being a Unix socket, the worker runs on the emulator box (README, hardware);
- no terrestrial hops and no edge gateway yet: such scenarios are refused naming the field.

Selected with SATLAB_TESTBED=hardware (satlab.testbed.backend).
"""

from __future__ import annotations

import json
import os
import shutil
import ssl
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from satlab.agent import tlshttp
from satlab.agent.tlshttp import TlsTarget
from satlab.agent.unixhttp import AgentError, request
from satlab.settings import HARDWARE_DIR, box_wait_s, controller_tls_paths, get_settings
from satlab.testbed import topology
from satlab.testbed.testbed import Testbed, TestbedError, _alive

# The first key of every box lease (pg_try_advisory_lock(int, int)); the second is the name's CRC32.
# Two names with one CRC only make their boxes take turns, never share.
LEASE_CLASS = 0x5A7B0C5
HEALTH_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class RegisteredBox:
    name: str
    role: str  # server, client, gw, emu, st
    address: str  # host:port of its agent
    interfaces: list[str]

    @property
    def host_port(self) -> tuple[str, int]:
        host, _, port = self.address.rpartition(":")
        return host.strip("[]"), int(port)


def _database_dsn() -> str:
    """The service's database URL as libpq takes it (no SQLAlchemy driver suffix)."""
    url = make_url(get_settings().database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


def _controller_context() -> ssl.SSLContext:
    paths = controller_tls_paths()
    missing = [v for v, p in paths.items() if not p]
    if missing:
        raise TestbedError(
            f"{', '.join(missing)}: the hardware testbed reaches agents with mutual TLS only; "
            "give the worker's controller certificate, key and the project CA (satlab ca issue)"
        )
    try:
        return tlshttp.client_context(
            Path(paths["SATLAB_TLS_CERT"] or ""),
            Path(paths["SATLAB_TLS_KEY"] or ""),
            Path(paths["SATLAB_TLS_CA"] or ""),
        )
    except (OSError, ssl.SSLError) as exc:
        raise TestbedError(f"SATLAB_TLS_CERT/KEY/CA: {exc}") from None


def _remove_orphans() -> None:
    """Run directories of workers that died mid-run (their leases went with their connections);
    a directory without a state yet is a run being opened, left alone."""
    for d in HARDWARE_DIR.iterdir() if HARDWARE_DIR.is_dir() else []:
        try:
            owner = json.loads((d / "state.json").read_text())["owner_pid"]
        except (OSError, ValueError, KeyError):
            continue
        if not _alive(owner):
            shutil.rmtree(d, ignore_errors=True)


def agent_targets(testbed_id: str) -> dict[str, TlsTarget]:
    """The agents of an open hardware testbed by role, from its state file (live control)."""
    try:
        state = json.loads((HARDWARE_DIR / testbed_id / "state.json").read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    ctx = _controller_context()
    out = {}
    for role, (name, address) in state.get("boxes", {}).items():
        host, _, port = address.rpartition(":")
        out[role] = TlsTarget(name, host.strip("[]"), int(port), ctx)
    return out


class Leases:
    """Box leases of one run: advisory locks on a connection of their own (closing it releases
    them all, and so does the death of the worker)."""

    def __init__(self) -> None:
        try:
            self.conn = psycopg.connect(_database_dsn(), autocommit=True)
        except psycopg.Error as exc:
            raise TestbedError(f"hardware: the box registry is unreachable: {exc}") from None
        self.held: set[str] = set()

    def registered(self) -> list[RegisteredBox]:
        rows = self.conn.execute(
            "SELECT name, role, address, interfaces FROM boxes ORDER BY name"
        ).fetchall()
        return [RegisteredBox(n, r, a, list(i)) for n, r, a, i in rows]

    def take(self, name: str) -> bool:
        key = zlib.crc32(name.encode()) - (1 << 31)  # an int4
        row = self.conn.execute(
            "SELECT pg_try_advisory_lock(%s, %s)", (LEASE_CLASS, key)
        ).fetchone()
        if row and row[0]:
            self.held.add(name)
            return True
        return False

    def release(self, name: str) -> None:
        key = zlib.crc32(name.encode()) - (1 << 31)
        self.conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LEASE_CLASS, key))
        self.held.discard(name)

    def close(self) -> None:
        self.conn.close()
        self.held.clear()


def pick(leases: Leases, wanted: dict[str, int], wait_s: float) -> dict[str, list[RegisteredBox]]:
    """`wanted[role]` free boxes of each role, leased; all or none, so two runs waiting for the
    same boxes never hold half each."""
    deadline = time.monotonic() + wait_s
    while True:
        boxes = leases.registered()
        by_role = {r: [b for b in boxes if b.role == r] for r in wanted}
        short = {r: n for r, n in wanted.items() if len(by_role[r]) < n}
        if short:
            need = [
                f"{n} of role {r} (registered: {[b.name for b in by_role[r]]})"
                for r, n in short.items()
            ]
            raise TestbedError(
                f"hosts: the registered boxes cannot hold this scenario: it needs {', '.join(need)}"
            )
        got: dict[str, list[RegisteredBox]] = {r: [] for r in wanted}
        for role, n in wanted.items():
            for box in by_role[role]:
                if len(got[role]) < n and leases.take(box.name):
                    got[role].append(box)
        if all(len(got[r]) == n for r, n in wanted.items()):
            return got
        for taken in got.values():
            for box in taken:
                leases.release(box.name)
        if time.monotonic() > deadline:
            busy = [b.name for r in wanted for b in by_role[r]]
            raise TestbedError(
                f"hardware: no free boxes for this run within {wait_s:g} s (SATLAB_BOX_WAIT_S); "
                f"boxes of the roles it needs, some in use by other runs: {', '.join(busy)}"
            )
        time.sleep(0.5)


class HardwareTestbed(Testbed):
    """`with HardwareTestbed(servers=1, clients=1) as tb:`: leased registered boxes as a testbed."""

    __test__ = False
    # Leased in __enter__: the boxes by testbed role (srv1, gw, emu, st, cli1), their agents.
    boxes: dict[str, RegisteredBox]
    targets: dict[str, TlsTarget]
    _leases: Leases | None = None

    def _run_dir(self) -> Path:
        return HARDWARE_DIR / self.id

    def __enter__(self) -> HardwareTestbed:
        if self.hops:
            raise TestbedError(
                "path.terrestrial: the hardware testbed has no terrestrial hops yet; run "
                "scenarios with hops on a namespace testbed (SATLAB_TESTBED=namespaces)"
            )
        if self.gateway:
            raise TestbedError(
                "configuration.gateway: the hardware testbed does not splice the edge gateway "
                "in yet; run gateway configurations on a namespace or compose testbed"
            )
        ctx = _controller_context()
        wait_s = box_wait_s()
        self.boxes, self.targets = {}, {}
        self._leases = Leases()
        try:
            wanted = {"server": self.servers, "client": self.clients, "gw": 1, "emu": 1, "st": 1}
            got = pick(self._leases, wanted, wait_s)
            for i, box in enumerate(got["server"], 1):
                self.boxes[f"srv{i}"] = box
            for role in ("gw", "emu", "st"):
                self.boxes[role] = got[role][0]
            for i, box in enumerate(got["client"], 1):
                self.boxes[f"cli{i}"] = box
            self.targets = {
                role: TlsTarget(box.name, *box.host_port, ctx) for role, box in self.boxes.items()
            }
            _remove_orphans()
            self.dir.mkdir(parents=True)
            # whose testbed this is, and where its agents are (backend.owned_testbed and
            # agent_sockets: the worker's live view and live control)
            boxes = {role: [box.name, box.address] for role, box in self.boxes.items()}
            state = {"owner_pid": os.getpid(), "boxes": boxes}
            (self.dir / "state.json").write_text(json.dumps(state))
            self.topo = topology.Topology(self.id, self.servers, self.clients, self.mtu)
            for role, box in self.boxes.items():
                try:
                    self.agent(role, "GET", "/health", timeout=HEALTH_TIMEOUT_S)
                except AgentError as exc:
                    raise TestbedError(f"box {box.name} ({role}): unreachable: {exc}") from None
                self.agent(role, "DELETE", "/processes", timeout=15)  # an earlier run's leftovers
                self.topo.boxes[role] = topology.Box(
                    role, f"box:{box.name}", self._data_address(role), interfaces=box.interfaces
                )
            self._configure_forwarding()
        except BaseException:
            self.close()
            raise
        return self

    def _data_address(self, role: str) -> str | None:
        """The box's IPv4 address on the experiment network (None for the emulator)."""
        box = self.boxes[role]
        if role == "emu":
            return None
        ifname = box.interfaces[1] if role in ("gw", "st") else box.interfaces[0]
        addresses = self.agent(role, "GET", "/addresses")
        if not addresses.get(ifname):
            raise TestbedError(
                f"box {box.name} ({role}): interfaces: {ifname} has no IPv4 address "
                f"(it has {sorted(addresses)})"
            )
        return str(addresses[ifname][0])

    def close(self) -> None:
        for role in list(self.topo.boxes if self.topo else []):
            if self.agent_alive(role):
                self.agent(role, "DELETE", "/processes", timeout=15)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._leases is not None:
            self._leases.close()  # releases every lease of the run
            self._leases = None

    def _configure_forwarding(self) -> None:
        assert self.topo is not None
        for edge in ("gw", "st"):
            self.agent(edge, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
        for role, box in self.boxes.items():
            self.agent(role, "POST", "/offloads", {"interfaces": box.interfaces})

    def emulator_interfaces(self) -> dict[str, str]:
        emu = self.boxes["emu"].interfaces
        return {"gw": emu[0], "st": emu[1]}

    def agent(
        self, role: str, method: str, url: str, body: Any = None, timeout: float = 10.0
    ) -> Any:
        return request(self.targets[role], method, url, body, timeout)

    def agent_alive(self, role: str) -> bool:
        try:
            self.agent(role, "GET", "/health", timeout=2)
        except AgentError:
            return False
        return True
