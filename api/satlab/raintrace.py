"""Rain-fade time series by ITU-R P.1853 (lognormal Maseng-Bakken model), written in OpenSAND's
attenuation file format so the same trace drives this emulator and OpenSAND unchanged.

Model (P.1853-1, section 2.2 "rain attenuation"):
  A(t) = max(exp(m + sigma * X(t)) - A_offset, 0)
with X a unit-variance first-order Gauss-Markov process, autocorrelation exp(-beta |tau|),
beta = 2e-4 s^-1. Parameters for a site come from ``itur``: P_rain = P0(lat, lon) (P.837), the
exceedance pairs (P_i, A_i) from P.618 for the P.1853 probability set
{0.01 .. 10}% with P_i < P_rain, and the site height from P.1511 unless given.

Two ways to get m, sigma, A_offset from the pairs:
- ``p1853`` (default): the recommendation verbatim: least squares ln A_i = m + sigma Q^-1(P_i/100),
  then A_offset = exp(m + sigma Q^-1(P_rain/100)), so A > 0 exactly P_rain of the time. Subtracting
  the offset makes the series' exceedance fall below P.618 at the larger probabilities (about 10%
  low at 0.1%, 30% at 1% for a mid-latitude Ka-band site); it is close at 0.01-0.05%.
- ``ccdf``: fits m, sigma and A_offset together so that exp(m + sigma Q^-1(P_i/100)) - A_offset
  matches ln A_i in least squares: the series' exceedance then follows P.618 within a few % from
  0.01% to the largest P_i (at the price of tiny attenuations, < 0.1 dB, more often than P_rain).

Synthesis: X_0 is drawn from the stationary N(0, 1) and X_k = rho X_{k-1} + sqrt(1 - rho^2) n_k with
rho = exp(-beta * tick), which is exact for any tick and equivalent to P.1853's step D6 (discarding
the first 200 000 s so the filter is stationary). Randomness is numpy's PCG64 seeded by ``seed``:
same seed and parameters -> the same file, byte for byte.

File format (OpenSAND ``plugins/attenuation/file``): one ``<tick> <dB>`` pair per line, the tick an
unsigned integer counting ticks of ``tick_ms`` (which must equal the emulator's ACM refresh period
the trace is used with), linear interpolation between lines; ``#`` starts a comment line. The
header comments record every input and the fitted parameters, so a run can be repeated.

CLI: ``python -m satlab.raintrace --lat 43.6 --lon 1.44 --freq-ghz 20 --elevation-deg 35
--duration-s 3600 --tick-ms 100 --seed 1 -o fade.txt``
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import optimize, signal, stats

from satlab import linkmodel

BETA_PER_S = 2e-4  # P.1853-1 step B
P1853_PROBABILITIES = (0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0)
METHODS = ("p1853", "ccdf")
FloatArray = npt.NDArray[np.float64]
# The emulator's trace bounds (crates/linkmodel attenuation.rs MAX_TRACE_DB): 100 dB is an outage
# (C/N <= -40 dB on any link), so deeper fades are clamped to it and the header says how many.
MAX_TRACE_DB = 100.0
MIN_TRACE_DB = -50.0


def clamp_deep_fades(values: FloatArray) -> tuple[FloatArray, int]:
    """Values within the emulator's trace bounds, and how many ticks were above the ceiling."""
    over = int(np.count_nonzero(values > MAX_TRACE_DB))
    return np.clip(values, MIN_TRACE_DB, MAX_TRACE_DB), over


@dataclass(frozen=True)
class RainParameters:
    """Everything the synthesis needs, plus what it was derived from."""

    m: float  # mean of ln(A + A_offset) (ln dB)
    sigma: float  # standard deviation of ln(A + A_offset)
    a_offset_db: float
    p_rain_pct: float  # P.837 P0: probability of rain on the path (%)
    beta_per_s: float = BETA_PER_S
    method: str = "p1853"
    # the P.618 exceedance pairs (percent of time, dB) the parameters were fitted to
    fit_points: tuple[tuple[float, float], ...] = field(default=())
    site: dict[str, float] = field(default_factory=dict)

    def exceedance_db(self, p_pct: float) -> float:
        """Attenuation the model's series exceeds p_pct % of the time (analytic CCDF)."""
        return max(
            math.exp(self.m + self.sigma * stats.norm.isf(p_pct / 100.0)) - self.a_offset_db, 0.0
        )

    def probability_above_zero_pct(self) -> float:
        if self.a_offset_db <= 0:
            return 100.0
        return 100.0 * float(stats.norm.sf((math.log(self.a_offset_db) - self.m) / self.sigma))


def fit_parameters(
    points: Sequence[tuple[float, float]], p_rain_pct: float, method: str = "p1853"
) -> tuple[float, float, float]:
    """(m, sigma, A_offset) from exceedance pairs (P_i %, A_i dB) by the chosen method."""
    if method not in METHODS:
        raise ValueError(f"method: must be one of {METHODS}, got {method!r}")
    pts = [(p, a) for p, a in points if a > 0 and p < p_rain_pct]
    if len(pts) < 2:
        raise ValueError(
            f"need at least two P.618 points with 0 < P_i < P_rain={p_rain_pct:.3f}%: "
            "the site has too little rain for P.1853 synthesis"
        )
    p = np.array([x[0] for x in pts], dtype=float)
    a = np.array([x[1] for x in pts], dtype=float)
    q = stats.norm.isf(p / 100.0)
    design = np.vstack([np.ones_like(q), q]).T
    m, sigma = (float(v) for v in np.linalg.lstsq(design, np.log(a), rcond=None)[0])
    q_rain = float(stats.norm.isf(p_rain_pct / 100.0))
    if method == "p1853":
        return m, sigma, math.exp(m + sigma * q_rain)

    def residuals(x: FloatArray) -> FloatArray:
        mm, ss, log_off = x
        model = np.exp(mm + ss * q) - np.exp(log_off)
        return np.asarray(np.log(np.maximum(model, 1e-9)) - np.log(a), dtype=np.float64)

    x0 = np.array([m, sigma, m + sigma * q_rain])
    sol = optimize.least_squares(residuals, x0)
    mm, ss, log_off = (float(v) for v in sol.x)
    return mm, ss, math.exp(log_off)


def site_parameters(
    lat: float,
    lon: float,
    freq_ghz: float,
    elevation_deg: float,
    hs_km: float | None = None,
    tau_deg: float = 45.0,
    method: str = "p1853",
) -> RainParameters:
    """P.1853 parameters for an Earth-space path, from P.837 (P0) and P.618 (A_i) via ``itur``."""
    if not 4.0 <= freq_ghz <= 55.0:
        raise ValueError(f"freq_ghz: P.1853 is valid from 4 to 55 GHz, got {freq_ghz}")
    if not 5.0 <= elevation_deg <= 90.0:
        raise ValueError(f"elevation_deg: P.1853 is valid from 5 to 90 deg, got {elevation_deg}")
    if not -90.0 <= lat <= 90.0:
        raise ValueError(f"lat: must be within -90..90 deg, got {lat}")
    import itur  # heavy import (astropy, maps): only when parameters are really computed
    from itur.models import itu618, itu837

    lon360 = lon % 360.0
    if hs_km is None:
        hs_km = float(itur.topographic_altitude(lat, lon360).value)
    p_rain = float(itu837.rainfall_probability(lat, lon360).value)  # percent
    probs = np.array([p for p in P1853_PROBABILITIES if p < p_rain], dtype=float)
    if len(probs) < 2:
        raise ValueError(f"lat/lon: P0={p_rain:.4f}% leaves fewer than two P.1853 probabilities")
    att = np.atleast_1d(
        itu618.rain_attenuation(
            lat, lon360, freq_ghz, elevation_deg, hs_km, probs, tau=tau_deg
        ).value
    ).astype(float)
    points = tuple((float(p), float(a)) for p, a in zip(probs, att, strict=True))
    m, sigma, off = fit_parameters(points, p_rain, method)
    site = {
        "lat": lat,
        "lon": lon,
        "freq_ghz": freq_ghz,
        "elevation_deg": elevation_deg,
        "hs_km": hs_km,
        "tau_deg": tau_deg,
    }
    return RainParameters(m, sigma, off, p_rain, BETA_PER_S, method, points, site)


def synthesize(params: RainParameters, n_ticks: int, tick_s: float, seed: int) -> FloatArray:
    """n_ticks attenuation samples (dB), one per tick of tick_s seconds, stationary from tick 0."""
    if n_ticks < 1:
        raise ValueError(f"n_ticks: must be >= 1, got {n_ticks}")
    if tick_s <= 0:
        raise ValueError(f"tick_s: must be > 0, got {tick_s}")
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal()
    noise = rng.standard_normal(n_ticks)
    rho = math.exp(-params.beta_per_s * tick_s)
    gain = math.sqrt(1.0 - rho * rho)
    # X_k = rho X_{k-1} + gain n_k, with X_{-1} = x0 ~ N(0,1)  =>  zi = rho * x0
    x, _ = signal.lfilter([gain], [1.0, -rho], noise, zi=np.array([rho * x0]))
    a = np.exp(params.m + params.sigma * x) - params.a_offset_db
    return np.asarray(np.maximum(a, 0.0), dtype=np.float64)


def format_trace(values: FloatArray, header: Sequence[str] = ()) -> str:
    """OpenSAND attenuation file text: ``#`` comment header, then ``<tick> <dB>`` per line."""
    lines = [f"# {h}" if h else "#" for h in header]
    lines.extend(f"{i} {v:.4f}" for i, v in enumerate(values))
    return "\n".join(lines) + "\n"


def read_trace(path: Path | str) -> tuple[npt.NDArray[np.int64], FloatArray]:
    """Parse an OpenSAND attenuation file with the emulator's own parser (satlab.linkmodel, one
    process per file: this reads whole files, rarely); errors name the file, line and reason."""
    try:
        ticks, vals = linkmodel.read_trace(str(path))
    except linkmodel.LinkModelError as err:
        raise ValueError(str(err)) from None
    return np.array(ticks, dtype=np.int64), np.array(vals, dtype=np.float64)


def header_lines(params: RainParameters, tick_ms: float, seed: int, n_ticks: int) -> list[str]:
    s = params.site
    pts = " ".join(f"{p:g}%:{a:.3f}" for p, a in params.fit_points)
    return [
        "SatLab rain-fade trace, ITU-R P.1853 (lognormal, 1st-order Gauss-Markov), "
        "OpenSAND File format",
        f"columns: <tick> <attenuation dB>; tick = {tick_ms:g} ms "
        "(set the ACM refresh period to it); linear interpolation",
        f"site: lat={s.get('lat')} lon={s.get('lon')} freq_ghz={s.get('freq_ghz')} "
        f"elevation_deg={s.get('elevation_deg')} hs_km={s.get('hs_km', 0):.4f} "
        f"tau_deg={s.get('tau_deg')}",
        f"seed={seed} ticks={n_ticks} duration_s={(n_ticks - 1) * tick_ms / 1000:g} "
        f"method={params.method} beta_per_s={params.beta_per_s:g}",
        f"m={params.m:.6f} sigma={params.sigma:.6f} a_offset_db={params.a_offset_db:.6f} "
        f"p_rain_pct={params.p_rain_pct:.4f}",
        f"P.618 points fitted: {pts}",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m satlab.raintrace",
        description="Synthesize an ITU-R P.1853 rain-fade trace (OpenSAND '<tick> <dB>' format).",
    )
    ap.add_argument("--lat", type=float, required=True, help="earth station latitude (deg)")
    ap.add_argument("--lon", type=float, required=True, help="earth station longitude (deg)")
    ap.add_argument("--freq-ghz", type=float, required=True, help="carrier frequency, 4-55 GHz")
    ap.add_argument("--elevation-deg", type=float, required=True, help="path elevation, 5-90 deg")
    ap.add_argument("--duration-s", type=float, required=True, help="trace length (s)")
    ap.add_argument("--tick-ms", type=float, required=True, help="tick = ACM refresh period (ms)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--hs-km", type=float, default=None, help="site height (default: P.1511)")
    ap.add_argument("--tau-deg", type=float, default=45.0, help="polarisation tilt (45 = circular)")
    ap.add_argument("--method", choices=METHODS, default="p1853", help="parameter fit (see module)")
    ap.add_argument("-o", "--output", required=True, help="output file ('-' for stdout)")
    a = ap.parse_args(argv)
    if a.tick_ms <= 0:
        ap.error("--tick-ms: must be > 0")
    if a.duration_s <= 0:
        ap.error("--duration-s: must be > 0")
    try:
        params = site_parameters(
            a.lat, a.lon, a.freq_ghz, a.elevation_deg, a.hs_km, a.tau_deg, a.method
        )
    except ValueError as e:
        ap.error(str(e))
    n_ticks = int(round(a.duration_s * 1000.0 / a.tick_ms)) + 1  # ticks 0..N inclusive
    values, clamped = clamp_deep_fades(synthesize(params, n_ticks, a.tick_ms / 1000.0, a.seed))
    header = header_lines(params, a.tick_ms, a.seed, n_ticks)
    header.append(
        f"deep fades above {MAX_TRACE_DB:g} dB (an outage) clamped to it: {clamped} tick(s)"
    )
    text = format_trace(values, header)
    if a.output == "-":
        sys.stdout.write(text)
    else:
        Path(a.output).write_text(text)
        print(
            f"wrote {a.output}: {n_ticks} ticks of {a.tick_ms:g} ms, max {values.max():.2f} dB, "
            f"{100.0 * float(np.mean(values > 0)):.2f}% of ticks in rain",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
