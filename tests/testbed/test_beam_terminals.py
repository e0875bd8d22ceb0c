"""Two satellite terminals of one beam, each with its own st edge and client (hosts.terminals,
satlab.testbed.terminals), run through the product's runner on real namespaces.

Terminal `clear` is in clear sky, terminal `faded` under 14 dB of constant downlink rain (a lower
MODCOD); the runner fills each beam terminal's prefixes from its client's LAN and its st edge's
address. One bulk TCP download to the client behind each: both carry data, the emulator's status
shows the two MODCODs at the same time, and the faded terminal's goodput is the lower one (round
robin gives both the same frames, the faded one's carry fewer bytes). Short delays (20 ms each
way) and a 2 Msym/s carrier keep the run to 5 s.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from satlab.scenario import expand_runs, parse_scenario
from satlab.settings import EMULATOR_CONTROL_LISTEN
from satlab.testbed.backend import owned_testbed
from satlab.testbed.runner import run_one
from satlab.testbed.topology import namespace_name, socket_in_netns

DURATION_S = 5.0

SCENARIO: dict[str, Any] = {
    "name": "two-terminals",
    "duration_s": DURATION_S,
    "link": {
        "forward": {
            "delay_ms": 20.0,
            "symbol_rate_baud": 2.0e6,
            "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 0.0},
            "queue": {"limit_packets": 200, "limit_bytes": 400_000},
            "beam": {
                "scheduler": "round_robin",
                "terminals": [
                    {"name": "clear"},
                    {"name": "faded", "attenuation": {"type": "constant", "value_db": 14.0}},
                ],
            },
        },
        "return": {"delay_ms": 20.0},
    },
    "hosts": {"terminals": [{"name": "clear", "clients": 1}, {"name": "faded", "clients": 1}]},
    "traffic": [
        {"kind": "bulk_tcp", "client": 1, "duration_s": DURATION_S},
        {"kind": "bulk_tcp", "client": 2, "duration_s": DURATION_S},
    ],
    "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
}


def _emulator_status(testbed_id: str) -> dict[str, Any]:
    """GET /status of the run's emulator, inside its namespace."""
    host, port = EMULATOR_CONTROL_LISTEN.rsplit(":", 1)
    sock = socket_in_netns(namespace_name(testbed_id, "emu"), socket.AF_INET, socket.SOCK_STREAM)
    with sock:
        sock.settimeout(5)
        sock.connect((host, int(port)))
        sock.sendall(b"GET /status HTTP/1.0\r\nHost: emu\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status: dict[str, Any] = json.loads(data.split(b"\r\n\r\n", 1)[1])
    return status


def _mid_run_terminals() -> tuple[threading.Thread, dict[str, Any]]:
    """Runs the scenario in a thread; returns it and, filled in mid-run, the forward terminals."""
    sc = parse_scenario(SCENARIO)
    out: dict[str, Any] = {}
    th = threading.Thread(target=lambda: out.update(result=run_one(sc, expand_runs(sc)[0])))
    th.start()
    deadline = time.monotonic() + 40
    while th.is_alive() and time.monotonic() < deadline:
        tid = owned_testbed(os.getpid())
        try:
            terms = _emulator_status(tid)["forward"]["terminals"] if tid else []
        except OSError:
            terms = []  # the emulator not up yet
        if terms and all(t["frames"] > 100 for t in terms):
            out["terminals"] = terms
            break
        time.sleep(0.3)
    return th, out


def test_two_terminals_carry_their_own_modcod_and_goodput(emulator_bin: Path) -> None:
    th, out = _mid_run_terminals()
    th.join(timeout=60)
    res = out["result"]
    assert res["status"] == "ok", res.get("error")
    clear, faded = out["terminals"]
    assert [clear["name"], faded["name"]] == ["clear", "faded"]
    assert faded["modcod"]["id"] < clear["modcod"]["id"], (clear["modcod"], faded["modcod"])
    flows = {f["terminal"]: f for f in res["flows"]}
    assert set(flows) == {"clear", "faded"}
    assert all(f["bytes_received"] > 100_000 for f in flows.values()), flows
    assert flows["faded"]["goodput_bps"] < 0.85 * flows["clear"]["goodput_bps"], flows


def test_a_pep_runs_on_every_terminals_st_edge(emulator_bin: Path) -> None:
    """pep.edges both: the gw edge and each terminal's st edge run satlab-pep; each st edge's PEP
    splits the connection to its own client."""
    data = copy.deepcopy(SCENARIO)
    data["duration_s"] = 3.0
    for flow in data["traffic"]:  # a byte count: a duration would leave the PEPs' buffers to drain
        del flow["duration_s"]
        flow["bytes"] = 400_000
    data["configurations"] = [{"name": "pep", "pep": {"edges": "both"}}]
    sc = parse_scenario(data)
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    assert set(res["pep"]) == {"gw", "st", "st2"}
    for edge, client in (("st", "10.250.3.11"), ("st2", "10.250.42.12")):
        (conn,) = res["pep"][edge]["connections"]
        assert conn["accepted_from"] == "satellite" and conn["server"].startswith(client + ":")
        assert conn["bytes_client_to_server"] > 100_000, conn


def test_each_terminals_st_edge_runs_its_own_edge_gateway(emulator_bin: Path) -> None:
    """A gateway scheme (CETEN, whose gateway samples every packet event of the link) on two
    terminals: gw, st and st2 each run satlab-gateway; each st edge's gateway forwards its own
    client's data (and stamps its CETEN options), and its telemetry, the relay's share for its
    terminal, holds the events of its own packets only: as many corruption samples as frames
    the link brought it, not the two terminals' sum (satlab.testbed.edge_telemetry)."""
    data = copy.deepcopy(SCENARIO)
    data["duration_s"] = 4.0
    for flow in data["traffic"]:
        flow["duration_s"] = 4.0
    data["hosts"]["settings"] = {"timestamps": False}
    data["configurations"] = [
        {
            "name": "ceten",
            "transport": {"congestion_control": "sl_ceten"},
            "gateway": {"eten": {"enabled": True}, "ceten": {"enabled": True}},
        }
    ]
    sc = parse_scenario(data)
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    flows = {f["terminal"]: f for f in res["flows"]}
    assert all(f["bytes_received"] > 50_000 for f in flows.values()), flows
    assert set(res["gateway"]) == {"gw", "st", "st2"}
    counters = {edge: res["gateway"][edge]["counters"] for edge in ("st", "st2")}
    for edge, c in counters.items():
        assert c["ingress_tx_frames"] > 50 and c["ceten_stamped"] > 50, (edge, c)
        assert c["telemetry_connects"] >= 1 and c["telemetry_lines"] > 0, (edge, c)
        # ARP broadcasts reach every edge and name no terminal: a few frames more than samples
        own = c["ceten_corruption_samples"] / c["ingress_rx_frames"]
        assert 0.8 < own <= 1.05, (edge, c)
    both = sum(c["ceten_corruption_samples"] for c in counters.values())
    assert all(c["ceten_corruption_samples"] < 0.9 * both for c in counters.values()), counters
