"""The gateway is in the path of a scenario run, also for the frames arriving from the satellite:
what its ingress writes into them reaches the hosts.

Each edge's `wan` (the gateway's satellite-side wire) used to answer ARP for sat0's address (the
kernel answers on any interface), faster than sat0's own reply through the gateway: the far edge
then addressed its frames to wan, that edge's kernel routed them straight to the LAN, and the
gateway's rewritten copies were dropped at sat0 as frames for another host. CETEN's corruption
stamps (the st edge's ingress) never reached the receiver, so sl_ceten_lf called every loss
congestion (the geo-rain comparison's ceten-lf runs: 0 of 6-7 losses corruption).
"""

from __future__ import annotations

import socket
import time
from typing import Any

from gwnet import GW_SAT, ST_SAT, Topology, _mac

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed import topology
from satlab.testbed.runner import run_one
from satlab.testbed.topology import socket_in_netns

ETH_P_ARP = 0x0806

# 1 % of 1500-byte packets corrupted, no other loss until the window outgrows the gateway's queue.
LINK: dict[str, Any] = {
    "forward": {
        "kind": "fixed",
        "rate_bps": 10e6,
        "delay_ms": 100,
        "bit_errors": {"model": "uniform", "ber": 1e-6},
    },
    "return": {"kind": "fixed", "rate_bps": 10e6, "delay_ms": 100},
}


def arp_replies(topo: Topology, port: str, sender: str, target: str) -> list[str]:
    """Asks who has `target` on the emulator's `port` (cabled to an edge's wan), as the far edge's
    kernel (`sender`) does; returns the hardware addresses of the replies seen within a second."""
    mac = bytes.fromhex(_mac(topo.ns("emu"), port).replace(":", ""))
    request = (
        b"\xff" * 6 + mac + ETH_P_ARP.to_bytes(2, "big")
        + bytes.fromhex("0001080006040001") + mac + socket.inet_aton(sender)
        + b"\x00" * 6 + socket.inet_aton(target)
    )  # fmt: skip
    s = socket_in_netns(topo.ns("emu"), socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ARP))
    try:
        s.bind((port, ETH_P_ARP))
        s.settimeout(0.2)
        s.send(request)
        seen: list[str] = []
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            try:
                f = s.recv(128)
            except TimeoutError:
                continue
            if f[20:22] == b"\x00\x02" and f[28:32] == socket.inet_aton(target):
                seen.append(f[22:28].hex(":"))
        return seen
    finally:
        s.close()


def test_an_edges_wan_does_not_answer_arp(topo: Topology) -> None:
    # No gateway runs: only the edge's kernel could answer on wan, and it must not (its sat0
    # answers, through the gateway, when one runs).
    for port, sender, target in (("st", GW_SAT, ST_SAT), ("gw", ST_SAT, GW_SAT)):
        wan = _mac(topo.ns(port), "wan")
        assert arp_replies(topo, port, sender, target) == [], f"{port} edge's wan {wan} answered"


def test_the_st_edge_stamps_reach_the_receiver() -> None:
    sc = parse_scenario(
        {
            "name": "gw-in-path",
            "link": LINK,
            "duration_s": 8,
            "hosts": {"settings": {"sack": True, "timestamps": False}},
            "traffic": [{"kind": "bulk_tcp", "duration_s": 8}],
            "configurations": [
                {
                    "name": "ceten-lf",
                    "transport": {"congestion_control": "sl_ceten_lf"},
                    "gateway": {"ceten": {"enabled": True}},
                }
            ],
        }
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    stats = res["endhosts"]["srv1"]["sl_ceten_lf"]["stats"]
    report = f"sender {stats}, link {res['link_events']}"
    assert res["link_events"].get("forward.corrupted", 0) >= 5, report
    # A corruption loss is seen on the ACKs of the next segments, whose forward corruption
    # survival the st edge lowered (alpha 0.5: 0.5, 0.75, 0.875 ...); through the bypass every
    # stamp read 1.0 and the loss-fraction form had no corruption to weigh.
    assert stats["loss_corruption"] >= 1, report
    assert not topology.project_namespaces(res["testbed_id"])
