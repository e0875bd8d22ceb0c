"""`satlab-phy --loop-bench --per-frame-esn0`: the PHY loop in the waveform mode of
`kind: dvbs2_waveform` (flowgraph at 40 dB, each frame's noise added by the loop up to --esn0)
from the command line. CI-sized: a few short frames. The mode's frame-error rates against the
PER table are checked in crates/dvbs2phy/tests/waveform_per.rs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RX = ROOT / "target" / "release" / "satlab-phy"


def waveform_bench(esn0: str) -> dict[str, object]:
    assert RX.exists(), f"{RX} is missing: cargo build --release"
    r = subprocess.run(
        [str(RX), "--loop-bench", "--per-frame-esn0", "--modcod", "4", "--frame", "short"]
        + ["--esn0", esn0, "--frames", "6"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    out: dict[str, object] = json.loads(r.stdout)
    assert out["per_frame_esn0"] is True and out["frames"] == 6
    return out


def test_the_loop_adds_the_frames_noise() -> None:
    # QPSK 1/2 short (waterfall at 0.2-0.5 dB): the flowgraph alone runs at 40 dB, so frames
    # fail at -3 dB only if the loop really adds their noise.
    assert waveform_bench("8")["ok"] == 6
    low = waveform_bench("-3")
    assert low["ok"] == 0 and low["ldpc_not_converged"] == 6


def test_per_frame_esn0_needs_the_loop_bench() -> None:
    r = subprocess.run(
        [str(RX), "--per-frame-esn0", "--check"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and "--loop-bench" in r.stderr
