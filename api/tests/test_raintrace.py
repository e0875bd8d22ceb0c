"""ITU-R P.1853 rain-fade synthesis: output statistics, determinism, file format.

Site: Toulouse (43.6 N, 1.44 E), 20 GHz (Ka downlink), 35 deg elevation, circular polarisation.

Statistics are checked on a long series sampled at a 25 000 s tick: the synthesis is an exact AR(1)
at any tick, so the marginal distribution is the same as at 100 ms, while successive samples are
practically independent (rho = exp(-2e-4 * 2.5e4) = 0.007); 10 million of them (1000 exceedances
of the 0.01% level) pin the attenuation exceeded 0.01% of the time to about 2% (one sigma, measured
over 12 seeds: 3.3% at 4 million) and the 0.1% and 1% levels to under 1%.

Stated tolerances (relative, on the attenuation exceeded p% of the time):
- series vs the model's own analytic CCDF: 8% at 0.01%, 3% at 0.1% and 1% (sampling only, ~4 sigma);
- ``p1853`` (recommendation verbatim) vs P.618: 12% at 0.01, 0.02 and 0.03% (least-squares fit
  residual 2-5% there plus sampling); at larger p the recommended offset subtraction puts the
  series below P.618 by design (documented in the module), so the test asserts it is below;
- ``ccdf`` fit vs P.618: 12% at 0.01%, 5% at 0.1% and 1% (fit residual up to 3.3% plus sampling).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from satlab import raintrace

SITE = {"lat": 43.6, "lon": 1.44, "freq_ghz": 20.0, "elevation_deg": 35.0}
TICK_LONG_S = 2.5e4
N_LONG = 10_000_000


@pytest.fixture(scope="module")
def p1853() -> raintrace.RainParameters:
    return raintrace.site_parameters(**SITE, method="p1853")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def ccdf_params(p1853: raintrace.RainParameters) -> raintrace.RainParameters:
    m, s, off = raintrace.fit_parameters(p1853.fit_points, p1853.p_rain_pct, "ccdf")
    return raintrace.RainParameters(m, s, off, p1853.p_rain_pct, method="ccdf")


def exceeded(series: np.ndarray, p_pct: float) -> float:
    """The attenuation exceeded p_pct % of the time in the series."""
    return float(np.quantile(series, 1.0 - p_pct / 100.0))


def p618(params: raintrace.RainParameters, p_pct: float) -> float:
    return dict(params.fit_points)[p_pct]


def test_site_parameters_are_sane(p1853: raintrace.RainParameters) -> None:
    assert 1.0 < p1853.p_rain_pct < 15.0
    probs = [p for p, _ in p1853.fit_points]
    assert probs[0] == 0.01 and all(p < p1853.p_rain_pct for p in probs)
    atts = [a for _, a in p1853.fit_points]
    assert atts == sorted(atts, reverse=True)  # P.618 exceedance falls with p
    assert 5.0 < atts[0] < 40.0  # 0.01% at 20 GHz mid-latitude: ~15 dB
    # the recommended offset makes A > 0 exactly P_rain of the time
    assert p1853.probability_above_zero_pct() == pytest.approx(p1853.p_rain_pct, rel=1e-9)


@pytest.fixture(scope="module")
def p1853_series(p1853: raintrace.RainParameters) -> np.ndarray:
    return raintrace.synthesize(p1853, N_LONG, TICK_LONG_S, seed=7)


def test_series_follows_its_analytic_ccdf(
    p1853: raintrace.RainParameters, p1853_series: np.ndarray
) -> None:
    a = p1853_series
    assert float(np.mean(a > 0)) * 100 == pytest.approx(p1853.p_rain_pct, rel=0.03)
    for p, tol in ((0.01, 0.08), (0.1, 0.03), (1.0, 0.03)):
        assert exceeded(a, p) == pytest.approx(p1853.exceedance_db(p), rel=tol), p


def test_p1853_series_matches_p618_in_the_deep_fade_region(
    p1853: raintrace.RainParameters, p1853_series: np.ndarray
) -> None:
    a = p1853_series
    for p in (0.01, 0.02, 0.03):
        assert exceeded(a, p) == pytest.approx(p618(p1853, p), rel=0.12), p
    # by construction (offset subtraction) the series sits below P.618 at 1%
    assert exceeded(a, 1.0) < p618(p1853, 1.0)


def test_ccdf_fit_matches_p618_over_the_whole_range(
    p1853: raintrace.RainParameters, ccdf_params: raintrace.RainParameters
) -> None:
    a = raintrace.synthesize(ccdf_params, N_LONG, TICK_LONG_S, seed=13)
    for p, tol in ((0.01, 0.12), (0.1, 0.05), (1.0, 0.05)):
        assert exceeded(a, p) == pytest.approx(p618(p1853, p), rel=tol), p


def test_correlation_time_is_p1853s(p1853: raintrace.RainParameters) -> None:
    # X = (ln(A + off) - m) / sigma is observable only in rain; check rho on the latent process
    # through a series whose offset is zero (so A = Y > 0 always): lag-1 autocorrelation of ln A.
    latent = raintrace.RainParameters(0.0, 1.0, 0.0, 100.0)
    tick = 1000.0
    x = np.log(raintrace.synthesize(latent, 400_000, tick, seed=3))
    r1 = float(np.corrcoef(x[:-1], x[1:])[0, 1])
    assert r1 == pytest.approx(np.exp(-raintrace.BETA_PER_S * tick), abs=0.01)


def test_same_seed_same_series_other_seed_other_series(p1853: raintrace.RainParameters) -> None:
    a = raintrace.synthesize(p1853, 50_000, 10.0, seed=42)
    b = raintrace.synthesize(p1853, 50_000, 10.0, seed=42)
    c = raintrace.synthesize(p1853, 50_000, 10.0, seed=43)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_cli_writes_opensand_file_format_deterministically(
    tmp_path: Path, p1853: raintrace.RainParameters, monkeypatch: pytest.MonkeyPatch
) -> None:
    # reuse the fitted site (the itur maps are slow to load) for the CLI runs
    monkeypatch.setattr(raintrace, "site_parameters", lambda *a, **k: p1853)
    args = [
        "--lat", "43.6", "--lon", "1.44", "--freq-ghz", "20", "--elevation-deg", "35",
        "--duration-s", "7200", "--tick-ms", "100", "--seed", "5",
    ]  # fmt: skip
    f1, f2, f3 = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "c.txt"
    assert raintrace.main([*args, "-o", str(f1)]) == 0
    assert raintrace.main([*args, "-o", str(f2)]) == 0
    assert f1.read_bytes() == f2.read_bytes()
    assert raintrace.main([*args[:-1], "6", "-o", str(f3)]) == 0
    assert f1.read_bytes() != f3.read_bytes()

    text = f1.read_text().splitlines()
    header = [ln for ln in text if ln.startswith("#")]
    body = [ln for ln in text if not ln.startswith("#")]
    assert header and all(ln.startswith("#") for ln in text[: len(header)])  # comments first
    assert any("seed=5" in h for h in header) and any("tick = 100 ms" in h for h in header)
    assert len(body) == 72_001  # ticks 0..72000 inclusive
    for i, ln in enumerate(body[:1000]):
        tick, db = ln.split(" ")
        assert int(tick) == i and float(db) >= 0.0
    ticks, vals = raintrace.read_trace(f1)
    assert np.array_equal(ticks, np.arange(72_001))
    assert vals.min() >= 0.0


def test_read_trace_names_file_line_and_reason(tmp_path: Path) -> None:
    f = tmp_path / "bad.txt"
    f.write_text("# c\n0 0\n1 x\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3:"):
        raintrace.read_trace(f)
    f.write_text("0 0\n2 1\n1 2\n")
    with pytest.raises(
        ValueError,
        match=r"bad\.txt:3: tick 1 is not after the previous tick 2 \(ticks must increase\)",
    ):
        raintrace.read_trace(f)


def test_bad_inputs_are_rejected() -> None:
    with pytest.raises(ValueError, match="freq_ghz"):
        raintrace.site_parameters(0.0, 0.0, 2.0, 30.0)
    with pytest.raises(ValueError, match="elevation_deg"):
        raintrace.site_parameters(0.0, 0.0, 20.0, 2.0)
    with pytest.raises(SystemExit):
        raintrace.main(
            ["--lat", "0", "--lon", "0", "--freq-ghz", "20", "--elevation-deg", "30",
             "--duration-s", "10", "--tick-ms", "0", "--seed", "1", "-o", "-"]
        )  # fmt: skip
