"""`satlab trace synth` (satlab.weather): the emulator's trace format, deep fades as outages that
the emulator accepts, determinism, the site statistics, clouds and scintillation.

Long-series statistics use a tick much longer than the processes' correlation times (as
test_raintrace.py does): the synthesis is exact at any tick, so the marginal distribution is the
one of a 1 s trace while successive samples are nearly independent.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import signal, stats

from satlab import cli, raintrace, weather
from satlab.linkcheck import check_link
from satlab.service import files

TOULOUSE = weather.Site(43.6, 1.44, 20.0, 35.0)
# Tropical Ka band: P.618 gives ~100 dB at 0.01 % and ~250 dB at 0.001 % (P.1853 extrapolates
# the lognormal beyond).
SINGAPORE_30GHZ = weather.Site(1.35, 103.8, 30.0, 30.0)


def run_cli(args: list[str]) -> int:
    with pytest.raises(SystemExit) as ex:
        cli.main(["trace", "synth", *args])
    return int(ex.value.code or 0)


def test_cli_writes_an_emulator_trace_and_the_statistics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fade.txt"
    site = ["--lat", "43.6", "--lon", "1.44", "--freq", "20", "--elevation", "35"]
    code = run_cli([*site, "--duration", "600", "--seed", "5", "--step", "100", "-o", str(out)])
    assert code == 0
    ticks, vals = raintrace.read_trace(out)
    assert list(ticks) == list(range(6001))
    text = out.read_text()
    assert "# columns: <tick> <attenuation dB>; tick = 100 ms" in text
    assert "clamped to it: 0 tick(s)" in text
    err = capsys.readouterr().err
    assert "P.618 rain dB" in err and "P.837 R0.01" in err
    # the same inputs give the same file, byte for byte
    again = tmp_path / "again.txt"
    assert (
        run_cli([*site, "--duration", "600", "--seed", "5", "--step", "100", "-o", str(again)]) == 0
    )
    assert again.read_text() == text
    assert files.validate("attenuation", text.encode()) == 6001


def test_bad_input_names_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--lat", "43.6", "--lon", "1.44", "--elevation", "35", "--seed", "1", "-o", "-"]
    assert run_cli([*base, "--freq", "70", "--duration", "60"]) == 2
    assert "freq_ghz: P.1853 is valid from 4 to 55 GHz, got 70" in capsys.readouterr().err
    assert (
        run_cli([*base, "--freq", "20", "--duration", "60", "--step", "2000", "--scintillation"])
        == 2
    )
    assert "step_ms: scintillation needs a step of at most 1000 ms" in capsys.readouterr().err


def test_the_combined_model_refuses_what_itur_cannot_do(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--lat", "1.35", "--lon", "103.8", "--freq", "30", "--elevation", "30", "--seed", "1"]
    base += ["--model", "combined", "-o", "-"]
    assert run_cli([*base, "--duration", "60", "--step", "1500"]) == 2
    assert "step_ms: the combined model (itur) steps whole seconds" in capsys.readouterr().err
    assert run_cli([*base, "--duration", "90000"]) == 2
    assert "duration_s: the combined model holds itur's 5e6-s warm-up" in capsys.readouterr().err
    assert run_cli([*base, "--duration", "60", "--clouds"]) == 2
    assert "model: the combined model has its own clouds" in capsys.readouterr().err


def test_the_combined_model_writes_a_trace_the_emulator_accepts(tmp_path: Path) -> None:
    """P.1853-2 section 3 by itur, 20 minutes at a 2 s step (itur synthesises 1 s and keeps
    every second sample). One synthesis (~10 s: itur always synthesises and drops a 5e6-s
    warm-up). What a 20-minute trace can show: the parts add up, the gases' median is taken out,
    the header and the statistics say what was done, and the emulator's parser accepts the file.
    What it cannot show is the long-term statistics (rain is correlated over ~5000 s, water vapour
    over ~3.6 days; itur holds ~1.2 GB for a day, so no series here is long enough): those were
    measured once by hand: satlab.weather's docstring has the figures."""
    s = weather.synthesize(SINGAPORE_30GHZ, 1200, 2000, seed=3, model="combined")
    assert len(s.values_db) == 601 and s.model == "combined"
    assert s.clouds_db is not None and s.scintillation_db is not None
    gases = s.values_db - s.clouds_db - s.rain_db - s.scintillation_db
    assert float(np.median(gases)) == pytest.approx(0.0, abs=1e-9)  # the median taken out
    assert float(np.ptp(gases)) < 0.5  # water vapour varies over days, not minutes
    text = s.text()
    assert "P.1853-2 section 3 combined method" in text.splitlines()[0]
    assert "gases (oxygen + water vapour): median" in text
    trace = tmp_path / "combined.txt"
    trace.write_text(text)
    att = {"type": "file", "file": str(trace), "tick_ms": 2000}
    check_link({"forward": {"downlink": {"attenuation": att}}})  # the emulator's own parser
    rows = weather.statistics(s)["exceedances"]
    # P.618 section 2.5's total beside the rain alone: clouds and gases add to it at every level
    assert all(r["site_total_db"] > r["site_rain_db"] for r in rows)
    assert [r["site_total_db"] for r in rows] == sorted(
        (r["site_total_db"] for r in rows), reverse=True
    )


def test_deep_fades_are_clamped_and_the_emulator_accepts_them(tmp_path: Path) -> None:
    s = weather.synthesize(SINGAPORE_30GHZ, 2.5e4 * 100_000, 25_000_000, seed=3)
    assert float(np.max(s.rain_db)) > weather.MAX_TRACE_DB  # the problem is real at this site
    assert s.clamped_ticks == int(np.count_nonzero(s.rain_db > weather.MAX_TRACE_DB)) > 0
    assert float(np.max(s.values_db)) == weather.MAX_TRACE_DB
    text = s.text()
    assert f"clamped to it: {s.clamped_ticks} tick(s)" in text
    files.validate("attenuation", text.encode())  # the service's copy of the emulator's rules
    trace = tmp_path / "deep.txt"
    trace.write_text(text)
    att = {"type": "file", "file": str(trace), "tick_ms": 1000}
    check_link({"forward": {"downlink": {"attenuation": att}}})  # the emulator's own parser
    over = tmp_path / "over.txt"
    over.write_text("0 0\n1 100.5\n")
    with pytest.raises(
        ValueError, match=r"over.txt:2: attenuation dB 100.5 is outside \[-50, 100\]"
    ):
        check_link({"forward": {"downlink": {"attenuation": {**att, "file": str(over)}}}})


def test_site_statistics_beside_the_trace_s() -> None:
    s = weather.synthesize(TOULOUSE, 2.5e4 * 400_000, 25_000_000, seed=11)
    st = weather.statistics(s)
    assert 20 < st["rain_rate_001_mm_h"] < 40  # P.837 for Toulouse: ~30 mm/h
    assert st["trace_rain_pct"] == pytest.approx(st["p_rain_pct"], rel=0.03)
    rows = {r["p_pct"]: r for r in st["exceedances"]}
    assert rows[0.01]["site_rain_db"] == pytest.approx(dict(s.rain.fit_points)[0.01], rel=1e-9)
    # the recommendation's fit is close to P.618 in the deep-fade region (test_raintrace.py)
    assert rows[0.01]["trace_rain_db"] == pytest.approx(rows[0.01]["site_rain_db"], rel=0.2)
    assert rows[1.0]["trace_total_db"] == rows[1.0]["trace_rain_db"]  # rain only


def test_clouds_follow_the_p840_lognormal_and_leave_the_rain_unchanged() -> None:
    plain = weather.synthesize(TOULOUSE, 1e5 * 200_000, 100_000_000, seed=2)
    s = weather.synthesize(TOULOUSE, 1e5 * 200_000, 100_000_000, seed=2, clouds=True)
    np.testing.assert_array_equal(s.rain_db, plain.rain_db)
    assert s.clouds_db is not None
    from itur.models import itu840

    m, sigma, p_clw = (
        float(v.value) for v in itu840.lognormal_approximation_coefficient(43.6, 1.44)
    )
    k = float(itu840.specific_attenuation_coefficients(20.0, 0.0)) / np.sin(np.radians(35.0))
    lw = s.clouds_db / k
    # cloudy P_clw % of the time; L exceeds exp(m) with probability P_clw / 2 (lognormal median)
    assert 100 * float(np.mean(lw > 0)) == pytest.approx(p_clw, rel=0.02)
    assert 100 * float(np.mean(lw > np.exp(m))) == pytest.approx(p_clw / 2, rel=0.03)
    q = p_clw / 100 * stats.norm.sf(1.0)  # L > exp(m + sigma)
    assert float(np.mean(lw > np.exp(m + sigma))) == pytest.approx(q, rel=0.04)
    total = np.minimum(plain.rain_db + s.clouds_db, weather.MAX_TRACE_DB)
    np.testing.assert_allclose(s.values_db, total, atol=1e-12)


def test_scintillation_has_the_p618_sigma_and_the_p1853_spectrum() -> None:
    s = weather.synthesize(TOULOUSE, 4000, 100, seed=4, scintillation=True)
    assert s.scintillation_db is not None
    from itur.models import itu618

    sd = float(itu618.scintillation_attenuation_sigma(43.6, 1.44, 20.0, 35.0, 1, 1.2, 0.5).value)
    assert float(np.std(s.scintillation_db)) == pytest.approx(sd, rel=1e-9)
    assert abs(float(np.mean(s.scintillation_db))) < 0.2 * sd
    # flat below the 0.1 Hz corner, falling as f^(-16/3) in power above it: from 0.5 to 2 Hz
    # the power spectral density drops by 4^(16/3) (32 dB)
    f, psd = signal.welch(s.scintillation_db, fs=10.0, nperseg=4096)
    lo = float(np.mean(psd[(f > 0.01) & (f < 0.08)]))
    p05 = float(np.mean(psd[(f > 0.45) & (f < 0.55)]))
    p2 = float(np.mean(psd[(f > 1.9) & (f < 2.1)]))
    assert 10 * np.log10(p05 / p2) == pytest.approx(160 / 3 * np.log10(4), abs=2.0)
    assert 10 * np.log10(lo / p05) == pytest.approx(160 / 3 * np.log10(5), abs=3.0)


def test_json_free_header_records_every_input() -> None:
    s = weather.synthesize(TOULOUSE, 60, 1000, seed=9, clouds=True, scintillation=True)
    head = "\n".join(s.header())
    for needle in ("lat=43.6", "freq_ghz=20.0", "seed=9", "clouds: P.840", "scintillation: P.618"):
        assert needle in head
    json.dumps(weather.statistics(s))  # plain numbers, for the API
