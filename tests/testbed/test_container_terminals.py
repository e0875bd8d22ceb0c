"""Several terminals on the container testbed: what the compose st box's agent builds for terminals
2..N (POST /terminals, satlab.agent.terminalbox) and the gw box's routes to them
(containers.box_plans), tried on a namespace testbed standing in for the compose boxes, as
test_backends.py tries the splice: its st namespace plays the st box (an agent of its own there,
with a private /run/netns as the box's container has) and a bridge over the emu namespace's two
ports plays the compose networks satgw and satst (a switch, as Docker's bridges are). The whole
compose testbed runs in tests/compose/smoke.sh.

Checked for real: terminal 2's edge st2 and client cli2 exist with their agents, st2's satellite
side is its own station behind the st box's sat0, a TCP connection from cli2 reaches the gw edge
across it while terminal 1 (the st box and cli1) still works, and POST /terminals [] removes it
all (the sub-agents end)."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_beam_terminals import SCENARIO

from satlab.agent.unixhttp import request
from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed import backend, containers, terminals
from satlab.testbed.runner import run_one
from satlab.testbed.testbed import Testbed
from satlab.testbed.testbed import TestbedError as RefusedError  # (not a test class)
from satlab.testbed.topology import socket_in_netns

# the st box's agent sees only the namespaces it makes, as in its container (docker/box-entrypoint)
PRIVATE_NETNS = 'mount -t tmpfs satlab-st /run/netns && exec "$@"'


def _in(ns: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["nsenter", f"--net=/run/netns/{ns}", *argv], capture_output=True, text=True
    )


def _box_agent(ns: str, boxes: Path, role: str = "st") -> subprocess.Popen[bytes]:
    """A compose box's agent (docker/box-entrypoint's) in namespace `ns`: socket and working
    directory in `boxes`; the st box's with a /run/netns of its own."""
    argv = ["nsenter", f"--net=/run/netns/{ns}", "--"]
    if role == "st":
        argv += ["unshare", "--mount", "--propagation", "private", "sh", "-c", PRIVATE_NETNS, "sh"]
    argv += [sys.executable, "-m", "satlab.agent.server", "--socket", str(boxes / f"{role}.sock")]
    argv += ["--name", role, "--workdir", str(boxes / f"agent-{role}")]
    proc = subprocess.Popen(argv, start_new_session=True)
    deadline = time.monotonic() + 20
    while not (boxes / f"{role}.sock").exists():
        assert proc.poll() is None and time.monotonic() < deadline, f"box {role} did not start"
        time.sleep(0.05)
    return proc


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_st_box_builds_further_terminals_reachable_across_the_satellite(
    tmp_path: Path,
) -> None:
    first, *extra = terminals.plan([1, 1])
    build = containers.ContainerTestbed(clients=2, terminal_clients=[1, 1])._terminals_build(extra)
    with Testbed() as tb:
        assert tb.topo is not None
        emu, gw = tb.topo.ns("emu"), tb.topo.ns("gw")
        for step in (
            "link add name wire type bridge",
            "link set dev gw master wire",
            "link set dev st master wire",
            "link set dev wire up",
        ):
            assert _in(emu, "ip", *step.split()).returncode == 0
        boxes = tmp_path / "boxes"
        boxes.mkdir()
        st_box = _box_agent(tb.topo.ns("st"), boxes)
        try:
            built = request(str(boxes / "st.sock"), "POST", "/terminals", build, 60)["boxes"]
            assert built == {
                "st2": {"address": "10.250.2.3", "lan_gateway": None, "interfaces": ["sat0", "p2"]},
                "cli2": {
                    "address": "10.250.42.12",
                    "lan_gateway": "10.250.42.1",
                    "interfaces": ["eth0"],
                },
            }
            pids = {r: request(str(boxes / f"{r}.sock"), "GET", "/health")["pid"] for r in built}
            st2 = str(boxes / "st2.sock")
            request(st2, "POST", "/sysctl", {"net.ipv4.ip_forward": 1})
            request(st2, "POST", "/offloads", {"interfaces": ["sat0", "p2"]})  # a macvlan takes it
            # the gw box's routes for the run: terminal 1's LAN by st, terminal 2's by st2
            plan = containers.box_plans(0, 1, len(first.clients), 1500, extra)["gw"]
            tb.agent(
                "gw", "POST", "/addressing", {"interfaces": {"sat0": plan["interfaces"]["sat0"]}}
            )

            with socket_in_netns(gw, socket.AF_INET, socket.SOCK_STREAM) as listener:
                listener.bind(("10.250.2.1", 0))
                listener.listen(1)
                listener.settimeout(10)
                port = listener.getsockname()[1]
                connect = "import socket; socket.create_connection(('10.250.2.1', %d), 5)"
                connect = connect % port + ".sendall(b'cli2')"
                client = subprocess.run(
                    [
                        "nsenter",
                        f"--net=/proc/{pids['cli2']}/ns/net",
                        sys.executable,
                        "-c",
                        connect,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=20,
                )
                assert client.returncode == 0, client.stderr
                conn, (peer, _) = listener.accept()
                with conn:
                    assert (conn.recv(16), peer) == (b"cli2", "10.250.42.12")
            # terminal 1 is the st box itself, as before
            assert _in(gw, "ping", "-c1", "-W2", tb.topo.address("cli1")).returncode == 0
            assert _in(gw, "ping", "-c1", "-W2", "10.250.42.12").returncode == 0

            gone = request(str(boxes / "st.sock"), "POST", "/terminals", {**build, "terminals": []})
            assert gone == {"boxes": {}}
            assert not any(_alive(pid) for pid in pids.values())
            assert not (boxes / "cli2.sock").exists()
            # the kernel frees a deleted namespace's interfaces a moment later (a work queue)
            deadline = time.monotonic() + 10
            while _in(gw, "ping", "-c1", "-W1", "10.250.42.12").returncode == 0:
                assert time.monotonic() < deadline, "terminal 2 still answers once removed"
        finally:
            st_box.terminate()
            st_box.wait(10)


def test_with_the_gateway_an_extra_edge_is_built_with_its_bump(tmp_path: Path) -> None:
    """POST /terminals with `gateway`: terminal 2's edge has the gateway's ports, its macvlan as
    `wan` (no ARP, strict reverse-path filter: the kernel leaves its frames to the gateway) and
    sat0 a veth to `stx` with the macvlan's MAC, the station the far edge reaches
    (satlab.agent.terminalbox); the run test below carries data through it."""
    extra = terminals.plan([1, 1])[1:]
    build = containers.ContainerTestbed(clients=2, terminal_clients=[1, 1], gateway=True)
    plan = build._terminals_build(extra)
    assert plan["gateway"] is True
    with Testbed() as tb:
        assert tb.topo is not None
        boxes = tmp_path / "boxes"
        boxes.mkdir()
        st_box = _box_agent(tb.topo.ns("st"), boxes)
        try:
            built = request(str(boxes / "st.sock"), "POST", "/terminals", plan, 60)["boxes"]
            assert built["st2"]["interfaces"] == ["sat0", "p2", "stx", "wan"]
            pid = request(str(boxes / "st2.sock"), "GET", "/health")["pid"]
            links = json.loads(
                subprocess.run(
                    ["nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-j", "-d", "link"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            by_name = {link["ifname"]: link for link in links}
            wan, sat0 = by_name["wan"], by_name["sat0"]
            assert wan["linkinfo"]["info_kind"] == "macvlan" and "NOARP" in wan["flags"]
            assert sat0["linkinfo"]["info_kind"] == "veth" and sat0["address"] == wan["address"]
            assert by_name["stx"]["operstate"] != "DOWN"
            rp = subprocess.run(
                ["nsenter", f"--net=/proc/{pid}/ns/net", "sysctl", "-n"]
                + ["net.ipv4.conf.wan.rp_filter"],
                capture_output=True,
                text=True,
                check=True,
            )
            assert rp.stdout.strip() == "1"
            sat0_addrs = json.loads(
                subprocess.run(
                    ["nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-j", "-4", "addr", "show"]
                    + ["dev", "sat0"],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
            )
            assert sat0_addrs[0]["addr_info"][0]["local"] == "10.250.2.3"
            request(str(boxes / "st.sock"), "POST", "/terminals", {**plan, "terminals": []})
        finally:
            st_box.terminate()
            st_box.wait(10)


@pytest.mark.parametrize("gateway", [False, True], ids=["plain", "gateway"])
def test_two_terminals_run_on_the_container_testbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, emulator_bin: Path, gateway: bool
) -> None:
    """The product's runner on SATLAB_TESTBED=containers, its boxes a namespace testbed's with
    compose agents of their own (the compose wiring's interface names; gw's hopup and hoplan a
    veth pair): test_beam_terminals' two-terminal scenario runs, each terminal's download carries
    data, the faded one the less, and closing puts the st box and the gw box's routes back. With
    a `gateway` section the edge gateway is spliced into the gw and st boxes and into terminal
    2's edge in the st box (by its own agent), and each st edge's gateway forwards its client's
    data."""
    data = copy.deepcopy(SCENARIO)
    data["duration_s"] = 3.0
    for flow in data["traffic"]:
        flow["duration_s"] = 3.0
    if gateway:
        data["configurations"] = [
            {"name": "beten-notifier", "gateway": {"eten": {"enabled": True}}}
        ]
    sc = parse_scenario(data)
    with Testbed() as tb:
        assert tb.topo is not None
        gw = tb.topo.ns("gw")
        hop_ifs = "link add name hopup type veth peer name hoplan"  # this kernel has no dummy
        assert _in(gw, "ip", *hop_ifs.split()).returncode == 0
        boxes = tmp_path / "boxes"
        boxes.mkdir()
        monkeypatch.setattr(containers, "BOXES", boxes)
        monkeypatch.setattr(containers, "RUNS", tmp_path / "runs")
        monkeypatch.setenv("SATLAB_TESTBED", "containers")
        agents = [_box_agent(tb.topo.ns(r), boxes, r) for r in ("srv1", "gw", "emu", "st", "cli1")]
        try:
            res = run_one(sc, expand_runs(sc)[0])
            assert res["status"] == "ok", res.get("error")
            assert (tmp_path / "runs").is_dir()  # a container testbed's run directory
            flows = {f["terminal"]: f for f in res["flows"]}
            assert all(f["bytes_received"] > 50_000 for f in flows.values()), flows
            assert flows["faded"]["goodput_bps"] < flows["clear"]["goodput_bps"], flows
            if gateway:
                assert set(res["gateway"]) == {"gw", "st", "st2"}
                for edge in ("st", "st2"):
                    c = res["gateway"][edge]["counters"]
                    assert c["ingress_tx_frames"] > 50 and c["egress_tx_frames"] > 50, (edge, c)
                    assert c["telemetry_connects"] >= 1, (edge, c)
            # unspliced again: the st box's satellite side is its sat0
            assert _in(tb.topo.ns("st"), "ip", "link", "show", "wan").returncode != 0
            assert sorted(p.name for p in boxes.glob("*.sock")) == [
                f"{r}.sock" for r in ("cli1", "emu", "gw", "srv1", "st")
            ]
            routes = json.loads(_in(gw, "ip", "-j", "-4", "route").stdout)
            assert {r["dst"] for r in routes if r.get("dev") == "sat0"} == {
                "10.250.2.0/24",
                "10.250.3.0/24",
            }
        finally:
            for proc in agents:
                proc.terminate()
            for proc in agents:
                proc.wait(10)


def test_a_client_of_terminal_2_that_is_a_compose_box_too_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A deployment with a `cli2` service: terminal 2's client cli2 would be a namespace of the
    st box with the same role (and socket) as that box."""
    monkeypatch.setenv("SATLAB_TESTBED", "containers")
    monkeypatch.setattr(containers, "BOXES", tmp_path)
    for role in ("srv1", "gw", "emu", "st", "cli1", "cli2"):
        (tmp_path / f"agent-{role}").mkdir()  # what each box's agent makes beside its socket
    tb = backend.create_testbed(clients=2, terminal_clients=[1, 1])
    with pytest.raises(RefusedError, match=r"^hosts\.terminals: .* but \['cli2'\] are boxes"):
        tb.__enter__()
