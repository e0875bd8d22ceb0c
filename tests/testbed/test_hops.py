"""Terrestrial hops (path.terrestrial): each hop its own emulator between two routers, cross hosts
at a hop's two ends. Delays and rates measured on real namespaces, cross traffic confined to its
hop, and nothing left behind: after a run, a failed run, and a SIGKILLed owner."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed import hops, topology
from satlab.testbed.runner import emulator_config, run_one
from satlab.testbed.telemetry import TelemetryReader
from satlab.testbed.testbed import STATE_ROOT, Testbed, sweep


def _link(delay_ms: float, rate_bps: float = 20e6) -> dict[str, Any]:
    d = {"kind": "fixed", "rate_bps": rate_bps, "delay_ms": delay_ms}
    return {"forward": d, "return": d}


def _scenario(path: list[dict[str, Any]], sat_delay_ms: float, **over: Any) -> dict[str, Any]:
    return {
        "name": "hops",
        "link": _link(sat_delay_ms),
        "path": {"terrestrial": path},
        "duration_s": 6,
        "traffic": [{"kind": "bulk_tcp", "duration_s": 6}],
        "configurations": [{"name": "cubic"}],
        **over,
    }


def _min_rtt_ms(tb: Testbed, src: str, dst: str) -> float:
    assert tb.topo is not None
    out = subprocess.run(
        ["nsenter", f"--net=/run/netns/{tb.topo.ns(src)}", "ping", "-c5", "-i0.2", "-W3", dst],
        capture_output=True,
        text=True,
    )
    m = re.search(r"= ([\d.]+)/", out.stdout)
    assert m, f"ping {src} -> {dst}: {out.stdout}{out.stderr}"
    return float(m[1])


def _processes_of(tid: str) -> list[str]:
    """Command lines of live processes that name the testbed's directory (agents, emulators)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"/{tid}/" in text and "pytest" not in text:
            found.append(text)
    return found


def test_three_hops_add_their_delays_and_a_hops_cross_hosts_cross_it_alone(
    emulator_bin: Path,
) -> None:
    """RTTs by ping between the path's ends and between hop 2's cross hosts. Bounds: the emulators'
    delay lines never deliver early, so the round trip is at least twice the sum of the one-way
    delays; above it only serialization (a 98-byte ping frame takes 0.2 ms at 4 Mbit/s, under
    0.6 ms over all eight emulator directions), each emulator's release error (tens of us) and
    forwarding through five routers on a loaded two-core machine: 5 ms of slack on the minimum
    of five pings."""
    path = [
        {"delay_ms": 10, "rate_bps": 50e6},
        {"delay_ms": 25, "rate_bps": 4e6, "cross_hosts": 1},
        {"delay_ms": 40, "rate_bps": 50e6},
    ]
    sc = parse_scenario(_scenario(path, sat_delay_ms=60))
    spec = expand_runs(sc)[0]
    with Testbed(hops=hops.cross_hosts(sc)) as tb:
        assert tb.topo is not None
        names = set(topology.project_namespaces(tb.id))
        for role in ("r1", "r2", "r3", "hop1", "hop2", "hop3", "x2s1", "x2c1"):
            assert topology.namespace_name(tb.id, role) in names
        cfg = tb.dir / "emulator.yaml"
        cfg.write_text(json.dumps(emulator_config(spec, tb, 100)))
        tb.agent(
            "emu",
            "POST",
            "/processes",
            {"id": "emulator", "kind": "emulator", "args": ["--config", str(cfg)]},
        )
        telemetry = TelemetryReader(tb.dir / "emulator.sock")
        telemetry.wait_connected()
        started = hops.start(tb, sc, spec)
        try:
            end_to_end = _min_rtt_ms(tb, "srv1", tb.topo.address("cli1"))
            on_hop2 = _min_rtt_ms(tb, "x2s1", tb.topo.address("x2c1"))
            hop3_and_sat = _min_rtt_ms(tb, "x2c1", tb.topo.address("cli1"))
        finally:
            telemetry.stop()
        counters = hops.stop(tb, started)["hops"]
    assert 270 <= end_to_end <= 275, f"srv1 -> cli1: {end_to_end} ms for 2 x (10+25+40+60)"
    assert 50 <= on_hop2 <= 55, f"x2s1 -> x2c1: {on_hop2} ms for 2 x 25"
    assert 200 <= hop3_and_sat <= 205, f"x2c1 -> cli1: {hop3_and_sat} ms for 2 x (40+60)"
    # Each hop's own seed, none the run's: independent error draws per hop.
    seeds = [h["seed"] for h in counters]
    assert len(set(seeds)) == 3 and spec.seed not in seeds
    # srv1's 5 pings crossed every hop; hop 2 also carried x2s1's, hop 3 also x2c1's. Each count
    # is held to the pings that hop must have carried, not to another hop's count: the counters
    # also hold the IPv6 autoconfiguration frames (router solicitations, MLD reports) of freshly
    # raised interfaces, a timing-dependent few per hop (seen: hop 1 9, hop 2 11).
    fwd = [h["forward"]["delivered_packets"] for h in counters]
    assert fwd[0] >= 5 and fwd[1] >= 10 and fwd[2] >= 10, fwd


def test_the_slowest_hop_caps_tcp_and_cross_traffic_stays_on_its_hop(emulator_bin: Path) -> None:
    """A 4 Mbit/s middle hop between 50 Mbit/s hops and a 20 Mbit/s satellite link, with 1 Mbit/s
    of UDP between its cross hosts (the ETEN report's section 2 shape, shortened): the hop's
    counters show the UDP entering at hop 2 and leaving there, and the TCP flow's goodput stays
    below the hop's rate (whole Ethernet frames, so payload is below 4 Mbit/s even alone)."""
    path = [
        {"delay_ms": 10, "rate_bps": 50e6},
        {"delay_ms": 10, "rate_bps": 4e6, "queue": {"limit_packets": 50}, "cross_hosts": 1},
        {"delay_ms": 10, "rate_bps": 50e6},
    ]
    udp = {"kind": "udp_cbr", "rate_bps": 1e6, "packet_bytes": 1000, "hop": 2}
    sc = parse_scenario(
        _scenario(path, sat_delay_ms=50, traffic=[{"kind": "bulk_tcp", "duration_s": 6}, udp])
    )
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "ok", res.get("error")
    tcp, cross = res["flows"]
    h1, h2, h3 = (h["forward"] for h in res["hops"])
    # The UDP reached its sink, and the bottleneck is the hop: both flows' payload fits in 4 Mbit/s
    # and TCP got most of what the UDP left (not the satellite's 20 Mbit/s).
    assert cross["packets_received"] >= 0.5 * cross["packets_sent"] > 0
    assert tcp["goodput_bps"] + cross["goodput_bps"] <= 4e6
    assert tcp["goodput_bps"] >= 1.5e6, tcp
    # Hop 2 got hop 1's output plus the UDP; hop 3 got hop 2's output minus the UDP (which hop 2
    # delivered to x2c1). ARP between the routers and packets in flight at the stop: a few.
    slack = 10 + 0.02 * cross["packets_sent"]
    assert abs(h2["offered_packets"] - h1["delivered_packets"] - cross["packets_sent"]) <= slack
    assert abs(h2["delivered_packets"] - h3["offered_packets"] - cross["packets_received"]) <= slack
    # Only the 4 Mbit/s hop queues past its limit: TCP's losses are that hop's queue drops.
    assert h1["queue_drops"] == 0 and h3["queue_drops"] == 0 and h2["queue_drops"] > 0
    assert not _processes_of(res["testbed_id"])


def test_a_hop_the_emulator_refuses_fails_the_run_naming_it_and_leaves_nothing(
    emulator_bin: Path,
) -> None:
    path = [{"delay_ms": 5, "rate_bps": 1e6, "bit_errors": {"model": "uniform", "ber": 0.9}}]
    sc = parse_scenario(_scenario(path, sat_delay_ms=5, duration_s=2))
    res = run_one(sc, expand_runs(sc)[0])
    assert res["status"] == "failed"
    assert "path.terrestrial.0" in res["error"] and "ber" in res["error"], res["error"]
    assert not topology.project_namespaces(res["testbed_id"])
    assert not _processes_of(res["testbed_id"])


OWNER = """
import sys
import yaml
from satlab.scenario import TerrestrialHop
from satlab.testbed import hops
from satlab.testbed.testbed import Testbed
tb = Testbed(hops=[1]).__enter__()
hop = TerrestrialHop(delay_ms=5, rate_bps=1e6)
cfg = tb.dir / "hop1.yaml"
cfg.write_text(yaml.safe_dump(hops.emulator_config(hop, 1, 1, tb)))
body = {"id": "emulator", "kind": "emulator", "args": ["--config", str(cfg)]}
tb.agent("hop1", "POST", "/processes", body)
print(tb.id, flush=True)
sys.stdin.read()
"""


def test_sweeper_removes_the_hops_of_a_killed_owner(emulator_bin: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert owner.stdout is not None
        tid = owner.stdout.readline().strip()
        assert tid, "the owner did not build its testbed"
        names = set(topology.project_namespaces(tid))
        for role in ("r1", "hop1", "x1s1", "x1c1"):
            assert topology.namespace_name(tid, role) in names
        assert any("satlab-emulator" in p for p in _processes_of(tid))
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    assert tid in sweep()
    assert not topology.project_namespaces(tid)
    assert not (STATE_ROOT / tid).exists()
    deadline = time.monotonic() + 2  # SIGKILLed processes are gone once reaped
    while _processes_of(tid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_of(tid)
