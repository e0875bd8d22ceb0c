"""`satlab-phy --loop-bench`: the PHY loop (crates/dvbs2phy/src/phy_loop.rs) from the command line,
BBFRAMEs through the GNU Radio flowgraph (crates/dvbs2phy/gr/dvbs2_loop.py) over ZeroMQ and back
through the receiver. CI-sized: a few short frames (about 2 s). The loop's own tests (bit-exact
frames, erasures, dead flowgraph, SigMF) are crates/dvbs2phy/tests/phy_loop.rs."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RX = ROOT / "target" / "release" / "satlab-phy"


def bench(*args: str) -> subprocess.CompletedProcess[str]:
    assert RX.exists(), f"{RX} is missing: cargo build --release"
    return subprocess.run(
        [str(RX), "--loop-bench", *args], capture_output=True, text=True, timeout=120
    )


def test_loop_bench_prints_the_rates() -> None:
    r = bench("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12", "--frames", "8")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["label"] == "8PSK 3/5" and out["frames"] == 8
    assert out["ok"] == 8 and out["ldpc_not_converged"] == out["bch_failed"] == 0
    assert out["frames_per_s"] > 0 and out["decoder_frames_per_cpu_s"] > 0
    # Useful rate: the data field (K_bch - 80 = 9472 bits) of every frame over the wall time.
    assert abs(out["useful_mbit_per_s"] * 1e6 * out["wall_s"] - 8 * 9472) < 1


def test_loop_bench_refuses_what_it_cannot_run() -> None:
    r = bench("--modcod", "11", "--frame", "short", "--esn0", "5")
    assert r.returncode == 2
    assert "modcod 11 (QPSK 9/10) has no short frame" in r.stderr
    r = bench("--modcod", "4", "--frame", "short")
    assert r.returncode == 2 and "--esn0" in r.stderr


def test_loop_bench_over_the_rf_path() -> None:
    # The RF path (pulse shaping, timing recovery, carrier tracking) with a carrier offset:
    # every frame after the first (timing and carrier acquisition) comes back bit-exact.
    r = bench(
        *("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12", "--frames", "10"),
        *("--rf", "--sps", "4", "--rolloff", "0.25", "--freq-offset", "-0.002"),
        *("--clock-ppm", "-50"),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rf"] == {
        "sps": 4,
        "rolloff": 0.25,
        "freq_offset": -0.002,
        "fll_bandwidth": 0.0,
        "clock_ppm": -50.0,
    }
    assert out["ok"] >= 9 and out["residual_errors"] == 0
    assert 10.0 < out["mean_esn0_est_db"] < 12.5


def test_loop_bench_refuses_rf_settings_it_cannot_run() -> None:
    base = ("--modcod", "12", "--frame", "short", "--esn0", "12", "--rf")
    r = bench(*base)
    assert r.returncode == 2 and "--pilots" in r.stderr
    r = bench(*base, "--pilots", "--rolloff", "0.3")
    assert r.returncode == 2 and "0.3 is not one of 0.2, 0.25, 0.35" in r.stderr
    r = bench(*base, "--pilots", "--freq-offset", "0.05")
    assert r.returncode == 2 and "0.05 is outside [-0.01, 0.01]" in r.stderr


def test_loop_bench_finds_the_frames_after_an_underrun() -> None:
    # 16470 samples, 2.9 frames (8PSK 3/5 short with pilots: 5598 symbols), dropped from the
    # middle of the stream: the loop finds the next PLHEADER, the frames cut count as lost or
    # erased, every frame delivered is the one sent with its number (no residual error).
    r = bench(
        *("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12", "--frames", "20"),
        *("--in-flight", "20", "--underrun-at", "40000", "--underrun-samples", "16470"),
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["resyncs"] == 1 and out["residual_errors"] == 0
    assert out["ok"] + out["lost"] + out["ldpc_not_converged"] + out["bch_failed"] == 20
    assert 16 <= out["ok"] <= 17 and out["lost"] >= 2


def test_loop_bench_continuous_transmission_skips_the_dummy_frames() -> None:
    # 20 ms pauses between 8PSK 3/5 short frames (5.6 ms at 1 Mbaud): the flowgraph fills them
    # with dummy PLFRAMEs (3.3 ms each), which the loop skips; every frame comes back.
    base = ("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12", "--frames", "8")
    r = bench(*base, "--continuous", "1e6", "--pause-ms", "20")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["ok"] == 8 and out["lost"] == 0 and out["resyncs"] == 0
    assert out["dummies"] >= 1, out["dummies"]  # how many: the wall clock's (fewer when loaded)
    r = bench(*base, "--continuous", "10")
    assert r.returncode == 2 and "--continuous" in r.stderr and "[1000, 100000000]" in r.stderr


def test_loop_bench_refuses_an_empty_underrun() -> None:
    base = ("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12")
    r = bench(*base, "--underrun-at", "100", "--underrun-samples", "0")
    assert r.returncode != 0 and "underrun.samples 0 is outside [1, 1e7]" in r.stderr
    r = bench(*base, "--underrun-at", "100")
    assert r.returncode == 2 and "--underrun-samples" in r.stderr


def test_loop_bench_refuses_an_sdr_that_is_not_there() -> None:
    # No SoapySDR device module on this machine: the flowgraph exits at once, and the error
    # names the device arguments. Nothing is transmitted.
    base = ("--modcod", "12", "--frame", "short", "--pilots", "--esn0", "12", "--rf")
    sdr = ("--sdr-tx", "driver=satlab-absent-tx", "--sdr-rx", "driver=satlab-absent-rx")
    r = bench(*base, *sdr, "--center-freq-hz", "1.2e9")
    assert r.returncode != 0
    assert "--sdr-tx 'driver=satlab-absent-tx': no SoapySDR device opened" in r.stderr
    r = bench(*base, *sdr, "--center-freq-hz", "7e9")
    assert r.returncode != 0 and "rf.sdr.center_freq_hz 7000000000 is outside" in r.stderr
    r = bench(*base, "--sdr-tx", "driver=x", "--center-freq-hz", "1e9")
    assert r.returncode == 2 and "--sdr-rx" in r.stderr
