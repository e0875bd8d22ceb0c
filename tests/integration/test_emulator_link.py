"""The emulator carries real traffic between real namespaces as a GEO link would (issue 3, Tests).

Topology (netns.py, l2 mode): gw-host 10.250.1.1 -- [egw | satlab-emulator | est] -- st-host
10.250.1.2, MTU 1500, tso/gso/gro/tx-checksumming off on every veth, static neighbours.
Base link (conftest.base_config): forward DVB-S2 ACM 2 Msym/s, clear sky 20 dB up and down,
ACM refresh 100 ms; return RCS2 defaults; 250 ms each way unless a test says otherwise.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from emuconfig import EmulatorFactory
from linkcalc import (
    ETH_HEADER,
    UDP_IP_HEADERS,
    expected_l2_rate,
    frame_time_s,
    opensand_modcod,
    total_cn_db,
)
from netns import Topology
from traffic import icmp_rtts_ms, send_udp, tcp_transfer, udp_receiver

from satlab.testbed.telemetry import TelemetryReader

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

UDP_PAYLOAD = 1472  # 1500-byte IP packets, 1514-byte Ethernet frames


def ping_rtts_ms(topo: Topology, count: int = 10) -> list[float]:
    """ICMP echo RTTs gw-host -> st-host with microsecond precision (traffic.icmp_rtts_ms)."""
    rtts = icmp_rtts_ms(topo.gw, topo.st_ip, count=count, interval=0.2)
    got = [r for r in rtts if r is not None]
    assert len(got) == count, f"echo replies lost: {rtts}"
    return got


# ---------------------------------------------------------------------------------------------
def test_ping_rtt_is_twice_the_one_way_delay(topo: Topology, emulator: EmulatorFactory) -> None:
    """ICMP echo RTT = 2 x delay_ms + the echo's forward PLFRAME time + its return burst time.

    Expectation: a lone ping leaves in the next forward PLFRAME, which reaches the terminal when it
    has been fully received: one frame time (PLHEADER + XFECFRAME + pilots at 40 Msym/s, 32APSK:
    13 338 symbols = 0.333 ms); the reply takes one RCS2 burst (536 symbols at 4 Msym/s = 0.134 ms).
    Allowed: +-1 ms around 2 x delay + those (issue 3: "equals the configured delay within
    1 ms")."""
    delay_ms = 250.0
    emu = emulator(
        forward={"delay_ms": delay_ms, "symbol_rate_baud": 40e6},
        **{"return": {"delay_ms": delay_ms}},
    )
    st = emu.status()
    fwd_frame_ms = frame_time_s(st["forward"]["modcod"], 40e6) * 1e3
    ret_burst_ms = 536 / 4e6 * 1e3
    expected = 2 * delay_ms + fwd_frame_ms + ret_burst_ms
    rtts = ping_rtts_ms(topo, count=10)
    print(f"echo RTTs {[round(r, 3) for r in rtts]} ms, expected {expected:.3f} ms")
    off = sorted(abs(r - expected) for r in rtts)
    # every echo should be within 1 ms; one late sample in ten is tolerated because this machine
    # is shared (a compile on the same 2 cores delays a thread by a few ms now and then)
    assert off[-2] <= 1.0, f"RTTs {rtts} ms vs expected {expected:.3f} ms"
    assert min(rtts) >= expected - 0.05, "faster than the configured delay"
    # Every delivered echo (request forward, reply return) has a measured release error.
    after = emu.status()
    for d in ("forward", "return"):
        rel = after["release_error"][d]
        assert rel["count"] == after[d]["counters"]["delivered_packets"] >= 10, (d, rel)
        assert rel["p50_us"] is not None and rel["p50_us"] <= rel["p99_us"] <= rel["max_us"] + 1


# ---------------------------------------------------------------------------------------------
def test_udp_above_capacity_comes_out_at_the_modcod_useful_rate(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """1500-byte UDP offered at 1.4x capacity; delivered Ethernet-frame rate = status
    useful_rate_bps x 1514 / (1514 + GSE header), within 2%."""
    emu = emulator(forward={"delay_ms": 20.0}, **{"return": {"delay_ms": 20.0}})
    fwd = emu.status()["forward"]
    assert fwd["modcod"]["id"] == opensand_modcod(total_cn_db(20.0, 20.0)) == 28
    frame_len = UDP_PAYLOAD + UDP_IP_HEADERS + ETH_HEADER
    expected = expected_l2_rate(fwd["useful_rate_bps"], frame_len)
    with udp_receiver(topo, topo.st) as rx:
        sent = send_udp(topo, topo.gw, topo.st_ip, 5001, 1400, UDP_PAYLOAD, 1.4 * expected)
        rx.wait_idle(1.0)
    arr = rx.arrivals
    assert len(arr) > 500, f"only {len(arr)} of {sent} arrived"
    # the link is saturated from the first arrival to the last one (the queue never empties);
    # skip 0.3 s at both ends
    measured = rx.rate_bps(arr[0].t + 0.3, arr[-1].t - 0.3, UDP_IP_HEADERS + ETH_HEADER)
    err = measured / expected - 1
    print(f"UDP: {measured / 1e6:.4f} Mbit/s delivered vs {expected / 1e6:.4f} ({100 * err:+.3f}%)")
    assert abs(err) <= 0.02, (
        f"delivered {measured / 1e6:.3f} Mbit/s (Ethernet frames) vs expected {expected / 1e6:.3f}"
        f" (useful_rate_bps {fwd['useful_rate_bps']:.0f}): {100 * err:+.2f}%"
    )
    st = emu.status()["forward"]["counters"]
    assert st["queue_drops"] > 0, "offered above capacity but the queue never dropped"


# ---------------------------------------------------------------------------------------------
def test_step_attenuation_switches_modcod_with_the_feedback_delay(
    topo: Topology, emulator: EmulatorFactory, tmp_path: Path
) -> None:
    """OpenSAND File trace, tick = ACM refresh = 100 ms: 0 dB until tick 20, 8 dB from tick 21.

    C/N: 20 dB up, 20 - 8 = 12 dB down -> 11.36 dB total -> MODCOD 20 (16APSK 4/5, 11.03 dB).
    The terminal measures at every multiple of refresh_ms, so its report at 2100 ms (tick 21)
    carries the new Es/N0; the report reaches the gateway after the return link's one-way delay
    (CONFIG.md, ACM), so the MODCOD changes at 2100 + 250 = 2350 ms. Allowed: +10 ms (the
    emulator's wake-up and the first frame start after the report) and nothing earlier."""
    trace = tmp_path / "step.txt"
    trace.write_text("# step fade\n0 0\n20 0\n21 8\n400 8\n")
    return_delay = 250.0
    cfg: dict[str, Any] = {
        "forward": {"downlink": {"attenuation": {"type": "file", "file": str(trace)}}},
        "return": {"delay_ms": return_delay},
        "telemetry": {"period_ms": 100},
    }
    expect_id = opensand_modcod(total_cn_db(20.0, 12.0))
    assert expect_id == 20
    step_ms = 21 * 100.0
    # the socket exists once the emulator is up; connect right after start to see t_ms from ~0
    emu = emulator(**cfg)
    tel = TelemetryReader(Path(emu.config["telemetry"]["socket"]))
    tel.wait_connected()
    try:
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            # the reader keeps the periodic link records (type "telemetry") only
            recs: list[dict[str, Any]] = [
                dict(r) for r in list(tel.records) if r["direction"] == "forward"
            ]
            if recs and recs[-1]["t_ms"] > step_ms + 1500:
                break
            time.sleep(0.1)
    finally:
        tel.stop()
        tel.join(2)
    recs = [r for r in recs if r.get("modcod")]
    assert recs, "no forward telemetry"
    assert recs[0]["t_ms"] < step_ms - 500, f"telemetry started late: {recs[0]['t_ms']}"
    before = [r for r in recs if r["t_ms"] < step_ms]
    assert before and all(r["modcod"]["id"] == 28 for r in before), "not MODCOD 28 before the step"
    changes = [
        (r["t_ms"], r["modcod"]["id"])
        for prev, r in zip(recs, recs[1:], strict=False)
        if r["modcod"]["id"] != prev["modcod"]["id"]
    ]
    assert changes, "the MODCOD never changed"
    t_switch, first_id = changes[0]
    print(f"MODCOD changes {changes}; step at {step_ms} ms")
    lo, hi = step_ms + return_delay, step_ms + return_delay + 10
    assert lo <= t_switch <= hi, (
        f"MODCOD changed at t={t_switch} ms, expected in [{lo}, {hi}] (step at {step_ms} ms, "
        f"refresh 100 ms, return delay {return_delay} ms); changes: {changes}"
    )
    assert recs[-1]["modcod"]["id"] == expect_id, f"settled on {recs[-1]['modcod']}"
    assert first_id == expect_id, f"first switch went to {first_id}, changes {changes}"
    # the Es/N0 follows the trace at once (channel), unlike the MODCOD (feedback)
    after = [r for r in recs if r["t_ms"] >= step_ms + 100]
    assert after and after[0]["esn0_db"] == pytest.approx(total_cn_db(20.0, 12.0), abs=0.05)


# ---------------------------------------------------------------------------------------------
def test_tcp_transfer_across_270ms_rtt_completes_byte_exact(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """A 3 MB TCP transfer (Linux CUBIC) over 135 ms each way (RTT 270 ms + framing)."""
    emulator(
        forward={
            "delay_ms": 135.0,
            "symbol_rate_baud": 10e6,
            "queue": {"limit_packets": 2000, "limit_bytes": 3_000_000},
        },
        **{"return": {"delay_ms": 135.0}},
    )
    rtt = ping_rtts_ms(topo, count=3)
    assert all(269.0 <= r <= 275.0 for r in rtt), rtt
    res = tcp_transfer(topo, topo.gw, topo.st, topo.st_ip, 3_000_000)
    print(f"TCP: {res.received} bytes in {res.seconds:.2f} s, RTT {rtt}")
    assert res.received == res.sent == 3_000_000
    assert res.received_sha256 == res.sent_sha256
    assert res.seconds < 30


# ---------------------------------------------------------------------------------------------
def test_live_control_changes_the_rate_of_a_running_flow(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """A saturating UDP flow; POST /control attenuation_db=8 on the forward link mid-flow: the
    delivered rate falls from MODCOD 28's to MODCOD 20's useful rate (efficiency 3.17 vs 4.45)."""
    emu = emulator(forward={"delay_ms": 50.0}, **{"return": {"delay_ms": 50.0}})
    fwd0 = emu.status()["forward"]
    frame_len = UDP_PAYLOAD + UDP_IP_HEADERS + ETH_HEADER
    rate0 = expected_l2_rate(fwd0["useful_rate_bps"], frame_len)
    stop = threading.Event()
    with udp_receiver(topo, topo.st) as rx:
        sender = threading.Thread(
            target=send_udp,
            args=(topo, topo.gw, topo.st_ip, 5001, 10**7, UDP_PAYLOAD, 1.4 * rate0),
            kwargs={"stop": stop.is_set},
            daemon=True,
        )
        sender.start()
        try:
            time.sleep(3.0)
            t_ctl = time.monotonic()
            code, body = emu.control({"direction": "forward", "attenuation_db": 8.0})
            assert code == 200, body
            time.sleep(3.5)
        finally:
            stop.set()
            sender.join(5)
        rx.wait_idle(0.5, timeout=5)
    fwd1 = emu.status()["forward"]
    assert fwd1["attenuation_db"] == pytest.approx(8.0)
    assert fwd1["modcod"]["id"] == opensand_modcod(total_cn_db(20.0, 12.0)) == 20
    rate1 = expected_l2_rate(fwd1["useful_rate_bps"], frame_len)
    overhead = UDP_IP_HEADERS + ETH_HEADER
    before = rx.rate_bps(t_ctl - 2.0, t_ctl, overhead)
    after = rx.rate_bps(t_ctl + 1.0, t_ctl + 3.5, overhead)
    print(f"live control: {before / 1e6:.3f} -> {after / 1e6:.3f} Mbit/s "
          f"(expected {rate0 / 1e6:.3f} -> {rate1 / 1e6:.3f})")  # fmt: skip
    assert before == pytest.approx(rate0, rel=0.03), (before, rate0)
    assert after == pytest.approx(rate1, rel=0.03), (after, rate1)
    assert after < 0.8 * before


# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"direction": "forward", "attenuation_db": -3.0}, "attenuation_db"),
        ({"direction": "forward", "ber": 0.9}, "ber"),
        ({"direction": "return", "delay_ms": -1.0}, "delay_ms"),
        ({"direction": "sideways", "attenuation_db": 1.0}, "direction"),
        ({"direction": "forward", "attenuation_db": "lots"}, "attenuation_db"),
    ],
)
def test_bad_control_input_is_a_400_naming_the_field(
    topo: Topology, emulator: EmulatorFactory, body: dict[str, Any], field: str
) -> None:
    emu = emulator()
    before = emu.status()
    code, resp = emu.control(body)
    assert code == 400, resp
    print(f"400: {resp}")
    assert isinstance(resp, dict) and isinstance(resp.get("error"), str), resp
    assert field in resp["error"], resp
    after = emu.status()
    for d in ("forward", "return"):  # nothing changed
        for k in ("attenuation_db", "ber", "delay_ms"):
            assert after[d][k] == before[d][k]
    code, resp = emu.request("POST", "/control", b"{not json")
    assert code == 400, resp


# ---------------------------------------------------------------------------------------------
def run_ber_sequence(emulator: EmulatorFactory, topo: Topology, seed: int) -> dict[str, Any]:
    emu = emulator(
        seed=seed,
        forward={
            "delay_ms": 20.0,
            "symbol_rate_baud": 10e6,
            "bit_errors": {"model": "uniform", "ber": 1e-5, "action": "deliver"},
        },
        **{"return": {"delay_ms": 20.0}},
    )
    n, size = 2000, 1000
    with udp_receiver(topo, topo.st, check_payload=True) as rx:
        send_udp(topo, topo.gw, topo.st_ip, 5001, n, size, 8e6, no_check=True)
        rx.wait_idle(0.8)
    st = emu.status()["forward"]["counters"]
    emu.stop()
    got = {a.seq: a.intact for a in rx.arrivals if 0 <= a.seq < n}
    return {
        "counters": st,
        "missing": sorted(set(range(n)) - set(got)),
        "damaged": sorted(s for s, ok in got.items() if not ok),
    }


def test_same_seed_same_ber_gives_identical_corruption(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """Two runs, same seed and BER 1e-5, the same 2000 UDP packets (1000-byte payload, checksum 0
    so payload errors reach the application): identical corruption counters, identical sets of
    damaged and missing (IP-header hits) sequence numbers. A third run with another seed differs."""
    a = run_ber_sequence(emulator, topo, seed=11)
    b = run_ber_sequence(emulator, topo, seed=11)
    c = run_ber_sequence(emulator, topo, seed=12)
    ca, cb = a["counters"], b["counters"]
    for run in (a, b, c):
        print(run["counters"]["corrupted_packets"], len(run["damaged"]), len(run["missing"]))
    assert ca["offered_packets"] == cb["offered_packets"] >= 2000
    assert ca["queue_drops"] == cb["queue_drops"] == 0
    assert ca["corrupted_packets"] > 50, ca  # ~8% of 2000 at BER 1e-5 x 8224 bits
    assert ca["corrupted_packets"] == cb["corrupted_packets"]
    assert a["damaged"] == b["damaged"] and a["missing"] == b["missing"]
    assert len(a["damaged"]) + len(a["missing"]) <= ca["corrupted_packets"]
    assert (c["damaged"], c["missing"]) != (a["damaged"], a["missing"])
