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
- a configuration with a `gateway` section gets the edge gateway spliced into the gw and st boxes
  by their agents, as on containers (POST /splice, gateway.splice): the satellite-side NIC is
  renamed `wan` and cabled on to the emulator as before, a veth takes its name, addresses and
  routes, and the gateway reads that veth's peer (gwx / stx) and `wan`; closing undoes it. The
  agent's own control address must not be on the satellite-side NIC;
- terrestrial hops (`path.terrestrial`) need a box of role `hop` (one holds any number of hops) and
  a gw box registered with four NICs [lan, sat, hopup, hoplan]: the hop box's agent (--hop-box)
  builds the run's routers, hop emulators and cross hosts as namespaces on its NICs [srv, hopup,
  hoplan] (POST /hops, satlab.agent.hopbox), which the operator cables as the compose networks:
  srv on the servers' LAN switch, hopup to the gw box's hopup, hoplan to its hoplan. The gw and st
  boxes are then addressed as on containers (containers.box_plans on the registered NICs, POST
  /addressing: gw gives 10.250.1.1 up to r1), and back after the run; the end hosts' routes stay
  the operator's. The hop box's sub-agents are reached through its agent
  (/boxes/ROLE/...). Too few boxes of a role fail the run naming the field (hosts,
  path.terrestrial);
- every registered NIC of the run's boxes takes the run's MTU (hosts.mtu_bytes) when the
  testbed opens, as every link does on namespaces and containers, and the MTU it had when closing
  (POST /addressing answers the MTUs it found). The operator's switches and cables must carry
  the largest MTU the scenarios use; a worker that dies mid-run leaves the run's MTU until the
  next run on those boxes closes (which puts back the MTU it found);
- the run directory (emulator and gateway files, the emulator's telemetry socket) is
  SATLAB_HARDWARE_DIR/ID, which the worker and the boxes must see at the same path, and the
  telemetry socket being a Unix socket, the worker runs on the emulator box (README, hardware);

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
from satlab.agent.requests import HopsBuild, InterfacePlan
from satlab.agent.tlshttp import TlsTarget
from satlab.agent.unixhttp import AgentError, request
from satlab.settings import HARDWARE_DIR, box_wait_s, controller_tls_paths, get_settings
from satlab.testbed import gateway as edge_gateway
from satlab.testbed import topology
from satlab.testbed.containers import box_plans
from satlab.testbed.gateway import OUTSIDE
from satlab.testbed.testbed import Testbed, TestbedError, _alive
from satlab.testbed.topology import GATEWAY_INSIDE

# The first key of every box lease (pg_try_advisory_lock(int, int)); the second is the name's CRC32.
# Two names with one CRC only make their boxes take turns, never share.
LEASE_CLASS = 0x5A7B0C5
HEALTH_TIMEOUT_S = 3.0
GW_WITH_HOPS = 4  # NICs of a gw box cabled to a hop box: [lan, sat, hopup, hoplan]
HOP_MACHINE = "hops"  # the leased hop box's key in `boxes` (no testbed role: its boxes are)
# The interfaces of containers.box_plans by their place among a box's registered ones.
PLAN_INTERFACES = {"gw": ["lan", "sat0", "hopup", "hoplan"], "st": ["lan", "sat0"]}
# The scenario field a shortage of a role's boxes comes from.
FIELD = {"hop": "path.terrestrial"}


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
            raise TestbedError(
                "; ".join(
                    f"{FIELD.get(r, 'hosts')}: the registered boxes cannot hold this scenario: "
                    f"it needs {n} of role {r} (registered: {[b.name for b in by_role[r]]})"
                    for r, n in short.items()
                )
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
    # Leased in __enter__: the boxes by testbed role (srv1, gw, emu, st, cli1; HOP_MACHINE with
    # hops), their agents, and the roles of the hop box's own boxes (reached through its agent).
    boxes: dict[str, RegisteredBox]
    targets: dict[str, TlsTarget]
    relayed: set[str]
    operator_mtus: dict[str, dict[str, int]]  # role -> NIC -> MTU before the run (_set_mtus)
    _leases: Leases | None = None

    def _run_dir(self) -> Path:
        return HARDWARE_DIR / self.id

    def __enter__(self) -> HardwareTestbed:
        ctx = _controller_context()
        wait_s = box_wait_s()
        self.boxes, self.targets, self.relayed, self.operator_mtus = {}, {}, set(), {}
        self._leases = Leases()
        try:
            self._lease(wait_s)
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
                if role != HOP_MACHINE:
                    self.topo.boxes[role] = topology.Box(
                        role, f"box:{box.name}", self._data_address(role), interfaces=box.interfaces
                    )
            for edge in GATEWAY_INSIDE:  # a worker that died mid-run leaves it spliced
                self.agent(edge, "POST", "/unsplice", edge_gateway.unsplice(self._sat_nic(edge)))
            self._set_mtus()  # before the splice, whose veth takes its NIC's MTU
            self._wire_hops()
            for edge in GATEWAY_INSIDE if self.gateway else ():
                self.agent(edge, "POST", "/splice", edge_gateway.splice(edge, self._sat_nic(edge)))
            self._configure_forwarding()
        except BaseException:
            self.close()
            raise
        return self

    def _lease(self, wait_s: float) -> None:
        wanted = {"server": self.servers, "client": self.clients, "gw": 1, "emu": 1, "st": 1}
        if self.hops:
            wanted["hop"] = 1  # one hop box builds every hop of the run
        assert self._leases is not None
        got = pick(self._leases, wanted, wait_s)
        for i, box in enumerate(got["server"], 1):
            self.boxes[f"srv{i}"] = box
        for role in ("gw", "emu", "st"):
            self.boxes[role] = got[role][0]
        for i, box in enumerate(got["client"], 1):
            self.boxes[f"cli{i}"] = box
        if self.hops:
            self.boxes[HOP_MACHINE] = got["hop"][0]
            gw = self.boxes["gw"]
            if len(gw.interfaces) != GW_WITH_HOPS:
                raise TestbedError(
                    f"path.terrestrial: box {gw.name} (gw) is registered with interfaces "
                    f"{gw.interfaces}; a run with hops needs {GW_WITH_HOPS} [lan, sat, hopup, "
                    "hoplan], the last two cabled to the hop box"
                )

    def _set_mtus(self) -> None:
        """The run's MTU on every registered NIC of the leased boxes (the hop box's too: its
        POST /hops sets them again, and its teardown leaves them), the operator's noted."""
        for role, box in self.boxes.items():
            plan = {nic: InterfacePlan(mtu=self.mtu) for nic in box.interfaces}
            done = self.agent(role, "POST", "/addressing", {"interfaces": plan})
            self.operator_mtus[role] = {k: int(v) for k, v in done["mtu_before"].items()}

    def _restore_mtus(self) -> None:
        for role, mtus in self.operator_mtus.items():
            if self.agent_alive(role):
                plan = {nic: InterfacePlan(mtu=mtu) for nic, mtu in mtus.items()}
                self.agent(role, "POST", "/addressing", {"interfaces": plan})
        self.operator_mtus.clear()

    def _sat_nic(self, edge: str) -> str:
        return self.boxes[edge].interfaces[1]

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

    def _wire_hops(self) -> None:
        """The run's terrestrial hops in the hop box, each of its boxes in the topology by role,
        and the edges addressed for them; a gw box cabled to a hop box is addressed for a run
        without hops too (an earlier run's may have died with it addressed for its hops)."""
        assert self.topo is not None
        if self.hops:
            hop = self.boxes[HOP_MACHINE]
            build = HopsBuild(hops=self.hops, mtu=self.mtu, uplinks=hop.interfaces)
            built = self.agent(HOP_MACHINE, "POST", "/hops", build, timeout=60)
            for role, box in built["boxes"].items():
                self.relayed.add(role)
                self.topo.boxes[role] = topology.Box(role, f"box:{hop.name}/{role}", **box)
            self.agent(HOP_MACHINE, "POST", "/offloads", {"interfaces": built["interfaces"]})
        if self.hops or len(self.boxes["gw"].interfaces) == GW_WITH_HOPS:
            self._addressing(len(self.hops))

    def _addressing(self, hops: int) -> None:
        """POST /addressing of containers.box_plans on the registered NICs: the gw and st boxes
        as the address plan has them with `hops` hops; the servers only forget their neighbours
        (10.250.1.1 is r1's or gw's by turns). The end hosts' routes are the operator's, and
        MTUs _set_mtus', so those parts of the plans are left out."""
        for role, plan in box_plans(hops, self.servers, self.clients, self.mtu).items():
            box = self.boxes.get(role)
            if box is None or not self.agent_alive(role):
                continue
            interfaces: dict[str, InterfacePlan] = {}
            if role in PLAN_INTERFACES:
                names = dict(zip(PLAN_INTERFACES[role], box.interfaces, strict=False))
                for name, ifplan in plan["interfaces"].items():
                    if name in names:
                        ifplan.pop("mtu", None)
                        interfaces[names[name]] = ifplan
            elif role.startswith("srv"):
                interfaces[box.interfaces[0]] = {}
            if interfaces:
                self.agent(role, "POST", "/addressing", {"interfaces": interfaces})

    def close(self) -> None:
        for role in list(self.topo.boxes if self.topo else []):
            if self.agent_alive(role):
                self.agent(role, "DELETE", "/processes", timeout=15)
        if self.topo is not None:
            for edge in GATEWAY_INSIDE:
                if self.gateway and self.agent_alive(edge):
                    self.agent(
                        edge, "POST", "/unsplice", edge_gateway.unsplice(self._sat_nic(edge))
                    )
            if self.hops:
                if self.agent_alive(HOP_MACHINE):
                    build = HopsBuild(hops=[], mtu=self.mtu)
                    self.agent(HOP_MACHINE, "POST", "/hops", build, timeout=30)
                self.relayed.clear()
                self._addressing(0)  # the servers' gateway back on the gw box
        self._restore_mtus()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._leases is not None:
            self._leases.close()  # releases every lease of the run
            self._leases = None

    def _configure_forwarding(self) -> None:
        assert self.topo is not None
        for edge in ("gw", "st", *self.topo.routers):
            self.agent(edge, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
        for role, box in self.topo.boxes.items():
            # the registered NICs, or what the hop box made; a spliced edge's gateway ports too
            ifaces = self.boxes[role].interfaces if role in self.boxes else box.interfaces
            if role in GATEWAY_INSIDE and self.gateway:
                ifaces = [*ifaces, GATEWAY_INSIDE[role], OUTSIDE]
            self.agent(role, "POST", "/offloads", {"interfaces": ifaces})

    def emulator_interfaces(self) -> dict[str, str]:
        emu = self.boxes["emu"].interfaces
        return {"gw": emu[0], "st": emu[1]}

    def agent(
        self, role: str, method: str, url: str, body: Any = None, timeout: float = 10.0
    ) -> Any:
        if role in self.relayed:  # a box of the hop box's, through its agent
            return request(self.targets[HOP_MACHINE], method, f"/boxes/{role}{url}", body, timeout)
        return request(self.targets[role], method, url, body, timeout)

    def agent_alive(self, role: str) -> bool:
        if role not in self.targets and role not in self.relayed:
            return False
        try:
            self.agent(role, "GET", "/health", timeout=2)
        except AgentError:
            return False
        return True
