"""Testbed kinds (satlab.testbed.backend), the agent reset a long-lived box needs between runs and
the splice that puts the edge gateway into a container edge. The compose testbed itself runs for
real in tests/compose/smoke.sh."""

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from satlab.agent.unixhttp import AgentError
from satlab.testbed import backend, containers
from satlab.testbed.testbed import Testbed
from satlab.testbed.testbed import TestbedError as RefusedError  # (not a test class)


def _running(pid: int) -> bool:
    """True for a live process; a zombie is not, nor one reaped while we look (no /proc entry)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_agent_reset_stops_every_process_and_forgets_it() -> None:
    with Testbed(servers=1, clients=1) as tb:
        body = {"id": "sink0", "kind": "traffic", "args": ["sink", "--port", "5001"]}
        pid = tb.agent("cli1", "POST", "/processes", body)["pid"]
        assert tb.agent("cli1", "DELETE", "/processes") == {"stopped": ["sink0"]}
        assert not _running(pid)
        with pytest.raises(AgentError, match="404"):
            tb.agent("cli1", "GET", "/processes/sink0")
        # the same id can be used again by the next run
        tb.agent("cli1", "POST", "/processes", body)


def test_unknown_testbed_kind_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", "vms")
    with pytest.raises(
        RefusedError, match="SATLAB_TESTBED: 'vms' is not one of namespaces, containers"
    ):
        backend.create_testbed()


def test_container_testbed_names_the_missing_boxes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", "containers")
    monkeypatch.setattr(containers, "BOXES", tmp_path)
    for role in ("srv1", "gw", "emu", "st", "cli1"):
        (tmp_path / f"agent-{role}").mkdir()  # what each box's agent makes beside its socket
    too_many = backend.create_testbed(servers=2, clients=1)
    with pytest.raises(RefusedError, match=r"hosts: .* needs \['srv2'\]"):
        too_many.__enter__()
    # terrestrial hops need the `hops` box (satlab.agent.hopbox), named when it is missing
    with pytest.raises(RefusedError, match=r"^path\.terrestrial: .* no `hops` box"):
        backend.create_testbed(hops=[1]).__enter__()


def test_opening_the_container_testbed_waits_for_a_starting_box(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A box Docker is (re)starting: its agent answers a moment later, and opening the testbed
    waits for it; a box whose agent never answers fails by name once BOX_START_TIMEOUT_S ends."""
    monkeypatch.setattr(containers, "BOXES", tmp_path)
    tb = containers.ContainerTestbed()
    monkeypatch.setattr(containers, "BOX_START_TIMEOUT_S", 0.3)
    with pytest.raises(RefusedError, match="box srv1: "):
        tb._wait_for_agent("srv1")
    monkeypatch.setattr(containers, "BOX_START_TIMEOUT_S", 10.0)
    argv = [sys.executable, "-m", "satlab.agent.server", "--socket", str(tb.socket("srv1"))]
    late = subprocess.Popen(["sh", "-c", 'sleep 0.5; exec "$@"', "sh", *argv, "--name", "srv1"])
    try:
        t0 = time.monotonic()
        tb._wait_for_agent("srv1")
        assert 0.5 <= time.monotonic() - t0 < 10.0
        assert tb.agent("srv1", "GET", "/health")["name"] == "srv1"
    finally:
        late.terminate()
        late.wait(5)


def test_a_splice_moves_the_interface_behind_a_veth_and_is_undone() -> None:
    """What a container edge gets for the gateway (POST /splice), tried on a namespace box's
    eth0: its address and default route move to the new veth, the old interface is `wan`
    without an address; after POST /unsplice the box is as before and reaches its gateway."""
    with Testbed() as tb:
        assert tb.topo is not None
        ns, gw = tb.topo.ns("cli1"), tb.topo.boxes["cli1"].lan_gateway
        assert gw is not None
        before = _ip(ns, "-4", "addr", "show", "dev", "eth0")[0]["addr_info"]
        index = _ip(ns, "link", "show", "dev", "eth0")[0]["ifindex"]
        body = {"interface": "eth0", "inside": "x0", "outside": "wan"}
        tb.agent("cli1", "POST", "/splice", body)
        spliced = _ip(ns, "-d", "link", "show", "dev", "eth0")[0]
        assert spliced["ifindex"] != index and spliced["linkinfo"]["info_kind"] == "veth"
        assert (
            _ip(ns, "-4", "addr", "show", "dev", "eth0")[0]["addr_info"][0]["local"]
            == (before[0]["local"])
        )
        assert _ip(ns, "link", "show", "dev", "wan") and not _ip(ns, "-4", "addr", "show", "wan")
        assert _ip(ns, "route", "show", "default")[0] == {
            **_ip(ns, "route", "show", "default")[0],
            "gateway": gw,
            "dev": "eth0",
        }
        with pytest.raises(AgentError, match="409"):
            tb.agent("cli1", "POST", "/splice", body)
        tb.agent("cli1", "POST", "/unsplice", {"interface": "eth0", "outside": "wan"})
        assert _ip(ns, "link", "show", "dev", "eth0")[0]["ifindex"] == index  # the original
        assert not _ip(ns, "link", "show", "dev", "wan")
        ping = subprocess.run(
            ["nsenter", f"--net=/run/netns/{ns}", "ping", "-c1", "-W2", gw], capture_output=True
        )
        assert ping.returncode == 0
        # nothing to undo is no error
        tb.agent("cli1", "POST", "/unsplice", {"interface": "eth0", "outside": "wan"})


def _ip(ns: str, *args: str) -> list[dict[str, Any]]:
    r = subprocess.run(
        ["nsenter", f"--net=/run/netns/{ns}", "ip", "-j", *args], capture_output=True, text=True
    )
    out: list[dict[str, Any]] = json.loads(r.stdout or "[]") if r.returncode == 0 else []
    return out


def test_the_agent_relays_http_only_to_the_boxs_own_programs() -> None:
    """POST /http reaches 127.0.0.1 on the emulator's, gateway's or PEP's port only; a program
    that is not running is a 502 naming it (the live view then skips it)."""
    with Testbed() as tb:
        with pytest.raises(AgentError, match="400.*port: 22 is not one of"):
            tb.agent("emu", "POST", "/http", {"port": 22, "method": "GET", "path": "/"})
        with pytest.raises(AgentError, match="502.*emulator"):
            tb.agent("emu", "POST", "/http", {"port": 8781, "method": "GET", "path": "/status"})


def test_addressing_sets_mtu_addresses_and_routes_and_is_undone() -> None:
    """POST /addressing, what a compose box gets per run (the run's MTU; the gw edge moved behind
    terrestrial hops): tried on a namespace box's eth0, then the box's own wiring again. A box
    that is not the compose `hops` box refuses POST /hops by name."""
    with Testbed() as tb:
        assert tb.topo is not None
        ns, gw = tb.topo.ns("cli1"), tb.topo.boxes["cli1"].lan_gateway
        own = f"{tb.topo.address('cli1')}/24"
        moved: dict[str, Any] = {
            "mtu": 1000,
            "addresses": ["10.250.99.2/24"],
            "routes": [["10.250.98.0/24", "10.250.99.1"]],
        }
        tb.agent("cli1", "POST", "/addressing", {"interfaces": {"eth0": moved}})
        link = _ip(ns, "addr", "show", "dev", "eth0")[0]
        assert link["mtu"] == 1000
        assert [a["local"] for a in link["addr_info"] if a["family"] == "inet"] == ["10.250.99.2"]
        routes = {r["dst"]: r.get("gateway") for r in _ip(ns, "-4", "route", "show")}
        assert routes == {"10.250.98.0/24": "10.250.99.1", "10.250.99.0/24": None}  # default gone
        back = {"mtu": 1500, "addresses": [own], "routes": [["default", gw]]}
        done = tb.agent("cli1", "POST", "/addressing", {"interfaces": {"eth0": back}})
        assert done["mtu_before"] == {"eth0": 1000}  # what a hardware run puts back at close
        assert _ip(ns, "route", "show", "default")[0]["gateway"] == gw
        assert _ip(ns, "link", "show", "dev", "eth0")[0]["mtu"] == 1500
        with pytest.raises(AgentError, match="400.*no 'nope'"):
            tb.agent("cli1", "POST", "/addressing", {"interfaces": {"nope": {"mtu": 1500}}})
        with pytest.raises(AgentError, match="409.*hops: box cli1 is no hop box"):
            tb.agent("cli1", "POST", "/hops", {"hops": [1], "mtu": 1500})


def test_the_compose_edges_plan_is_the_namespace_testbeds_wiring() -> None:
    """containers.box_plans, what the gw and st boxes get for a run with hops, is what
    topology.build wires at a namespace testbed's edges: the same addresses and the same routes
    (the interfaces are named apart: the compose gw's hopup/hoplan are a namespace gw's up/lan)."""
    plans = containers.box_plans(2, servers=1, clients=1, mtu=1500)
    with Testbed(hops=[1, 0]) as tb:
        assert tb.topo is not None
        for edge in ("gw", "st"):
            ns = tb.topo.ns(edge)
            have = {
                f"{a['local']}/{a['prefixlen']}"
                for link in _ip(ns, "-4", "addr", "show")
                for a in link["addr_info"]
                if link["ifname"] not in ("lo", "sat0")
            }
            routes = {(r["dst"], r["gateway"]) for r in _ip(ns, "-4", "route") if "gateway" in r}
            plan = plans[edge]["interfaces"]
            if edge == "gw":  # st keeps the compose file's addresses: only routes are planned
                assert have == {a for p in plan.values() for a in p.get("addresses", [])}
            planned = {(d, g) for p in plan.values() for d, g in p.get("routes", [])}
            compose = {("10.250.3.0/24", "10.250.2.2")} if edge == "gw" else set()
            assert routes == planned | compose, edge
