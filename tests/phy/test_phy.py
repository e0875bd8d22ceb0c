"""The DVB-S2 waveform chain end to end: GNU Radio's gr-dtv transmitter and gr-channels AWGN
(emulator/phy/dvbs2_tx.py, Debian's /usr/bin/python3) -> the Rust receiver (satlab-phy) ->
`satlab phy calibrate` -> a PER table the emulator's configuration check accepts.
CI-sized: short frames, a handful per point (about 15 s in all)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from satlab.phy import calibrate as cal

ROOT = Path(__file__).resolve().parents[2]
TX = ROOT / "emulator" / "phy" / "dvbs2_tx.py"
RX = ROOT / "target" / "release" / "satlab-phy"
EMULATOR = ROOT / "target" / "release" / "satlab-emulator"


@pytest.fixture(scope="module", autouse=True)
def prerequisites() -> None:
    r = subprocess.run(
        ["/usr/bin/python3", "-c", "from gnuradio import dtv, channels"], capture_output=True
    )
    assert r.returncode == 0, (
        f"Debian's gnuradio is not importable (scripts/setup.sh installs it): {r.stderr!r}"
    )
    for b in (RX, EMULATOR):
        assert b.exists(), f"{b} is missing: cargo build --release"


def tx_rx(
    tmp: Path, modcod: int, esn0: float, frames: int, *extra_tx: str, pilots: bool = True
) -> list[dict]:
    iq, ref = tmp / "rx.iq", tmp / "ref.bin"
    p = ["--pilots"] if pilots else []
    subprocess.run(
        [
            "/usr/bin/python3",
            str(TX),
            "--modcod",
            str(modcod),
            "--frame",
            "short",
            "--esn0",
            str(esn0),
        ]
        + ["--frames", str(frames), "--seed", "3", "--out-iq", str(iq), "--out-ref", str(ref)]
        + p
        + list(extra_tx),
        check=True,
        capture_output=True,
    )
    # No --esn0: the receiver estimates the noise from the PLHEADER and pilots.
    r = subprocess.run(
        [str(RX), "--modcod", str(modcod), "--frame", "short", "--iq", str(iq), "--ref", str(ref)]
        + p,
        check=True,
        capture_output=True,
        text=True,
    )
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_round_trip_high_esn0_decodes_every_frame(tmp_path: Path) -> None:
    # 8PSK 3/5: the one interleaver read in reverse column order; pilots; a carrier frequency
    # offset and phase noise the pilot-aided tracking must follow.
    out = tx_rx(tmp_path, 12, 12.0, 6, "--freq-offset", "5e-5", "--phase-noise", "0.02")
    frames, summary = out[:-1], out[-1]
    assert summary["frames"] == 6 and len(frames) == 6
    assert all(f["ok"] and f["ldpc_ok"] and f["bit_errors"] == 0 for f in frames), frames
    assert summary["frame_errors"] == 0
    # The Es/N0 the receiver estimates from known symbols is the one the channel was set to.
    est = sum(f["esn0_est_db"] for f in frames) / len(frames)
    assert abs(est - 12.0) < 1.0, est


def test_round_trip_low_esn0_fails(tmp_path: Path) -> None:
    # 3 dB under 8PSK 3/5's EN 302 307-1 Table 13 QEF Es/N0 (5.50 dB): every frame lost.
    out = tx_rx(tmp_path, 12, 2.5, 4)
    frames = out[:-1]
    assert len(frames) == 4 and not any(f["ok"] for f in frames), frames
    assert out[-1]["per"] == 1.0


def test_tiny_calibration_makes_a_table_the_emulator_accepts(tmp_path: Path) -> None:
    table = tmp_path / "per-short.csv"
    logs: list[str] = []
    # Probed with 2 frames a point up to the first without error (2 dB), then 6 frames a point
    # from the point before it (-1 dB) on.
    pts = cal.calibrate(
        [4], "short", False, [-1.0, 2.0], False, 6, table, command="test", probe_frames=2,
        log=logs.append,
    )  # fmt: skip
    assert [m.split(" dB: ")[1].split(",")[0] for m in logs] == [
        "PER 1 (2/2",
        "PER 0 (0/2",
        "PER 1 (6/6",
        "PER 0 (0/6",
    ], logs
    by_esn0 = {r["esn0_db"]: r for r in pts}
    assert by_esn0[-1.0]["errors"] == 6 and by_esn0[2.0]["errors"] == 0, pts
    text = table.read_text()
    assert "# command: test" in text and "frames per point: 6 (2 above" in text
    assert "4,-1.00,1  # QPSK 1/2: 6/6 frames, 95% CI [0.541, 1]" in text, text
    assert "4,2.00,0  # QPSK 1/2: 0/6 frames, 95% CI [0, 0.459]" in text, text
    link = tmp_path / "link.yaml"
    link.write_text(f"forward:\n  kind: dvbs2\n  frame: short\n  per_table: {table.name}\n")
    r = subprocess.run(
        [str(EMULATOR), "--config", str(link), "--check"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    # The check really reads the table: a PER above 1 is refused, naming the file and line.
    bad = tmp_path / "bad.csv"
    bad.write_text(text.replace("4,-1.00,1 ", "4,-1.00,1.5 "))
    link.write_text(f"forward:\n  kind: dvbs2\n  per_table: {bad.name}\n")
    r = subprocess.run(
        [str(EMULATOR), "--config", str(link), "--check"], capture_output=True, text=True
    )
    assert (
        r.returncode == 2
        and "bad.csv" in r.stderr + r.stdout
        and "outside [0, 1]" in r.stderr + r.stdout
    )
    # Resumed: a second run finds both points done and simulates nothing.
    logs.clear()
    cal.calibrate(
        [4], "short", False, [-1.0, 2.0], False, 6, table, command="test", probe_frames=2,
        log=logs.append,
    )  # fmt: skip
    assert len(logs) == 4 and all("done before" in m for m in logs), logs


def test_clopper_pearson() -> None:
    lo, hi = cal.clopper_pearson(0, 100)
    assert lo == 0.0 and abs(hi - 0.0362) < 1e-4
    lo, hi = cal.clopper_pearson(5, 100)
    assert abs(lo - 0.0164) < 1e-4 and abs(hi - 0.1128) < 1e-4


def test_cli_rejects_bad_ranges(tmp_path: Path) -> None:
    def refused(*extra: str) -> str:
        """`satlab phy calibrate` with `extra` arguments: exit 2; returns its output."""
        args = ["--frames", "5", "--out", str(tmp_path / "t.csv"), *extra]
        r = subprocess.run(
            [sys.executable, "-m", "satlab.cli", "phy", "calibrate", *args],
            capture_output=True,
            text=True,
            cwd=ROOT / "api",
        )
        assert r.returncode == 2, r.stdout + r.stderr
        return r.stdout

    assert "--esn0 stop 0.0 is below start 1.0" in refused("--modcod", "4", "--esn0=1:0:0.1")
    assert "--modcod 29 is outside [1, 28]" in refused("--modcod", "29", "--esn0=0:1:0.5")
    # The receiver owns the decoder options' limits (satlab-phy --check): its refusal names
    # the option and the limit.
    out = refused("--modcod", "4", "--esn0=0:1:0.5", "--minsum-offset", "3")
    assert "'--minsum-offset <B>': 3 is outside [0, 2]" in out, out
    out = refused("--modcod", "4", "--esn0=0:1:0.5", "--max-iterations", "0")
    assert "'--max-iterations <N>': 0 is not in 1..=1000" in out, out


def test_decoders_meet_the_same_frames_and_keep_their_own_points() -> None:
    ours = cal.Point(4, "short", False, 1.0, 50)
    ref = cal.Point(4, "short", False, 1.0, 50, cal.Decoder("HLTanhf32"))
    assert ours.key() == "4/short/nopilots/1.0000/minsum-s1-o0.4x50"
    assert ref.key() == "4/short/nopilots/1.0000/HLTanhf32x50"
    assert [ours.seed(b) for b in range(3)] == [ref.seed(b) for b in range(3)]
    assert ours.seed(0) != ours.seed(1)


def test_receiver_refuses_an_unknown_decoder(tmp_path: Path) -> None:
    iq, ref = tmp_path / "rx.iq", tmp_path / "ref.bin"
    iq.write_bytes(b"")
    ref.write_bytes(b"")
    r = subprocess.run(
        [str(RX), "--modcod", "4", "--frame", "short", "--iq", str(iq), "--ref", str(ref)]
        + ["--decoder", "Fastest"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 2 and '--decoder "Fastest" is neither minsum' in r.stderr, r.stderr
    # The same refusal before a calibration starts, naming the option.
    with pytest.raises(cal.CalibrationError, match='--decoder "Fastest" is neither minsum'):
        cal.check_decoder(cal.Decoder("Fastest"), 50)
