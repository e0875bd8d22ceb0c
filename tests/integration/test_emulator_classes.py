"""Per-class queues on the forward link (issue 22): a high-priority flow keeps its delay while a
bulk flow fills the link.

Topology (netns.py, l2 mode): gw-host 10.250.1.1 -- [egw | satlab-emulator | est] -- st-host
10.250.1.2. Forward link (emuconfig.base_config): DVB-S2 ACM at 2 Msym/s, MODCOD 28 (about 8.6
Mbit/s), queue 200 packets / 400 kB; 20 ms one way here to keep the test short.

Each run: a bulk UDP flow (DSCP 0, 1500-byte packets) offered at 1.5x the link rate for 3 s, and
beside it a small probe flow marked DSCP 46 (EF): 100-byte UDP packets every 20 ms, each carrying
its send time, so the receiver measures its one-way delay (both namespaces read the same
CLOCK_MONOTONIC). The same run is made twice:
- with classes `ef` (DSCP 46, priority 0) and `bulk` (the default class, priority 1, capped at
  180 packets so the EF class always finds room in the shared 200-packet buffer): the probe waits
  at most for the frame on the air, so its delay stays near delay_ms + two frame times;
- without classes (today's single drop-tail queue): the probe waits behind the full queue, about
  its depth in time (200 x 1514 bytes at 8.6 Mbit/s = 0.28 s), and most probes are dropped.
"""

from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from typing import Any

import pytest
from emuconfig import EmulatorFactory
from linkcalc import frame_time_s
from netns import Topology
from traffic import HDR, send_udp, udp_receiver

from satlab.testbed.topology import socket_in_netns

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

DELAY_MS = 20.0
BULK_S = 3.0
SETTLE_S = 0.8  # the queue fills within 0.3 s at 1.5x; probes before this are not counted
PROBE_PORT = 5002
EF_TOS = 46 << 2

CLASSES: dict[str, Any] = {
    "classes": [
        {"name": "ef", "dscp": [46], "priority": 0},
        {"name": "bulk", "priority": 1, "limit_packets": 180},
    ]
}


def send_probes(topo: Topology, stop: threading.Event, interval_s: float = 0.02) -> int:
    """100-byte UDP probes marked DSCP 46 from gw-host to st-host until stop is set."""
    s = socket_in_netns(topo.gw, socket.AF_INET, socket.SOCK_DGRAM)
    n = 0
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, EF_TOS)
        s.connect((topo.st_ip, PROBE_PORT))
        while not stop.is_set():
            s.send(HDR.pack(n, time.monotonic_ns()) + bytes(100 - HDR.size))
            n += 1
            time.sleep(interval_s)
    finally:
        s.close()
    return n


def run_with_bulk(topo: Topology, emulator: EmulatorFactory, queue: dict[str, Any]) -> dict:
    """One run (see the module docstring): the probes' one-way delays (ms) while the bulk flow
    saturates the link, the probe counts and the emulator's forward status at the end."""
    emu = emulator(
        forward={"delay_ms": DELAY_MS, "queue": queue}, **{"return": {"delay_ms": DELAY_MS}}
    )
    fwd = emu.status()["forward"]
    assert fwd["modcod"]["id"] == 28, fwd["modcod"]
    rate = fwd["useful_rate_bps"]
    stop = threading.Event()
    sent = [0]
    with udp_receiver(topo, topo.st, port=PROBE_PORT) as probes, udp_receiver(topo, topo.st):
        th = threading.Thread(target=lambda: sent.__setitem__(0, send_probes(topo, stop)))
        th.start()
        t0 = time.monotonic()
        try:
            count = int(1.5 * rate * BULK_S / ((1472 + 28) * 8))
            send_udp(topo, topo.gw, topo.st_ip, 5001, count, 1472, 1.5 * rate)
        finally:
            t_end = time.monotonic()
            stop.set()
            th.join(5)
        time.sleep(0.6)  # let the queue drain and the last probes arrive
    delays = [
        (a.t - a.sent_ns / 1e9) * 1e3
        for a in probes.arrivals
        if t0 + SETTLE_S <= a.sent_ns / 1e9 <= t_end
    ]
    status = emu.status()["forward"]
    emu.stop()
    return {"delays": delays, "sent": sent[0], "received": len(probes.arrivals), "status": status}


def test_ef_probe_keeps_its_delay_while_bulk_fills_the_link(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    with_classes = run_with_bulk(topo, emulator, CLASSES)
    without = run_with_bulk(topo, emulator, {})
    st = with_classes["status"]
    frame_ms = frame_time_s(st["modcod"], 2.0e6) * 1e3
    queue_ms = 200 * 1514 * 8 / st["useful_rate_bps"] * 1e3
    med_c = statistics.median(with_classes["delays"])
    med_f = statistics.median(without["delays"]) if without["delays"] else float("inf")
    print(
        f"EF probe one-way delay under a saturating bulk flow: with classes median {med_c:.1f} ms"
        f" (max {max(with_classes['delays']):.1f}, {len(with_classes['delays'])} probes,"
        f" {with_classes['received']}/{with_classes['sent']} delivered); without classes median"
        f" {med_f:.1f} ms ({len(without['delays'])} probes, {without['received']}/"
        f"{without['sent']} delivered); delay_ms {DELAY_MS}, frame {frame_ms:.2f} ms, queue"
        f" depth {queue_ms:.0f} ms"
    )
    # With classes: at most the frame on the air plus the probe's own frame, and a little for the
    # emulator's and the receiver's wake-ups on a shared machine.
    assert len(with_classes["delays"]) >= 0.8 * (BULK_S - SETTLE_S) / 0.02, with_classes
    assert med_c <= DELAY_MS + 2 * frame_ms + 5.0, f"median {med_c:.1f} ms"
    assert sorted(with_classes["delays"])[int(0.9 * len(with_classes["delays"]))] <= (
        DELAY_MS + 2 * frame_ms + 15.0
    )
    # Without classes: the probes that get in wait behind the full drop-tail queue.
    assert med_f >= DELAY_MS + 0.7 * queue_ms, f"median {med_f:.1f} ms without classes"
    # The per-class counters tell the same story.
    ef, bulk = st["classes"]
    assert (ef["name"], bulk["name"]) == ("ef", "bulk")
    assert ef["dropped_packets"] == 0 and ef["sent_packets"] >= with_classes["received"]
    assert bulk["dropped_packets"] > 0
    assert ef["queue_delay_max_ms"] <= frame_ms + 1.0, ef
    assert bulk["queue_delay_sum_ms"] / bulk["sent_packets"] >= 0.5 * queue_ms * 180 / 200, bulk
    assert st["counters"]["queue_drops"] == ef["dropped_packets"] + bulk["dropped_packets"]
    assert "classes" not in without["status"]


def test_class_counters_are_prometheus_metrics(topo: Topology, emulator: EmulatorFactory) -> None:
    """GET /metrics carries the per-class series, labelled by direction and class."""
    emu = emulator(
        forward={"delay_ms": DELAY_MS, "queue": CLASSES}, **{"return": {"delay_ms": DELAY_MS}}
    )
    s = socket_in_netns(topo.gw, socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, EF_TOS)
        for i in range(5):
            s.sendto(struct.pack("!Q", i) + bytes(92), (topo.st_ip, PROBE_PORT))
    finally:
        s.close()
    time.sleep(0.3)
    code, text = emu.request("GET", "/metrics")
    assert code == 200
    rows = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in str(text).splitlines()
        if line.startswith("satlab_emulator_class_")
    }
    key = 'satlab_emulator_class_sent_packets_total{direction="forward",class="ef"}'
    assert rows[key] == 5, rows
    assert rows['satlab_emulator_class_sent_packets_total{direction="forward",class="bulk"}'] == 0
    assert not [k for k in rows if 'direction="return"' in k]
