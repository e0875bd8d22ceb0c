"""Gateway benchmark (issue 5, "Benchmark"): TCP throughput (iperf3, one run each) through the
emulated link with the gateway spliced in at both edges, as a ratio to the emulator alone, on the
same link. Prints a table and optionally writes JSON.

Configurations, for each link:
  emulator alone            routers' sat0 cabled straight to the emulator
  gateway, unpaced          both edges forward at line rate (the bump's forwarding cost)
  gateway, paced (0.97)     the production mode: egress paced at 0.97 x the telemetry useful rate,
                            so the bottleneck queue is the gateway's (ratio ~0.97 by design)

Each configuration also offers UDP (1400-byte datagrams) at 1.5 x the link rate for 4 s: the rate
delivered shows what the chain forwards when saturated.

Links: "geo"  DVB-S2 40 Msym/s 32APSK 9/10 (~174 Mbit/s useful), 20 ms one way each direction;
       "fast" fixed 1 Gbit/s, 5 ms one way (stresses the forwarding path).
Offloads are off on every veth (per-packet work on real packet sizes), as in the other tiers.

Usage: .venv/bin/python tests/bench/gateway_bench.py [--seconds 6] [--json FILE] [--links geo,fast]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gateway"))

from gwnet import CLI, Topology, sweep_stale  # noqa: E402

LINKS: dict[str, dict[str, Any]] = {
    "geo": {
        "forward": {"delay_ms": 20.0, "symbol_rate_baud": 40e6},
        "return": {"delay_ms": 20.0, "symbol_rate_baud": 4e6},
    },
    "fast": {
        "forward": {"delay_ms": 5.0, "kind": "fixed", "rate_bps": 1e9},
        "return": {"delay_ms": 5.0, "kind": "fixed", "rate_bps": 1e9},
    },
}


def cpu_seconds(pid: int) -> float:
    import os

    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def child_pid(p: subprocess.Popen[bytes]) -> int:
    """The PID of the program `ip netns exec` runs (it execs, so the same PID)."""
    return p.pid


@contextlib.contextmanager
def iperf3_server(t: Topology, log: str) -> Iterator[None]:
    """A one-shot iperf3 server in the client host (the data flows srv -> cli, forward) for
    the duration, its output in t.work/`log`."""
    srv = t.spawn("cli", ["iperf3", "-s", "-1"], t.work / log)
    time.sleep(0.5)
    try:
        yield
    finally:
        t.stop(srv)


def iperf3_client(t: Topology, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """An iperf3 client in the server host against iperf3_server, JSON out."""
    cmd = ["ip", "netns", "exec", t.ns("srv"), "iperf3", "-c", CLI, *args, "-J"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def run_one(link: str, mode: str, seconds: float) -> dict[str, Any]:
    with Topology(gateway=mode != "emulator") as t:
        over = dict(LINKS[link])
        over["telemetry"] = {"events": "losses"}
        over["forward"] = {
            **over["forward"],
            "queue": {"limit_packets": 2000, "limit_bytes": 3_000_000},
        }
        t.start_emulator(t.emulator_config(**over))
        gws = []
        if mode != "emulator":
            for role in ("gw", "st"):
                egress: dict[str, Any] = {"aqm": {"limit_packets": 2000, "limit_bytes": 3_000_000}}
                cfg = t.gateway_config(role, egress=egress)
                if mode == "unpaced":
                    cfg.pop("telemetry")  # no telemetry: line rate
                gws.append(t.start_gateway(cfg))
            time.sleep(0.5)
        with iperf3_server(t, "iperf3-s.log"):
            cpu0 = [cpu_seconds(child_pid(g)) for g in gws]
            r = iperf3_client(t, "-t", str(seconds), "-O", "2", timeout=seconds + 30)
            cpu1 = [cpu_seconds(child_pid(g)) for g in gws]
        if r.returncode != 0:
            raise RuntimeError(f"iperf3 failed: {r.stdout[-2000:]} {r.stderr[-2000:]}")
        j = json.loads(r.stdout)
        bps = j["end"]["sum_received"]["bits_per_second"]
        retr = j["end"]["sum_sent"].get("retransmits", 0)
        # UDP at 1.5 x the link rate, 1400-byte datagrams: what the chain delivers when saturated
        offered = 1.5 * (174e6 if link == "geo" else 1e9)
        with iperf3_server(t, "iperf3-su.log"):
            u = iperf3_client(t, "-u", "-b", str(int(offered)), "-l", "1400", "-t", "4", timeout=40)
        udp_bps = (
            json.loads(u.stdout)["end"]["sum"]["bits_per_second"] if u.returncode == 0 else 0.0
        )
        udp_rx = json.loads(u.stdout)["end"]["sum"] if u.returncode == 0 else {}
        lost = udp_rx.get("lost_percent", 100.0)
        return {
            "link": link,
            "mode": mode,
            "goodput_bps": bps,
            "retransmits": retr,
            "udp_offered_bps": offered,
            "udp_received_bps": udp_bps * (1 - lost / 100),
            "gateway_cpu_s_per_s": [(b - a) / seconds for a, b in zip(cpu0, cpu1, strict=True)],
        }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--links", default="geo,fast")
    a = ap.parse_args()
    sweep_stale()
    rows = []
    for link in a.links.split(","):
        base = None
        base_udp = 0.0
        for mode in ("emulator", "unpaced", "paced"):
            row = run_one(link, mode, a.seconds)
            if mode == "emulator":
                base = row["goodput_bps"]
            row["ratio"] = row["goodput_bps"] / base if base else None
            if mode == "emulator":
                base_udp = row["udp_received_bps"]
            row["udp_ratio"] = row["udp_received_bps"] / base_udp if base_udp else None
            rows.append(row)
            cpu = ", ".join(f"{c:.2f}" for c in row["gateway_cpu_s_per_s"]) or "-"
            print(
                f"{link:5s} {mode:9s} goodput {row['goodput_bps'] / 1e6:8.1f} Mbit/s  "
                f"ratio {row['ratio']:.3f}  retransmits {row['retransmits']:5d}  "
                f"UDP {row['udp_received_bps'] / 1e6:7.1f} Mbit/s ratio {row['udp_ratio']:.3f}  "
                f"gateway CPU s/s [{cpu}]",
                flush=True,
            )
    if a.json:
        a.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
