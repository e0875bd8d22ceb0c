"""The hardware testbed (SATLAB_TESTBED=hardware) without physical machines: each "machine" is a
network namespace of a wired testbed (topology.build) whose agent listens on TCP, with mutual TLS,
on a control address inside its namespace, reached from here over a veth per machine; the boxes
are registered in a scratch database of the service, as an admin registers them. The emulator
machine's NICs are renamed enp1s0/enp2s0, so its ports bind to the registered names. A sixth
machine, the hop box (role hop), is cabled as README's hardware section says: `srv` on the
servers' LAN (a port of the gw machine's LAN bridge), `hopup` and `hoplan` to the gw machine's
third and fourth NICs; its agent runs with --hop-box in a mount namespace of its own, with a
private /run/netns, so the namespaces it makes for hops are its own alone."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config

from satlab import db
from satlab.agent import tlsca, tlshttp
from satlab.agent.tlshttp import TlsTarget
from satlab.agent.unixhttp import AgentError, request
from satlab.bounded import stop_processes
from satlab.scenario import expand_runs, parse_scenario
from satlab.service import boxes
from satlab.settings import REPO_ROOT
from satlab.testbed import backend, topology
from satlab.testbed.backend import create_testbed
from satlab.testbed.runner import run_one
from satlab.testbed.testbed import STATE_ROOT, kill_agent_group, wait_for_agent
from satlab.testbed.testbed import TestbedError as RefusedError  # (not a test class)

PG_SH = str(REPO_ROOT / "scripts" / "pg.sh")
PORT = 7443
# How a refused handshake shows at the client: the server's alert, or, when the server closed
# before the client read it (TLS 1.3 checks the client's certificate after the client's Finished),
# an EOF or reset mid-TLS. Never an HTTP status: no request reaches the agent.
TLS_REFUSED = r"\[SSL: |EOF occurred in violation of protocol|Connection reset by peer"
# role in the wired namespaces -> (registered name, registered role, interfaces)
MACHINES = {
    "srv1": ("hw-srv1", "server", ["eth0"]),
    "gw": ("hw-gw", "gw", ["lan", "sat0", "hopup", "hoplan"]),
    "emu": ("hw-emu", "emu", ["enp1s0", "enp2s0"]),
    "st": ("hw-st", "st", ["lan", "sat0"]),
    "cli1": ("hw-cli1", "client", ["eth0"]),
    "hopm": ("hw-hop", "hop", ["srv", "hopup", "hoplan"]),
}
# The hop machine's agent: a private /run/netns, mounted before the agent starts.
PRIVATE_NETNS = 'mount -t tmpfs satlab-hops /run/netns && exec "$@"'


@dataclass
class Lab:
    tid: str
    ca: Path
    ctx: ssl.SSLContext
    agents: dict[str, subprocess.Popen[bytes]]
    state: Path
    # The machines' owner for the namespace sweeper: a `cat` reading a pipe from this process, so
    # it lives as long as this process does (then a sweeper removes the machines), and it is not
    # this process, whose own testbed is the run's (backend.owned_testbed, live control).
    owner: subprocess.Popen[bytes]

    def control(self, role: str) -> str:
        return f"10.254.{list(MACHINES).index(role) + 1}.2"

    def target(self, role: str, ctx: ssl.SSLContext | None = None) -> TlsTarget:
        return TlsTarget(MACHINES[role][0], self.control(role), PORT, ctx or self.ctx)

    def spawn_agent(self, role: str) -> None:
        name = MACHINES[role][0]
        argv = ["nsenter", f"--net=/run/netns/{topology.namespace_name(self.tid, role)}", "--"]
        if role == "hopm":
            argv += ["unshare", "--mount", "--propagation", "private"]
            argv += ["sh", "-c", PRIVATE_NETNS, "sh"]
        argv += [sys.executable, "-m", "satlab.agent.server", "--name", name]
        argv += ["--hop-box"] if role == "hopm" else []
        argv += ["--listen", f"{self.control(role)}:{PORT}", "--ca", str(self.ca / "ca.crt")]
        argv += ["--cert", str(self.ca / f"{name}.crt"), "--key", str(self.ca / f"{name}.key")]
        argv += ["--workdir", str(self.state / f"agent-{name}")]
        log = open(self.state / f"agent-{name}.log", "wb")  # noqa: SIM115 (the child owns it)
        self.agents[role] = subprocess.Popen(argv, stdout=log, stderr=log, start_new_session=True)
        log.close()
        self._save()

    def wait_ready(self, role: str) -> None:
        name = MACHINES[role][0]
        deadline = time.monotonic() + 30  # six interpreters starting at once on a busy machine
        log = self.state / f"agent-{name}.log"
        wait_for_agent(self.target(role), self.agents[role], log, deadline, name)

    def stop_agents(self, *roles: str) -> None:
        procs = [self.agents.pop(role) for role in roles]
        stop_processes(procs, grace_s=5)
        for p in procs:
            kill_agent_group(p.pid)
        self._save()

    def _save(self) -> None:
        # The namespace sweeper's record (testbed.sweep): whose namespaces and agents these are.
        state = {"owner_pid": self.owner.pid, "agents": {r: p.pid for r, p in self.agents.items()}}
        (self.state / "state.json").write_text(json.dumps(state))


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def cable_hop_machine(tid: str) -> None:
    """The hop machine: `srv` on the servers' LAN (a port `hsrv` of the gw machine's LAN bridge),
    `hopup` and `hoplan` to the gw machine's NICs of those names."""
    gw, hop = topology.namespace_name(tid, "gw"), topology.namespace_name(tid, "hopm")
    topology.new_namespace(hop)
    for gw_if, hop_if in (("hsrv", "srv"), ("hopup", "hopup"), ("hoplan", "hoplan")):
        _ip("-n", gw, "link", "add", gw_if, "type", "veth", "peer", "name", hop_if, "netns", hop)
        _ip("-n", gw, "link", "set", gw_if, "up")
        _ip("-n", hop, "link", "set", hop_if, "up")
    _ip("-n", gw, "link", "set", "hsrv", "master", "lan")


@contextlib.contextmanager
def scratch_database() -> Iterator[None]:
    name = f"satlab_test_{os.getpid()}_hw"
    subprocess.run([PG_SH, "drop-db", name], check=True, capture_output=True)
    subprocess.run([PG_SH, "create-db", name], check=True, capture_output=True)
    original = os.environ["DATABASE_URL"]
    path, _, query = original.partition("?")
    os.environ["DATABASE_URL"] = (
        path.rsplit("/", 1)[0] + "/" + name + (f"?{query}" if query else "")
    )
    db.reset()
    try:
        command.upgrade(Config(str(REPO_ROOT / "api" / "alembic.ini")), "head")
        yield
    finally:
        db.get_engine().dispose()
        os.environ["DATABASE_URL"] = original
        db.reset()
        subprocess.run([PG_SH, "drop-db", name], check=True, capture_output=True)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    if "DATABASE_URL" not in os.environ:
        pytest.fail("DATABASE_URL: the hardware tests register boxes in PostgreSQL")
    tmp = tmp_path_factory.mktemp("hw")
    ca = tmp / "ca"
    tlsca.init(ca)
    for name, _, _ in MACHINES.values():
        tlsca.issue(ca, name, "agent")
    tlsca.issue(ca, "worker1", "controller")
    env = {
        "SATLAB_TESTBED": "hardware",
        "SATLAB_TLS_CERT": str(ca / "worker1.crt"),
        "SATLAB_TLS_KEY": str(ca / "worker1.key"),
        "SATLAB_TLS_CA": str(ca / "ca.crt"),
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    tid = secrets.token_hex(2)
    lab = Lab(
        tid,
        ca,
        tlshttp.client_context(ca / "worker1.crt", ca / "worker1.key", ca / "ca.crt"),
        {},
        STATE_ROOT / tid,
        subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL),
    )
    lab.state.mkdir(parents=True)
    lab._save()  # before any namespace: a concurrent sweeper must see they are owned
    try:
        with scratch_database():
            topology.build(tid, 1, 1)
            emu = topology.namespace_name(tid, "emu")
            for old, new in (("gw", "enp1s0"), ("st", "enp2s0")):
                _ip("-n", emu, "link", "set", old, "down")
                _ip("-n", emu, "link", "set", old, "name", new)
                _ip("-n", emu, "link", "set", new, "up")
            cable_hop_machine(tid)
            for i, role in enumerate(MACHINES, 1):
                ns, host_if = topology.namespace_name(tid, role), f"hc{tid}{i}"
                _ip("link", "add", host_if, "type", "veth", "peer", "name", "ctl", "netns", ns)
                _ip("addr", "add", f"10.254.{i}.1/30", "dev", host_if)
                _ip("link", "set", host_if, "up")
                _ip("-n", ns, "addr", "add", f"10.254.{i}.2/30", "dev", "ctl")
                _ip("-n", ns, "link", "set", "ctl", "up")
            for role in MACHINES:
                lab.spawn_agent(role)
            for role in MACHINES:
                lab.wait_ready(role)
            with db.new_session() as s:
                for role, (name, kind, ifaces) in MACHINES.items():
                    address = f"{lab.control(role)}:{PORT}"
                    body = boxes.BoxIn(name=name, role=kind, address=address, interfaces=ifaces)
                    boxes.register(s, body)
                s.commit()
            yield lab
    finally:
        lab.stop_agents(*lab.agents)
        topology.teardown(tid)  # the machines' veths to this namespace go with them
        shutil.rmtree(lab.state, ignore_errors=True)
        assert lab.owner.stdin is not None
        lab.owner.stdin.close()
        lab.owner.wait()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _scenario(**over: Any) -> Any:
    base = {
        "name": "hw",
        "link": {
            "forward": {"kind": "fixed", "rate_bps": 10e6, "delay_ms": 135},
            "return": {"kind": "fixed", "rate_bps": 10e6, "delay_ms": 135},
        },
        "duration_s": 4,
        "traffic": [{"kind": "bulk_tcp", "duration_s": 4}],
        "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
    }
    return parse_scenario({**base, **over})


def test_a_run_through_the_hardware_backend(lab: Lab, emulator_bin: Path) -> None:
    sc = _scenario()
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    flow = res["flows"][0]
    assert flow["bytes_received"] > 0 and flow["goodput_bps"] > 1e6
    fwd = [r for r in res["timeseries"]["link"] if r["direction"] == "forward"]
    assert fwd and fwd[-1]["useful_rate_bps"] > 0  # the emulator ran on the registered NICs


def test_unauthenticated_and_foreign_clients_are_refused(lab: Lab, tmp_path: Path) -> None:
    # No client certificate: TLS 1.3 refuses it when the server reads the client's Finished.
    anonymous = ssl.create_default_context(cafile=lab.ca / "ca.crt")
    with pytest.raises(AgentError, match=TLS_REFUSED):
        request(lab.target("srv1", anonymous), "GET", "/health", timeout=3)
    # A controller certificate of another CA.
    rogue = tmp_path / "rogue"
    tlsca.init(rogue)
    tlsca.issue(rogue, "worker1", "controller")
    foreign = tlshttp.client_context(
        rogue / "worker1.crt", rogue / "worker1.key", lab.ca / "ca.crt"
    )
    with pytest.raises(AgentError, match=TLS_REFUSED):
        request(lab.target("srv1", foreign), "GET", "/health", timeout=3)
    # An agent's own certificate is no controller's (serverAuth only).
    agent_as_client = tlshttp.client_context(
        lab.ca / "hw-gw.crt", lab.ca / "hw-gw.key", lab.ca / "ca.crt"
    )
    with pytest.raises(AgentError, match=TLS_REFUSED):
        request(lab.target("srv1", agent_as_client), "GET", "/health", timeout=3)
    # Plain HTTP on the TLS port gets no HTTP answer.
    with socket.create_connection((lab.control("srv1"), PORT), timeout=3) as s:
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"HTTP/1.1 200" not in s.recv(4096)
    # The controller refuses a box whose certificate is not the registered name's.
    wrong = TlsTarget("hw-cli1", lab.control("srv1"), PORT, lab.ctx)
    with pytest.raises(AgentError, match="Hostname mismatch"):
        request(wrong, "GET", "/health", timeout=3)
    assert request(lab.target("srv1"), "GET", "/health")["name"] == "hw-srv1"


def test_two_runs_never_share_a_box(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SATLAB_BOX_WAIT_S", "1")
    with create_testbed() as first:
        assert first.boxes["emu"].name == "hw-emu"  # type: ignore[attr-defined]
        # The worker's live view and control find the run's boxes (satlab.service.control).
        assert backend.owned_testbed() == first.id
        emu = backend.agent_sockets(first.id)["emu"]
        assert isinstance(emu, TlsTarget) and request(emu, "GET", "/health")["name"] == "hw-emu"
        with pytest.raises(RefusedError, match=r"no free boxes .* within 1 s.*hw-emu"):
            create_testbed().__enter__()
    # A worker that dies loses its leases with its database connection.
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_EMU],
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "api")},
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(RefusedError, match="hw-emu"):
            create_testbed().__enter__()
    finally:
        holder.kill()
        holder.wait()
    with create_testbed() as again:
        assert again.boxes["emu"].name == "hw-emu"  # type: ignore[attr-defined]


_HOLD_EMU = """
import time
from satlab.testbed.hardware import Leases
leases = Leases()
assert leases.take("hw-emu")
print("held", flush=True)
time.sleep(60)
"""


def test_a_box_whose_agent_is_down_fails_the_run_naming_it(lab: Lab) -> None:
    lab.stop_agents("st")
    try:
        sc = _scenario()
        res = run_one(sc, expand_runs(sc)[0])
        assert res["status"] == "failed"
        assert "box hw-st (st): unreachable" in res["error"] and "10.254.4.2:7443" in res["error"]
    finally:
        lab.spawn_agent("st")
        lab.wait_ready("st")
    # Its lease went with the failed run: the next run gets the box.
    with create_testbed() as tb:
        assert tb.agent_alive("st")


def _gateway_counters(res: dict[str, Any], edge: str) -> dict[str, int]:
    counters: dict[str, int] = res["gateway"][edge]["counters"]
    return counters


def test_an_edge_gateway_run_on_hardware(lab: Lab, emulator_bin: Path) -> None:
    """ETEN at both edges, spliced in by the gw and st machines' agents: the gateways carry the
    flow and the st edge turns the link's corrupted frames into notices; the edges are as they
    were after the run."""
    sc = _scenario(
        link={
            "forward": {
                "kind": "fixed",
                "rate_bps": 10e6,
                "delay_ms": 135,
                "bit_errors": {"model": "uniform", "ber": 1e-5},
            },
            "return": {"kind": "fixed", "rate_bps": 10e6, "delay_ms": 135},
        },
        configurations=[{"name": "eten", "gateway": {"eten": {"enabled": True}}}],
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    gw, st = _gateway_counters(res, "gw"), _gateway_counters(res, "st")
    assert gw["egress_tx_frames"] > 100 and st["ingress_tx_frames"] > 100, (gw, st)
    assert st["eten_events"] > 0 and st["eten_notices"] > 0, st
    assert res["flows"][0]["bytes_received"] > 0  # (a tenth of the packets corrupted: slow)
    for role in ("gw", "st"):  # unspliced: the satellite-side NIC has its name and address back
        links = request(lab.target(role), "GET", "/addresses")
        assert "wan" not in links and links["sat0"], links


def test_terrestrial_hops_on_hardware(lab: Lab, emulator_bin: Path) -> None:
    """A hop of 20 ms built by the hop machine: the flow crosses it (its emulator's counters), the
    servers' gateway moves to r1 for the run and back to the gw machine after it; without a
    registered hop box the run fails naming path.terrestrial."""
    path = {"terrestrial": [{"delay_ms": 20, "rate_bps": 20e6}]}
    sc = _scenario(path=path)
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    assert res["flows"][0]["goodput_bps"] > 1e6
    hop = res["hops"][0]["forward"]
    assert hop["delivered_packets"] > 100, hop
    gw = request(lab.target("gw"), "GET", "/addresses")
    assert gw["lan"] == ["10.250.1.1"] and not gw.get("hopup"), gw
    with db.new_session() as s:
        hop_box = boxes.remove(s, "hw-hop")
        body = boxes.BoxIn(
            name=hop_box.name,
            role=hop_box.role,
            address=hop_box.address,
            interfaces=list(hop_box.interfaces),
        )
        s.commit()
    try:
        with pytest.raises(
            RefusedError, match=r"path\.terrestrial: .* 1 of role hop \(registered: \[\]\)"
        ):
            create_testbed(hops=[0]).__enter__()
    finally:
        with db.new_session() as s:
            boxes.register(s, body)
            s.commit()


def _mtus(lab: Lab, role: str, nics: list[str]) -> dict[str, int]:
    ns = topology.namespace_name(lab.tid, role)
    out = subprocess.run(["ip", "-n", ns, "-j", "link", "show"], capture_output=True, check=True)
    links = {link["ifname"]: int(link["mtu"]) for link in json.loads(out.stdout)}
    return {nic: links[nic] for nic in nics if nic in links}


def test_the_runs_mtu_on_the_registered_nics_and_back(lab: Lab) -> None:
    """hosts.mtu_bytes reaches every registered NIC of the leased boxes (and the gateway splice's
    veth, which takes its NIC's), and the operator's MTUs are back after the run."""
    machines = {r: ifaces for r, (_, kind, ifaces) in MACHINES.items() if kind != "hop"}
    before = {role: _mtus(lab, role, nics) for role, nics in machines.items()}
    assert all(len(before[r]) == len(n) for r, n in machines.items()), before
    with create_testbed(mtu=1400, gateway=True):
        during = {role: _mtus(lab, role, nics) for role, nics in machines.items()}
        assert all(m == 1400 for mtus in during.values() for m in mtus.values()), during
        assert _mtus(lab, "st", ["wan", "sat0"]) == {"wan": 1400, "sat0": 1400}  # spliced
    assert {role: _mtus(lab, role, nics) for role, nics in machines.items()} == before


def test_the_backend_refuses_what_the_registry_cannot_hold(lab: Lab) -> None:
    with pytest.raises(
        RefusedError, match=r"hosts: .* 2 of role server \(registered: \['hw-srv1'\]\)"
    ):
        create_testbed(servers=2).__enter__()
