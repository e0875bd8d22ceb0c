"""The GEO-like path of the whole-run tests (test_runs, test_traffic_times): 135 ms each way =
270 ms RTT, and a 10 Mbit/s fixed-rate forward link whose queue holds one bandwidth-delay product
(10 Mbit/s x 0.27 s = 338 kB; 300 packets, 0.36 s at 10 Mbit/s), enough for Reno-style sawtooth."""

from __future__ import annotations

from typing import Any


def geo_link(return_rate_bps: float = 10e6) -> dict[str, Any]:
    """The path's scenario `link:`, with a fixed-rate return link of `return_rate_bps`."""
    return {
        "forward": {
            "kind": "fixed",
            "rate_bps": 10e6,
            "delay_ms": 135,
            "queue": {"limit_packets": 300, "limit_bytes": 450000},
        },
        "return": {"kind": "fixed", "rate_bps": return_rate_bps, "delay_ms": 135},
    }
