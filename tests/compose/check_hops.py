"""The compose smoke test's terrestrial-hop check: through the reverse proxy, a scenario with one
hop (`path.terrestrial`) and UDP cross traffic between that hop's cross hosts runs on the boxes
(the `hops` box builds the router, the hop's emulator and the cross hosts; the gw box moves
behind them), with and without the edge gateway spliced in. Checks that the servers' flow crossed
the hop and the satellite (its RTT holds both delays) and that the hop's emulator carried it and
the cross traffic (its counters). Exits non-zero with the reason.

    python3 tests/compose/check_hops.py URL TOKEN [--timeout S]
Standard library only (runs with any python3).
"""

from __future__ import annotations

from typing import Any

from check_experiment import Api, Fail
from parity import check_command

SAT_DELAY_MS, HOP_DELAY_MS = 250, 50
SCENARIO = f"""\
version: 1
name: compose-smoke-hops
description: Docker Compose smoke test, one terrestrial hop (tests/compose/check_hops.py)
seed: 12
duration_s: 5
sample_period_ms: 100
link:
  forward: {{kind: fixed, rate_bps: 4.0e6, delay_ms: {SAT_DELAY_MS}}}
  return: {{kind: fixed, rate_bps: 4.0e6, delay_ms: {SAT_DELAY_MS}}}
path:
  terrestrial:
    - {{delay_ms: {HOP_DELAY_MS}, rate_bps: 8.0e6, queue: {{limit_packets: 100}}, cross_hosts: 1}}
traffic:
  - {{kind: bulk_tcp, direction: download, duration_s: 5}}
  - {{kind: udp_cbr, hop: 1, rate_bps: 1.0e6, packet_bytes: 1000}}
configurations:
  - name: cubic
  - name: cubic-gateway  # the edge gateway spliced in at the gw box moved behind the hop
    gateway: {{egress: {{aqm: {{kind: drop_tail, limit_packets: 100}}}}}}
"""


def check_run(api: Api, doc: dict[str, Any]) -> None:
    run = f"run {doc['run_id']} {doc['configuration']}"
    tcp, udp = doc["flows"][0], doc["flows"][1]
    if not tcp.get("bytes_received", 0) > 0 or not udp.get("packets_received", 0) > 0:
        raise Fail(f"{run}: a flow carried nothing: {tcp} {udp}")
    # the servers' flow: both delays, both ways (no path past the hop)
    series = f"/api/runs/{doc['run_id']}/series"
    srtt = [
        b["min"]
        for n in [s["name"] for s in api.call("GET", series)]
        if n.startswith("tcp.") and n.endswith(".srtt_us")
        for b in api.call("GET", f"{series}/{n}")["buckets"]
        if b.get("min")
    ]
    floor_ms = 2 * (SAT_DELAY_MS + HOP_DELAY_MS)
    if not srtt or min(srtt) / 1e3 < floor_ms:
        raise Fail(f"{run}: the flow's smallest RTT {min(srtt or [0]) / 1e3} ms < {floor_ms}")
    # both flows crossed the hop (the cross hosts' one path is hop 1: x1c1 sits on the gw box's
    # side of it, so its traffic never reaches the satellite)
    hop = doc["hops"][0]["forward"]
    carried = tcp["bytes_received"] + udp["packets_received"] * 1000
    if hop["delivered_bytes"] < carried:
        raise Fail(f"{run}: hop 1 delivered {hop['delivered_bytes']} B < {carried} B")
    print(
        f"    {run}: goodput {tcp['goodput_bps'] / 1e6:.2f} Mbit/s, min RTT "
        f"{min(srtt) / 1e3:.0f} ms, cross traffic {udp['packets_received']} packets, hop 1 "
        f"{hop['delivered_packets']} packets",
        flush=True,
    )


if __name__ == "__main__":
    check_command(__doc__.splitlines()[0], SCENARIO, check_run, timeout_s=120.0)
