"""Emulator configurations for the integration tests (kept out of conftest.py so that test modules
can import them by a name no other test directory uses)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netns import Emulator


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def base_config(tmp: Path) -> dict[str, Any]:
    """A small, fast link: forward DVB-S2 ACM at 2 Msym/s (about 8.6 Mbit/s at 32APSK 9/10 with
    pilots), clear sky 20 dB up and down (16.99 dB total -> MODCOD 28), return RCS2 defaults."""
    return {
        "seed": 1,
        "ports": {
            "gw": {"kind": "af_packet", "interface": "egw"},
            "st": {"kind": "af_packet", "interface": "est"},
        },
        "telemetry": {"socket": str(tmp / "telemetry.sock"), "period_ms": 100, "events": "losses"},
        "control": {"listen": "127.0.0.1:8781"},
        "forward": {
            "delay_ms": 250.0,
            "symbol_rate_baud": 2.0e6,
            "acm": {"mode": "acm", "refresh_ms": 100, "margin_db": 0.0},
            "queue": {"limit_packets": 200, "limit_bytes": 400_000},
        },
        "return": {"delay_ms": 250.0},
    }


# A fast fixed-rate link with a short delay, both ways, for the tests of what crosses the ports
# (they then take seconds): emulator(**FAST_LINK).
_FAST = {
    "kind": "fixed",
    "rate_bps": 1.0e9,
    "delay_ms": 5.0,
    "queue": {"limit_packets": 20000, "limit_bytes": 30_000_000},
}
FAST_LINK: dict[str, Any] = {"forward": _FAST, "return": _FAST}

EmulatorFactory = Callable[..., Emulator]
