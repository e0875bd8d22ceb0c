"""Whole runs through the real emulator: link utilisation, sampling, and a crashing agent."""

import json
import os
import signal
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from geo_path import geo_link

from satlab.scenario import expand_runs, parse_scenario
from satlab.testbed.runner import run_one

# The GEO-like path (geo_path.py), 10 Mbit/s both ways.
LINK = geo_link()


def scenario(**over: Any) -> dict[str, Any]:
    base = {
        "name": "t",
        "link": LINK,
        "duration_s": 10,
        "traffic": [{"kind": "bulk_tcp", "duration_s": 10}],
        "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
    }
    return {**base, **over}


def run(sc_dict: dict[str, Any]) -> dict[str, Any]:
    sc = parse_scenario(sc_dict)
    return run_one(sc, expand_runs(sc)[0])


def test_cubic_fills_a_geo_link_after_slow_start(emulator_bin: Path) -> None:
    res = run(scenario())
    assert res["status"] == "ok", res.get("error")
    fwd = [r for r in res["timeseries"]["link"] if r["direction"] == "forward"]
    useful = fwd[-1]["useful_rate_bps"]
    tcp = [s for s in res["timeseries"]["tcp"] if s["bytes_acked"]]
    after = [s for s in tcp if s["t"] >= 3.0]  # slow start at 270 ms RTT is over in about 2 s
    rate = (
        8 * (after[-1]["bytes_acked"] - after[0]["bytes_acked"]) / (after[-1]["t"] - after[0]["t"])
    )
    assert rate >= 0.85 * useful, f"{rate / 1e6:.2f} Mbit/s of {useful / 1e6:.2f} after slow start"
    flow = res["flows"][0]
    assert flow["bytes_received"] > 0 and flow["goodput_bps"] > 0.7 * useful


def test_samples_arrive_at_the_requested_period(emulator_bin: Path) -> None:
    res = run(
        scenario(sample_period_ms=50, duration_s=4, traffic=[{"kind": "bulk_tcp", "duration_s": 4}])
    )
    assert res["status"] == "ok", res.get("error")
    times = sorted({s["t"] for s in res["timeseries"]["tcp"]})
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) >= 0.8 * 4 / 0.05
    assert abs(statistics.median(gaps) - 0.05) < 0.01
    link_times = [r["t"] for r in res["timeseries"]["link"] if r["direction"] == "forward"]
    assert len(link_times) >= 0.8 * 4 / 0.05


def test_a_killed_agent_fails_the_run_with_its_reason(emulator_bin: Path, tmp_path: Path) -> None:
    import satlab.testbed.testbed as tbmod

    out: dict[str, Any] = {}
    th = threading.Thread(
        target=lambda: out.update(
            run(scenario(duration_s=20, traffic=[{"kind": "bulk_tcp", "duration_s": 20}]))
        )
    )
    th.start()
    deadline = time.monotonic() + 15
    pid = None
    while pid is None and time.monotonic() < deadline:  # the testbed's state names its agents
        for path in Path(tbmod.STATE_ROOT).glob("*/state.json"):
            try:
                state = json.loads(path.read_text())
            except FileNotFoundError:  # another process's testbed, closed since the listing
                continue
            if state["owner_pid"] == os.getpid():  # this test's testbed, not another process's
                pid = state["agents"].get("srv1")
        time.sleep(0.2)
    assert pid, "testbed never came up"
    time.sleep(3)
    os.kill(pid, signal.SIGKILL)
    th.join(60)
    assert out["status"] == "failed"
    assert "agent srv1 died" in out["error"]
    # What the dead agent had started (its sender) was ended with the testbed.
    assert not _group_members(pid), "the killed agent's programs outlived the testbed"


def _group_members(pgid: int) -> list[int]:
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def test_every_traffic_kind_is_measured(emulator_bin: Path) -> None:
    res = run(
        scenario(
            duration_s=8,
            hosts={"clients": 2},
            traffic=[
                {
                    "kind": "short_flows",
                    "count": 5,
                    "size_distribution": "fixed",
                    "mean_size_bytes": 20000,
                },
                {
                    "kind": "udp_onoff",
                    "rate_bps": 1e6,
                    "packet_bytes": 1000,
                    "mean_on_s": 1,
                    "mean_off_s": 0.5,
                    "client": 2,
                },
                {"kind": "bulk_tcp", "direction": "upload", "bytes": 200000, "parallel": 2},
            ],
        )
    )
    assert res["status"] == "ok", res.get("error")
    short, udp, upload = res["flows"]
    assert short["completed"] == 5 and short["bytes_received"] == 5 * 20000
    # Each object needs a handshake and the data: at least 1.5 round trips of 270 ms.
    assert all(0.4 < fct < 5 for fct in short["fct_s"])
    assert udp["packets_sent"] > 0 and udp["packets_received"] == udp["packets_sent"]
    assert upload["complete"] and upload["bytes_received"] == 200000 and upload["parallel"] == 2
    assert res["hosts"]["srv1"]["Tcp.InSegs"] > 0
