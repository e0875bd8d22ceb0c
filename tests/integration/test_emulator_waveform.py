"""PHY in the loop (issue 21): a forward link of `kind: dvbs2_waveform`, whose every BBFRAME is
encoded by GNU Radio's DVB-S2 transmitter, given AWGN at the link's Es/N0 and decoded by the
project's receiver (emulator/CONFIG.md, "PHY in the loop").

Topology (netns.py, l2 mode): gw-host -- [egw | satlab-emulator | est] -- st-host. Es/N0 is set by
the downlink's clear-sky C/N, the uplink's at 60 dB (it adds 0.0001 dB of noise): frames meet
the Es/N0 asked for.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from emuconfig import EmulatorFactory, base_config
from netns import EMULATOR_BIN, Topology
from traffic import send_udp, tcp_transfer, udp_receiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

PER_TABLE = Path(__file__).resolve().parents[2] / "crates/linkmodel/src/data/per/dvbs2-short.csv"
# z of a two-sided 99.9 % interval: each comparison fails by chance once in a thousand runs.
Z = 3.29


def waveform_link(esn0_db: float, modcod: int, symbol_rate: float, pilots: bool) -> dict[str, Any]:
    """A forward dvbs2_waveform link, CCM, short frames, 50 ms each way, at `esn0_db`."""
    return {
        "kind": "dvbs2_waveform",
        "symbol_rate_baud": symbol_rate,
        "frame": "short",
        "pilots": pilots,
        "delay_ms": 50.0,
        "acm": {"mode": "ccm", "modcod": modcod},
        "uplink": {"clear_sky_db": 60.0},
        "downlink": {"clear_sky_db": esn0_db},
    }


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson score interval of k frame errors in n frames."""
    p = k / n
    d = 1 + Z * Z / n
    c = (p + Z * Z / (2 * n)) / d
    h = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / d
    return max(c - h, 0.0), min(c + h, 1.0)


def table_counts(modcod: int, esn0_db: float) -> tuple[int, int]:
    """(frame errors, frames) of the calibrated table's row, from its comment ("39/100 frames")."""
    key = f"{modcod},{esn0_db:.2f},"
    for line in PER_TABLE.read_text().splitlines():
        if line.startswith(key):
            words = line.split()
            k, n = words[words.index("frames,") - 1].split("/")
            return int(k), int(n)
    raise AssertionError(f"no row {key} in {PER_TABLE}")


# ---------------------------------------------------------------------------------------------
def test_tcp_runs_end_to_end_over_the_decoder(topo: Topology, emulator: EmulatorFactory) -> None:
    """A 300 kB TCP transfer over CCM QPSK 1/2 short frames at 1 Mbaud (122 frames/s, 0.85
    Mbit/s useful), 17 dB: every frame decodes, the data arrives byte-exact."""
    emu = emulator(
        forward={**waveform_link(17.0, 4, 1.0e6, True), "queue": {"limit_packets": 400}},
        **{"return": {"delay_ms": 50.0}},
    )
    res = tcp_transfer(topo, topo.gw, topo.st, topo.st_ip, 300_000)
    fwd = emu.status()["forward"]
    print(f"TCP: {res.received} bytes in {res.seconds:.2f} s; forward {fwd['counters']}")
    assert res.received == res.sent == 300_000
    assert res.received_sha256 == res.sent_sha256
    assert fwd["modcod"]["id"] == 4
    assert fwd["counters"]["frame_erasures"] == 0
    assert fwd["counters"]["delivered_packets"] > 200


# ---------------------------------------------------------------------------------------------
def test_frame_error_rates_at_two_esn0_values_agree_with_the_calibrated_table(
    topo: Topology, emulator: EmulatorFactory
) -> None:
    """QPSK 1/4 short frames without pilots (the calibration's settings) at -3.45 dB (mid
    waterfall, 39/100 in crates/linkmodel/src/data/per/dvbs2-short.csv) and -3.25 dB (its foot,
    100/2000). One 320-byte UDP payload per frame: a frame holds 374 data bytes, the packet's
    GSE packet 369, and the 5 bytes left cannot start a fragment of the next (the first-fragment
    header alone is 10), so each frame carries one whole packet and a lost packet is an erased
    frame (100 packets/s, 244 frames/s at 2 Mbaud). 300 frames per point; the measured and the
    table's 99.9 % Wilson intervals must overlap."""
    n = 300
    for esn0 in (-3.45, -3.25):
        emu = emulator(
            forward=waveform_link(esn0, 1, 2.0e6, False), **{"return": {"delay_ms": 50.0}}
        )
        try:
            st = emu.status()["forward"]
            assert abs(st["esn0_db"] - esn0) < 0.01, st["esn0_db"]
            with udp_receiver(topo, topo.st, port=5001) as rx:
                sent = send_udp(topo, topo.gw, topo.st_ip, 5001, n, 320, rate_bps=100 * 348 * 8)
                # The last packets are 50 ms and a frame away.
                rx.wait_idle(idle_s=0.5, timeout=5.0)
                got = len({a.seq for a in rx.arrivals if a.seq >= 0})
            c = emu.status()["forward"]["counters"]
        finally:
            emu.stop()
        errors = sent - got
        tk, tn = table_counts(1, esn0)
        lo, hi = wilson(errors, sent)
        tlo, thi = wilson(tk, tn)
        print(
            f"QPSK 1/4 short at {esn0} dB: emulator {errors}/{sent} [{lo:.3f}, {hi:.3f}], "
            f"table {tk}/{tn} [{tlo:.3f}, {thi:.3f}]; counters {c}"
        )
        assert c["queue_drops"] == 0 and c["erased_packets"] == c["frame_erasures"], c
        assert lo <= thi and tlo <= hi, (esn0, errors, sent, tk, tn)


# ---------------------------------------------------------------------------------------------
def test_a_symbol_rate_above_the_decoders_ceiling_is_refused(tmp_path: Path) -> None:
    """`--check` refuses a waveform link whose frames come faster than the decoder sustains:
    the error names forward.symbol_rate_baud and the highest rate allowed (exit status 2)."""
    cfg = base_config(tmp_path)
    cfg["forward"] = waveform_link(10.0, 4, 10.0e6, True)
    path = tmp_path / "emulator.yaml"
    path.write_text(yaml.safe_dump(cfg))
    p = subprocess.run(
        [str(EMULATOR_BIN), "--config", str(path), "--check"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert p.returncode == 2, p.stderr
    assert "forward.symbol_rate_baud: 10000000 baud with QPSK 1/2" in p.stderr, p.stderr
    assert "at most 2192940 baud" in p.stderr, p.stderr


# ---------------------------------------------------------------------------------------------
def rf_link(esn0_db: float, symbol_rate: float) -> dict[str, Any]:
    """The waveform link of QPSK 1/2 short frames with pilots over the RF path (RRC at 4 samples
    per symbol, roll-off 0.2, a carrier offset of 2e-3 cycles per symbol, timing recovery)."""
    return {
        **waveform_link(esn0_db, 4, symbol_rate, True),
        "roll_off": 0.2,
        "waveform": {"path": "rf", "freq_offset": 0.002},
    }


def test_udp_crosses_the_rf_path(topo: Topology, emulator: EmulatorFactory) -> None:
    """60 UDP payloads of 1000 bytes over the RF path at 15 dB, 400 kbaud (48 frames/s, below
    the RF path's ceiling of 98.3 short QPSK frames/s): every one arrives, no frame erased."""
    emu = emulator(forward=rf_link(15.0, 4.0e5), **{"return": {"delay_ms": 50.0}})
    with udp_receiver(topo, topo.st, port=5001) as rx:
        sent = send_udp(topo, topo.gw, topo.st_ip, 5001, 60, 1000, rate_bps=200_000)
        rx.wait_idle(idle_s=0.5, timeout=5.0)
        got = len({a.seq for a in rx.arrivals if a.seq >= 0})
    c = emu.status()["forward"]["counters"]
    print(f"RF path: {got}/{sent} received; forward {c}")
    assert got == sent == 60
    assert c["frame_erasures"] == 0, c


def check_config(tmp_path: Path, forward: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`satlab-emulator --check` of base_config with `forward`."""
    cfg = base_config(tmp_path)
    cfg["forward"] = forward
    path = tmp_path / "emulator.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return subprocess.run(
        [str(EMULATOR_BIN), "--config", str(path), "--check"],
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_the_rf_paths_settings_and_ceiling_are_checked(tmp_path: Path) -> None:
    """On the RF path the ceiling is lower (1 Mbaud passes the symbol-level check, not the RF
    path's), and a setting out of range is refused naming the field and the limit."""
    p = check_config(tmp_path, rf_link(10.0, 1.0e6))
    assert p.returncode == 2, p.stderr
    assert "forward.symbol_rate_baud: 1000000 baud with QPSK 1/2" in p.stderr, p.stderr
    assert "on the RF path (at most 822771 baud)" in p.stderr, p.stderr
    bad = {**rf_link(10.0, 4.0e5), "waveform": {"path": "rf", "sps": 32}}
    p = check_config(tmp_path, bad)
    assert p.returncode == 2, p.stderr
    assert "forward.waveform.sps: value 32 is outside the allowed range [2, 16]" in p.stderr
    assert check_config(tmp_path, rf_link(10.0, 4.0e5)).returncode == 0
