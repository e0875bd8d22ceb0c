"""Topology up and down, parallel testbeds, and the sweeper after a SIGKILLed owner."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from satlab.agent.unixhttp import AgentError
from satlab.scenario import HostSettings
from satlab.testbed import topology
from satlab.testbed.testbed import STATE_ROOT, Testbed, sweep


def _in_ns(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nsenter", f"--net=/run/netns/{ns}", *argv], capture_output=True, text=True
    )


def _running(pid: int) -> bool:
    """True for a live process; a zombie (killed, not yet reaped by its new parent) is not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped before the open, or the read
        return False


def test_testbed_comes_up_wired_and_goes_away_completely() -> None:
    t0 = time.monotonic()
    with Testbed(servers=2, clients=2) as tb:
        setup_s = time.monotonic() - t0
        assert tb.topo is not None
        assert len(topology.project_namespaces(tb.id)) == 7  # srv1 srv2 gw emu st cli1 cli2
        pids = [p.pid for p in tb.agent_procs.values()]
        for role in tb.agent_procs:
            assert tb.agent(role, "GET", "/health")["name"] == role
        # LAN sides route to their edge; offloads are off on the hosts' interfaces.
        assert (
            _in_ns(tb.topo.ns("srv2"), "ping", "-c1", "-W2", tb.topo.address("gw")).returncode == 0
        )
        assert (
            _in_ns(tb.topo.ns("cli1"), "ping", "-c1", "-W2", tb.topo.address("st")).returncode == 0
        )
        feats = _in_ns(tb.topo.ns("cli1"), "ethtool", "-k", "eth0").stdout
        assert "tcp-segmentation-offload: off" in feats and "generic-receive-offload: off" in feats
    assert setup_s < 3.0, f"set-up took {setup_s:.2f} s"
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists(), f"agent {pid} still running"


# Inside a box: a connection on loopback whose packets (after the handshake) the box's own output
# filter drops; the client closes with its data unacknowledged and the process exits, leaving an
# orphan in FIN-WAIT-1.
ORPHAN = """
import os, socket
srv = socket.create_server(("127.0.0.1", 5001))
c = socket.create_connection(("127.0.0.1", 5001))
for rule in ("add table inet orphan",
             "add chain inet orphan out { type filter hook output priority 0; }",
             "add rule inet orphan out tcp dport 5001 drop",
             "add rule inet orphan out tcp sport 5001 drop"):  # the listener's RST at exit too
    assert os.spawnlp(os.P_WAIT, "nft", "nft", rule) == 0, rule
c.send(b"x" * 100000)
c.close()
"""


def _orphans(netns_path: str) -> list[str]:
    ss = _in_ns_path(netns_path, "ss", "-tan", "state", "fin-wait-1")
    return [line for line in ss.stdout.splitlines() if ":5001" in line]


def _in_ns_path(path: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["nsenter", f"--net={path}", *argv], capture_output=True, text=True)


def test_teardown_aborts_orphaned_tcp_sockets() -> None:
    """An orphaned socket would keep the deleted namespace (and a scheme's struct_ops) alive for
    minutes: teardown aborts it. The namespace is held open here to look inside afterwards."""
    held, path = -1, ""
    try:
        with Testbed(servers=1, clients=1) as tb:
            assert tb.topo is not None
            held = os.open(f"/run/netns/{tb.topo.ns('srv1')}", os.O_RDONLY)
            path = f"/proc/{os.getpid()}/fd/{held}"
            made = _in_ns_path(path, sys.executable, "-c", ORPHAN)
            assert made.returncode == 0, made.stderr
            assert _orphans(path), "the orphan was not made"
        assert _orphans(path) == []
    finally:
        if held >= 0:
            _in_ns_path(path, "ss", "--kill", "--tcp", "--all")
            os.close(held)


def test_two_testbeds_do_not_interfere() -> None:
    with Testbed() as a, Testbed() as b:
        assert a.id != b.id
        assert a.topo is not None and b.topo is not None
        # Same addresses, separate namespaces: each agent sits in its own.
        ino_a = a.agent("cli1", "GET", "/health")["netns_inode"]
        ino_b = b.agent("cli1", "GET", "/health")["netns_inode"]
        assert ino_a != ino_b
        a.agent("cli1", "POST", "/sysctl", {"net.ipv4.tcp_sack": 0})
        b.agent("cli1", "POST", "/sysctl", {"net.ipv4.tcp_sack": 1})
        sack_a = _in_ns(a.topo.ns("cli1"), "sysctl", "-n", "net.ipv4.tcp_sack").stdout.strip()
        sack_b = _in_ns(b.topo.ns("cli1"), "sysctl", "-n", "net.ipv4.tcp_sack").stdout.strip()
        assert (sack_a, sack_b) == ("0", "1")


def test_host_settings_set_the_route_metrics_through_the_agent() -> None:
    """Window clamp, advertised MSS and initial cwnd are metrics of each end host's default route,
    set by the box's own agent (the request a container box takes too); a bad metric is a 400."""
    with Testbed() as tb:
        assert tb.topo is not None
        tb.apply_host_settings(
            HostSettings(window_clamp_bytes=32768, mss_bytes=1200, initial_cwnd_packets=7)
        )
        for role in ("srv1", "cli1"):
            route = _in_ns(tb.topo.ns(role), "ip", "route", "show", "default").stdout
            assert f"via {tb.topo.boxes[role].lan_gateway}" in route, route
            assert "window 32768" in route and "advmss 1200" in route, route
            assert "initcwnd 7" in route, route
        with pytest.raises(AgentError, match="400.*metrics"):
            tb.agent("cli1", "POST", "/route-metrics", {"metrics": {"rto_min": 5}})


OWNER = """
import time
from satlab.testbed import testbed
tb = testbed.Testbed().__enter__()
print(tb.id, flush=True)
time.sleep(60)
"""


def test_sweeper_cleans_up_after_a_killed_owner() -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        tid = owner.stdout.readline().strip()
        assert topology.project_namespaces(tid)
        recorded = json.loads((STATE_ROOT / tid / "state.json").read_text())["agents"]
        agents = [int(pid) for pid in recorded.values()]
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    assert tid in sweep()
    assert not topology.project_namespaces(tid)
    time.sleep(0.2)
    assert not any(_running(pid) for pid in agents)


def test_sweeper_leaves_a_testbed_whose_state_is_not_written_yet() -> None:
    """A state directory without state.json belongs to an owner that is creating it (namespaces
    come after the state) or removing it (they went before): it is not the sweeper's to remove."""
    being_made = STATE_ROOT / f"sweeptest-{os.getpid()}"
    being_made.mkdir(parents=True)
    try:
        assert being_made.name not in sweep()
        assert being_made.is_dir()
    finally:
        being_made.rmdir()
