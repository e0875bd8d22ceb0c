"""Expectations computed from the link configuration: DVB-S2 frame times and GSE overhead.

These mirror the emulator's documented framing (emulator/CONFIG.md); where a test needs the
emulator's own figure (the useful rate) it reads it from GET /status instead of recomputing it.

This is a test oracle, a second implementation on purpose: written from the standards (EN 302 307-1,
the GSE framing) and the documentation, not from the emulator's code. Keep it independent of the
product's own tables and arithmetic (crates/linkmodel, api/satlab): a mistake the two shared would
pass unseen. Its likeness to them is expected.
"""

from __future__ import annotations

import math
from typing import Any

BITS_PER_SYMBOL = {"BPSK": 1, "PI/2BPSK": 1, "QPSK": 2, "8PSK": 3, "16APSK": 4, "32APSK": 5}
ETH_HEADER = 14
UDP_IP_HEADERS = 28


def modulation_of(modcod: dict[str, Any]) -> str:
    """'32APSK' from a status modcod object ({'name': '32APSK 9/10', ...})."""
    name = str(modcod["name"]).upper().replace("_", " ").replace("-", " ")
    for mod in sorted(BITS_PER_SYMBOL, key=len, reverse=True):
        if name.startswith(mod):
            return mod
    raise ValueError(f"unknown modulation in {modcod['name']!r}")


def plframe_symbols(modulation: str, frame: str = "normal", pilots: bool = True) -> int:
    """Symbols of one DVB-S2 PLFRAME: PLHEADER (90) + XFECFRAME + pilot blocks (36 symbols after
    every 16 slots of 90 symbols, none after the last slot)."""
    nbits = 64800 if frame == "normal" else 16200
    data = nbits // BITS_PER_SYMBOL[modulation]
    slots = data // 90
    pilot_blocks = (slots - 1) // 16 if pilots else 0
    return 90 + data + 36 * pilot_blocks


def frame_time_s(modcod: dict[str, Any], symbol_rate_baud: float, pilots: bool = True) -> float:
    return plframe_symbols(modulation_of(modcod), "normal", pilots) / symbol_rate_baud


def gse_overhead_bytes(label_bytes: int = 3) -> int:
    """GSE header of an unfragmented PDU: 2 (S/E/LT/length) + 2 (protocol type) + label."""
    return 2 + 2 + label_bytes


def expected_l2_rate(
    useful_rate_bps: float, frame_len: int, label_bytes: int = 3, frame_time: float | None = None
) -> float:
    """Ethernet-frame bits/s the link delivers when saturated with frames of frame_len bytes: the
    BBFrame data-field rate times the share of it that is PDU. Every packet costs a complete GSE
    header (4 + label bytes); with frame_time (one PLFRAME, s) given, the packet split across each
    frame boundary costs the fragment headers too (first 7 + label, last 3 + CRC 4, less the
    complete header it replaces: +10 bytes per frame; framing.rs)."""
    per_packet = frame_len + gse_overhead_bytes(label_bytes)
    share = frame_len / per_packet
    if frame_time is not None:
        data_field = useful_rate_bps * frame_time / 8
        if data_field % per_packet:
            share *= 1 - 10 / data_field
    return useful_rate_bps * share


def db_to_lin(db: float) -> float:
    return float(10 ** (db / 10))


def total_cn_db(up_db: float, down_db: float) -> float:
    """OpenSAND: C/N total = 1 / (1/CN_up + 1/CN_down) in linear terms."""
    return 10 * math.log10(1 / (1 / db_to_lin(up_db) + 1 / db_to_lin(down_db)))


# EN 302 307-1 Table 13: id -> (name, efficiency, required Es/N0 dB)
DVBS2_TABLE: dict[int, tuple[str, float, float]] = {
    1: ("QPSK 1/4", 0.490243, -2.35), 2: ("QPSK 1/3", 0.656448, -1.24),
    3: ("QPSK 2/5", 0.789412, -0.30), 4: ("QPSK 1/2", 0.988858, 1.00),
    5: ("QPSK 3/5", 1.188304, 2.23), 6: ("QPSK 2/3", 1.322253, 3.10),
    7: ("QPSK 3/4", 1.487473, 4.03), 8: ("QPSK 4/5", 1.587196, 4.68),
    9: ("QPSK 5/6", 1.654663, 5.18), 10: ("QPSK 8/9", 1.766451, 6.20),
    11: ("QPSK 9/10", 1.788612, 6.42), 12: ("8PSK 3/5", 1.779991, 5.50),
    13: ("8PSK 2/3", 1.980636, 6.62), 14: ("8PSK 3/4", 2.228124, 7.91),
    15: ("8PSK 5/6", 2.478562, 9.35), 16: ("8PSK 8/9", 2.646012, 10.69),
    17: ("8PSK 9/10", 2.679207, 10.98), 18: ("16APSK 2/3", 2.637201, 8.97),
    19: ("16APSK 3/4", 2.966728, 10.21), 20: ("16APSK 4/5", 3.165623, 11.03),
    21: ("16APSK 5/6", 3.300184, 11.61), 22: ("16APSK 8/9", 3.523143, 12.89),
    23: ("16APSK 9/10", 3.567342, 13.13), 24: ("32APSK 3/4", 3.703295, 12.73),
    25: ("32APSK 4/5", 3.951571, 13.64), 26: ("32APSK 5/6", 4.119540, 14.28),
    27: ("32APSK 8/9", 4.397854, 15.69), 28: ("32APSK 9/10", 4.453027, 16.05),
}  # fmt: skip


def opensand_modcod(cn_db: float, margin_db: float = 0.0) -> int:
    """OpenSAND's rule: the MODCOD with the highest required Es/N0 <= C/N - margin."""
    ok = [(esn0, i) for i, (_, _, esn0) in DVBS2_TABLE.items() if esn0 <= cn_db - margin_db]
    return max(ok)[1]
