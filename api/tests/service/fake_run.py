"""A stand-in for the orchestrator on machines without the emulator binary: it returns a result
document in the satlab.run/1 shape (docs/run-result.md) with deterministic numbers, after an
optional sleep, calling progress like the runner does. Everything else (queue, worker, database)
is the real thing."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from satlab.scenario import RunSpec, Scenario

GOODPUT = {"cubic": 10e6, "bbr": 15e6, "reno": 8e6}


def result_doc(sc: Scenario, spec: RunSpec, delay_s: float = 0.0) -> dict[str, Any]:
    name = spec.configuration.name
    g = GOODPUT.get(name, 5e6) * (1 + 0.01 * spec.repetition)
    if isinstance(spec.sweep_value, float):
        g *= 1 - min(0.5, spec.sweep_value * 1e4)
    tcp = [
        {
            "t": t / 10,
            "host": "srv1",
            "sport": 40000 + k,
            "dport": 5001,
            "cc": name,
            "cwnd": 10 + t + k,
            "ssthresh": 100,
            "srtt_us": 550000,
            "rttvar_us": 1000,
            "retrans_total": 0,
            "delivery_rate_bps": g,
            "bytes_acked": (t + 1) * 1000 * (k + 1),
            "bytes_received": 0,
            "mss": 1448,
        }
        for t in range(30)
        for k in range(2)
    ]
    link = [
        {
            "t": t / 10,
            "direction": "forward",
            "modcod": {"id": 20 - (t // 10)},
            "esn0_db": 12.0,
            "attenuation_db": float(t % 10),
            "useful_rate_bps": 20e6,
            "queue_packets": t,
            "queue_bytes": 1500 * t,
            "counters": {},
        }
        for t in range(30)
    ]
    return {
        "schema": "satlab.run/1",
        "scenario": sc.name,
        "configuration": name,
        "sweep": {"path": sc.sweep.path, "value": spec.sweep_value} if sc.sweep else None,
        "repetition": spec.repetition,
        "seed": spec.seed,
        "inputs": {"scenario": sc.model_dump(mode="json"), "link": spec.link, "versions": {}},
        "status": "ok",
        "testbed_id": "fa4e",
        "started_at": time.time(),
        "setup_s": 1.0,
        "wall_s": sc.duration_s + 1.5 + delay_s,
        "t0_monotonic": 0.0,
        "flows": [
            {
                "kind": "bulk_tcp",
                "bytes_received": int(g / 8 * 2),
                "goodput_bps": g,
                "complete": True,
                "completion_s": 2.0 * 10e6 / g,
                "start_s": 0.0,
                "parallel": 2,
            }
        ],
        "hosts": {"srv1": {"Tcp.RetransSegs": 3 + spec.repetition}, "cli1": {"Tcp.RetransSegs": 0}},
        "link_events": {"forward.erased": 2},
        "artifacts": {},
        "timeseries": {"tcp": tcp, "link": link},
    }


def make_runner(
    delay_s: float = 0.0, fail: set[str] | None = None
) -> Callable[..., dict[str, Any]]:
    def runner(
        sc: Scenario, spec: RunSpec, progress: Callable[[float, str], None], artifacts: Path
    ) -> dict[str, Any]:
        steps = max(1, int(delay_s / 0.1))
        for i in range(steps):
            progress(i / steps, "1 flow(s) running")
            time.sleep(delay_s / steps)
        doc = result_doc(sc, spec, delay_s)
        if fail and spec.configuration.name in fail:
            doc["status"], doc["error"] = "failed", "agent srv1 died during the run (at t=1.0 s)"
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "srv1.pcap").write_bytes(b"\xd4\xc3\xb2\xa1" + b"\0" * 20)
        doc["artifacts"] = {"pcap.srv1": str(artifacts / "srv1.pcap")}
        return doc

    return runner
