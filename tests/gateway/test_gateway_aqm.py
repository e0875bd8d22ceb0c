"""AQM on a controlled queue: the gw edge paces its egress at a fixed 2 Mbit/s (the emulator's link
is faster), and a constant-rate UDP source offers more than that, so the queue and its AQM are
the gateway's. RED's average settles where its formula says; RED+ECN marks ECT packets instead of
early drops; drop-tail drops at the limit."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

from gwnet import CLI, Capture, Topology, pace

from satlab.testbed.topology import socket_in_netns

RATE_BPS = 2e6
FRAME = 1014  # 1000-byte IP packet + Ethernet header
OVERHEAD = 7  # egress.overhead_bytes default
CAP_PPS = RATE_BPS / ((FRAME + OVERHEAD) * 8)  # 244.9 packets/s
OFFER_PPS = 280.0
RED = {"min_th_packets": 5.0, "max_th_packets": 15.0, "max_p": 0.1, "w_q": 0.01}


def _counters_at(topo: Topology) -> tuple[dict[str, int], float]:
    """The gw edge's counters and when they were read (the middle of the status call, which can
    take a good part of a second on a loaded machine)."""
    t = time.monotonic()
    counters = topo.gw_status("gw")["counters"]
    return counters, (t + time.monotonic()) / 2


def _run(topo: Topology, aqm: dict[str, Any], tos: int, seconds: float) -> dict[str, Any]:
    """Offers OFFER_PPS for `seconds`; returns counters over the steady part, the arrival rate
    measured over that part, and the sampled RED average."""
    gw = topo.start_gateway(topo.gateway_config("gw", egress={"rate_bps": RATE_BPS, "aqm": aqm}))
    s = socket_in_netns(topo.ns("srv"), socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
    data = b"u" * (1000 - 28)
    cap = Capture(topo.ns("cli"), "eth0", want=lambda ip: ip[9] == 17)
    samples: list[float] = []
    done = threading.Event()
    marks: dict[str, Any] = {}

    def sampler() -> None:
        time.sleep(2.0)  # warm-up: queue and average settle
        marks["c0"], marks["t0"] = _counters_at(topo)
        while not done.is_set():
            st = topo.gw_status("gw")
            samples.append(st["egress"]["red_avg_packets"])
            marks["qmax"] = max(marks.get("qmax", 0), st["egress"]["queue_packets"])
            time.sleep(0.05)
        marks["c1"], marks["t1"] = _counters_at(topo)

    th = threading.Thread(target=sampler)
    th.start()
    try:
        pace(OFFER_PPS, int(OFFER_PPS * seconds), lambda i: s.sendto(data, (CLI, 9)))
    finally:
        done.set()
        th.join()
        s.close()
    time.sleep(0.4)
    ce = sum(1 for _, ip in cap.snapshot() if (ip[1] & 3) == 3)
    cap.close()
    total = topo.gw_status("gw")["counters"]
    topo.stop(gw)
    c0, c1 = marks["c0"], marks["c1"]
    d = {k: c1[k] - c0[k] for k in c1}
    return {
        "d": d,
        # The window's own duration, not the nominal one: under load the first read comes late,
        # and the sender (an absolute schedule) bunches packets to catch up.
        "rate_pps": d["egress_rx_frames"] / (marks["t1"] - marks["t0"]),
        "avg": sum(samples) / len(samples),
        "total": total,
        "ce": ce,
        "qmax": marks.get("qmax", 0),
    }


def test_red_drop_ecn_mark_and_drop_tail(topo: Topology) -> None:
    topo.start_emulator(topo.emulator_config())
    topo.start_gateway(topo.gateway_config("st"))

    # RED, drops: at a steady average, count-based RED signals a fraction 2 p_b of arrivals
    # (aqm.rs), and the fraction it must drop is the excess 1 - C/R; so
    # avg = min_th + (f / 2) / max_p * (max_th - min_th).
    r = _run(topo, {"kind": "red", **RED}, tos=0, seconds=7.0)
    d = r["d"]
    arrivals = d["egress_rx_frames"]
    # the average's noise may touch max_th now and then (a forced drop): rare, and counted
    assert d["aqm_forced_drops"] <= 0.02 * arrivals, d
    assert d["aqm_tail_drops"] == 0 and d["aqm_marked"] == 0, d
    f = (d["aqm_early_drops"] + d["aqm_forced_drops"]) / arrivals
    assert abs(f - (1 - CAP_PPS / r["rate_pps"])) < 0.05, (f, r["rate_pps"])
    predicted = RED["min_th_packets"] + (f / 2) / RED["max_p"] * (
        RED["max_th_packets"] - RED["min_th_packets"]
    )
    assert abs(r["avg"] - predicted) < 1.5, (r["avg"], predicted, f)

    # RED + ECN with ECT(0) traffic: marks instead of early drops. The source does not respond,
    # so the average climbs to max_th, where RED drops (forced) even in ECN mode.
    r = _run(topo, {"kind": "red_ecn", **RED}, tos=0x02, seconds=5.0)
    d, total = r["d"], r["total"]
    assert total["aqm_marked"] > 0 and total["aqm_early_drops"] == 0, total
    assert d["aqm_forced_drops"] > 0, d
    assert abs(r["avg"] - RED["max_th_packets"]) < 1.0, r["avg"]
    assert r["ce"] == total["aqm_marked"], (r["ce"], total["aqm_marked"])

    # Drop-tail at 20 packets.
    r = _run(topo, {"kind": "drop_tail", "limit_packets": 20}, tos=0, seconds=4.0)
    d = r["d"]
    assert d["aqm_tail_drops"] > 0 and d["aqm_early_drops"] == 0, d
    assert r["qmax"] <= 20
    tail = d["aqm_tail_drops"] / d["egress_rx_frames"]
    assert abs(tail - (1 - CAP_PPS / r["rate_pps"])) < 0.05, (tail, r["rate_pps"])
