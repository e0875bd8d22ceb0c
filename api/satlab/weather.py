"""A site's weather as an attenuation trace the emulator replays: ITU-R P.1853 rain (raintrace.py),
optionally P.1853 cloud attenuation and tropospheric scintillation, with the site's annual
statistics (P.837 rain, P.618 attenuation exceedances) beside the trace's own.

- Rain: satlab.raintrace (P.1853-1 section 2.2, lognormal Maseng-Bakken).
- Clouds (``clouds``): P.1853-2 section 3 (integrated cloud liquid water content): the P.840
  Annex 2 lognormal parameters (m, sigma, P_clw) of the site, a unit-variance Gaussian process
  G = gamma_1 X_1 + gamma_2 X_2 of two first-order Gauss-Markov processes driven by one white noise
  (beta_1 = 7.17e-4 s^-1, beta_2 = 2.01e-5 s^-1, gamma_1 = 0.349, gamma_2 = 0.830, as in the
  ``itur`` implementation of the recommendation), L = exp(m + sigma Q^-1(Q(G) / P_clw)) when
  G > Q^-1(P_clw), else 0, and A_c = L K_l(f, 0 degC) / sin(elevation) (P.840). The pair is
  sampled exactly at any step and starts from its joint stationary distribution, so the series is
  stationary from its first sample (see cloud_liquid_water).
  In this (default, ``independent``) model clouds and rain are synthesised independently.
- ``combined`` model: P.1853-2 section 3 (rain, clouds, water vapour and oxygen, scintillation
  from correlated noises; cloud values replaced during rain; scintillation scaled by water vapour
  and rain) as ``itur`` 0.4 implements it (itur.models.itu1853.total_attenuation_synthesis, see
  combined()). What itur imposes: whole-second steps (it synthesises at 1 s and keeps every
  step-th sample), a warm-up of 5 000 000 s that it always synthesises and discards (so any
  trace up to a day costs about 10 s and 1.2 GB of memory; a day is the limit here), numpy's
  global legacy random state (seeded here under a lock, then restored), and a scintillation
  series that is not unit-variance as step C15 asks (itur's fftnoise is not normalised: standard
  deviation 7.6e-5 measured for a day), so the combined trace has practically no scintillation
  (use the independent model's ``scintillation`` for it). The gases' median over the trace is
  subtracted (a link budget's clear sky already counts the median gases, P.676); their
  variation stays in the trace. Long-term statistics cannot be checked within those limits: the
  longest series measured (Singapore, 20 GHz, 60 deg, 35 days, seed 1: 4 min, 1.7 GB) exceeds
  7.9 / 2.1 / 0.87 dB at 0.1 / 1 / 5 % of the time where P.618's total less the median gases
  gives 22.7 / 5.9 / 2.6 dB; its rain alone was 7.9 / 2.0 dB against the fitted lognormal's
  16.1 / 3.1 dB, so 35 days are too short for the rain part (a rain process decorrelates in
  ~5000 s, rain falls 4.3 % of the year there).
- Scintillation (``scintillation``): P.1853 section 2.4: white Gaussian noise shaped by a low-pass
  of corner 0.1 Hz and asymptotic amplitude slope f^(-8/3) (as ``itur``), normalised to unit
  variance, times the P.618 section 2.4.1 standard deviation of the site (antenna diameter and
  efficiency given). It averages 0 dB: negative values are enhancements.

Deep fades: the emulator's trace parser accepts attenuations up to MAX_TRACE_DB (100 dB,
crates/linkmodel attenuation.rs). 100 dB on a hop leaves C/N <= 60 - 100 = -40 dB (clear sky is at
most 60 dB), below every MODCOD's required Es/N0 (tables hold -30..60 dB): every frame is erased,
an outage, as it is at any deeper fade. So the synthesiser clamps values above MAX_TRACE_DB to it
and the trace's header says how many ticks were clamped: nothing the emulator would do differently
is lost. Values below -50 dB (the parser's floor) cannot arise (scintillation is tenths of a dB).

Randomness (independent model): numpy PCG64 seeded by ``seed``; rain, clouds and scintillation
draw from independent child streams (numpy SeedSequence.spawn of seed + 1), so adding clouds
leaves the rain series of the same seed unchanged, byte for byte.
"""

from __future__ import annotations

import math
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import signal, stats

from satlab import raintrace
from satlab.raintrace import FloatArray

MAX_TRACE_DB = raintrace.MAX_TRACE_DB  # the emulator's ceiling (linkmodel attenuation.rs)
MIN_TRACE_DB = raintrace.MIN_TRACE_DB
clamp_deep_fades = raintrace.clamp_deep_fades
# P.1853 cloud liquid water content (as implemented by itur, models/itu1853.py)
CLOUD_BETA_1, CLOUD_BETA_2 = 7.17e-4, 2.01e-5
CLOUD_GAMMA_1, CLOUD_GAMMA_2 = 0.349, 0.830
SCINT_CORNER_HZ = 0.1
MAX_SCINT_STEP_S = 1.0  # the scintillation spectrum extends past its 0.1 Hz corner
STAT_PROBABILITIES = (0.01, 0.1, 1.0)  # % of the time, for the statistics table
MODELS = ("independent", "combined")
# The combined model's bounds: itur steps whole seconds; memory grows with its 5e6-s warm-up plus
# the trace (~1.2 GB at a day, measured with itur 0.4.0), so one synthesis at a time, <= a day.
COMBINED_MAX_S = 86_400
_COMBINED_LOCK = threading.Lock()  # numpy's global random state, and one 1.2 GB job at a time


@dataclass(frozen=True)
class Site:
    lat: float
    lon: float
    freq_ghz: float
    elevation_deg: float
    tau_deg: float = 45.0
    hs_km: float | None = None
    antenna_diameter_m: float = 1.2
    antenna_efficiency: float = 0.5

    def path(self, p_pct: float) -> tuple[float, float, float, float, float, float]:
        """itur's leading arguments for this Earth-space path at p_pct % of the time: lat,
        lon (0-360), f, elevation, p, antenna diameter."""
        lon360 = self.lon % 360.0
        return self.lat, lon360, self.freq_ghz, self.elevation_deg, p_pct, self.antenna_diameter_m


@dataclass
class Synthesis:
    """A synthesised trace, its parts and what it was made from."""

    site: Site
    step_ms: int
    seed: int
    values_db: FloatArray  # written, clamped to [MIN_TRACE_DB, MAX_TRACE_DB]
    rain_db: FloatArray
    rain: raintrace.RainParameters
    clouds_db: FloatArray | None = None
    scintillation_db: FloatArray | None = None
    clamped_ticks: int = 0
    notes: list[str] = field(default_factory=list)
    model: str = "independent"

    def header(self) -> list[str]:
        lines = raintrace.header_lines(self.rain, self.step_ms, self.seed, len(self.values_db))
        lines[0] = (
            "SatLab weather trace, ITU-R P.1853-2 section 3 combined method (itur "
            "total_attenuation_synthesis): rain, clouds, gases, scintillation, correlated"
            if self.model == "combined"
            else "SatLab weather trace, ITU-R P.1853: rain (lognormal, 1st-order Gauss-Markov)"
            + (" + clouds (P.840 lognormal)" if self.clouds_db is not None else "")
            + (" + scintillation (P.618 sigma)" if self.scintillation_db is not None else "")
        ) + ", OpenSAND File format"
        lines.extend(self.notes)
        lines.append(
            f"deep fades: values above {MAX_TRACE_DB:g} dB (the emulator's ceiling; an outage "
            f"either way) clamped to it: {self.clamped_ticks} tick(s)"
        )
        return lines

    def text(self) -> str:
        return raintrace.format_trace(self.values_db, self.header())


def cloud_liquid_water(
    m: float, sigma: float, p_clw_pct: float, n: int, step_s: float, rng: np.random.Generator
) -> FloatArray:
    """P.1853 integrated cloud liquid water content (kg/m^2), n samples step_s apart.

    X_1 and X_2 are the two unit-variance Gauss-Markov processes driven by one white noise that
    P.1853 filters at 1 s; here the pair is sampled exactly at any step (a 2-D Ornstein-Uhlenbeck
    process: X_{k+1} = diag(r_1, r_2) X_k + w_k, w_k ~ N(0, Q) with
    Q_ij = 2 sqrt(b_i b_j) (1 - exp(-(b_i + b_j) step)) / (b_i + b_j)), so that G keeps unit
    variance (the 1 s recursion reused at a 100 s step would give G a variance of 1.4)."""
    b1, b2 = CLOUD_BETA_1, CLOUD_BETA_2
    r1, r2 = math.exp(-b1 * step_s), math.exp(-b2 * step_s)
    q11, q22 = 1.0 - r1 * r1, 1.0 - r2 * r2
    q12 = 2.0 * math.sqrt(b1 * b2) * -math.expm1(-(b1 + b2) * step_s) / (b1 + b2)
    c12 = 2.0 * math.sqrt(b1 * b2) / (b1 + b2)  # stationary correlation of X_1 and X_2
    x0 = rng.multivariate_normal([0.0, 0.0], [[1.0, c12], [c12, 1.0]])
    n1, n2 = rng.standard_normal(n), rng.standard_normal(n)
    a = math.sqrt(q11)
    w1 = a * n1
    w2 = (q12 / a) * n1 + math.sqrt(max(q22 - q12 * q12 / q11, 0.0)) * n2
    x1, _ = signal.lfilter([1.0], [1.0, -r1], w1, zi=np.array([r1 * x0[0]]))
    x2, _ = signal.lfilter([1.0], [1.0, -r2], w2, zi=np.array([r2 * x0[1]]))
    g = CLOUD_GAMMA_1 * x1 + CLOUD_GAMMA_2 * x2
    p = p_clw_pct / 100.0
    alpha = float(stats.norm.isf(p))
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.minimum(stats.norm.sf(g) / p, 1.0)
        lw = np.where(g > alpha, np.exp(m + sigma * stats.norm.isf(q)), 0.0)
    return np.asarray(lw, dtype=np.float64)


def scintillation_unit(n: int, step_s: float, rng: np.random.Generator) -> FloatArray:
    """Unit-variance scintillation: white noise shaped by 1 below 0.1 Hz, (f/fc)^(-8/3) above."""
    m = max(n, 2)
    spec = np.fft.rfft(rng.standard_normal(m))
    f = np.fft.rfftfreq(m, step_s)
    shape = (np.maximum(f, SCINT_CORNER_HZ) / SCINT_CORNER_HZ) ** (-8 / 3)
    x = np.fft.irfft(spec * shape, m)[:n]
    sd = float(np.std(x))
    return np.asarray(x / sd if sd > 0 else x, dtype=np.float64)


def _check_combined(duration_s: float, step_ms: int, clouds: bool, scintillation: bool) -> None:
    if step_ms % 1000:
        raise ValueError(
            f"step_ms: the combined model (itur) steps whole seconds: a multiple of 1000, got "
            f"{step_ms}"
        )
    if duration_s > COMBINED_MAX_S:
        raise ValueError(
            f"duration_s: the combined model holds itur's 5e6-s warm-up and the trace in memory "
            f"(~1.2 GB for a day): at most {COMBINED_MAX_S} s, got {duration_s:g}"
        )
    if clouds or scintillation:
        raise ValueError(
            "model: the combined model has its own clouds and scintillation; leave clouds and "
            "scintillation off"
        )


def combined(site: Site, n: int, step_s: int, seed: int) -> tuple[FloatArray, ...]:
    """(gases, clouds, rain, scintillation) in dB, n samples step_s apart, by itur's P.1853-2
    section 3. Its p argument (1 % here) changes nothing in it: the water vapour attenuation is
    computed from the synthesised series and the P.618 sigma does not depend on p (checked)."""
    from itur.models import itu1853

    with _COMBINED_LOCK:
        state = np.random.get_state()
        np.random.seed(seed % 2**32)  # itur draws from numpy's global legacy generator
        try:
            with warnings.catch_warnings():
                # log10(0) at the spectrum's 0 Hz bin, which itur's own np.where then drops
                warnings.simplefilter("ignore", RuntimeWarning)
                parts = itu1853.total_attenuation_synthesis(
                    *site.path(1.0),
                    n,
                    Ts=step_s,
                    hs=site.hs_km,
                    tau=site.tau_deg,
                    eta=site.antenna_efficiency,
                    return_contributions=True,
                )
        finally:
            np.random.set_state(state)
    return tuple(np.asarray(getattr(x, "value", x), dtype=np.float64)[:n] for x in parts[:4])


def _synthesize_combined(site: Site, duration_s: float, step_ms: int, seed: int) -> Synthesis:
    step_s = step_ms // 1000
    n = int(round(duration_s / step_s)) + 1
    rain = raintrace.site_parameters(
        site.lat, site.lon, site.freq_ghz, site.elevation_deg, site.hs_km, site.tau_deg
    )
    gases, clouds_db, rain_db, scint = combined(site, n, step_s, seed)
    gas_median = float(np.median(gases))
    out = Synthesis(site, step_ms, seed, gases - gas_median, rain_db, rain, model="combined")
    out.clouds_db, out.scintillation_db = clouds_db, scint
    out.notes.append(
        f"gases (oxygen + water vapour): median {gas_median:.4f} dB over the trace subtracted "
        "(a link budget's clear sky counts the median gases); their variation kept"
    )
    out.values_db, out.clamped_ticks = clamp_deep_fades(out.values_db + clouds_db + rain_db + scint)
    return out


def synthesize(
    site: Site,
    duration_s: float,
    step_ms: int,
    seed: int,
    clouds: bool = False,
    scintillation: bool = False,
    method: str = "p1853",
    model: str = "independent",
) -> Synthesis:
    """The site's trace over duration_s, one value per step_ms tick (ticks 0..N)."""
    if step_ms < 1:
        raise ValueError(f"step_ms: must be at least 1, got {step_ms}")
    if duration_s <= 0:
        raise ValueError(f"duration_s: must be > 0, got {duration_s}")
    if model not in MODELS:
        raise ValueError(f"model: must be one of {', '.join(MODELS)}, got {model!r}")
    if model == "combined":
        _check_combined(duration_s, step_ms, clouds, scintillation)
        return _synthesize_combined(site, duration_s, step_ms, seed)
    step_s = step_ms / 1000.0
    if scintillation and step_s > MAX_SCINT_STEP_S:
        raise ValueError(
            f"step_ms: scintillation needs a step of at most {MAX_SCINT_STEP_S * 1000:g} ms "
            f"(its spectrum extends past {SCINT_CORNER_HZ:g} Hz), got {step_ms}"
        )
    rain = raintrace.site_parameters(
        site.lat, site.lon, site.freq_ghz, site.elevation_deg, site.hs_km, site.tau_deg, method
    )
    n = int(round(duration_s / step_s)) + 1
    rain_db = raintrace.synthesize(rain, n, step_s, seed)
    total = rain_db.copy()
    out = Synthesis(site, step_ms, seed, total, rain_db, rain)
    streams = np.random.SeedSequence(seed + 1).spawn(2)
    if clouds:
        from itur.models import itu840

        m, sigma, p_clw = (
            float(v.value)
            for v in itu840.lognormal_approximation_coefficient(site.lat, site.lon % 360.0)
        )
        k_l = float(itu840.specific_attenuation_coefficients(site.freq_ghz, 0.0))
        lw = cloud_liquid_water(m, sigma, p_clw, n, step_s, np.random.default_rng(streams[0]))
        out.clouds_db = lw * k_l / math.sin(math.radians(site.elevation_deg))
        total = total + out.clouds_db
        out.notes.append(
            f"clouds: P.840 lognormal m={m:.4f} sigma={sigma:.4f} P_clw={p_clw:.2f}% "
            f"K_l(0 degC)={k_l:.4f} (dB/km)/(g/m^3)"
        )
    if scintillation:
        from itur.models import itu618

        sd = float(
            itu618.scintillation_attenuation_sigma(*site.path(1.0), site.antenna_efficiency).value
        )
        out.scintillation_db = sd * scintillation_unit(n, step_s, np.random.default_rng(streams[1]))
        total = total + out.scintillation_db
        out.notes.append(
            f"scintillation: P.618 sigma={sd:.4f} dB (antenna {site.antenna_diameter_m:g} m, "
            f"efficiency {site.antenna_efficiency:g}), corner {SCINT_CORNER_HZ:g} Hz"
        )
    out.values_db, out.clamped_ticks = clamp_deep_fades(total)
    return out


def exceeded(series: FloatArray, p_pct: float) -> float:
    """The value the series exceeds p_pct % of the time."""
    return float(np.quantile(series, 1.0 - p_pct / 100.0))


def site_total_db(s: Synthesis, p_pct: float) -> float:
    """P.618 section 2.5 total attenuation (gases, clouds, rain, scintillation) exceeded p_pct %
    of an average year, less the gases' median the combined trace leaves out."""
    import itur

    site = s.site
    total = itur.atmospheric_attenuation_slant_path(
        *site.path(p_pct),
        hs=s.rain.site.get("hs_km"),
        tau=site.tau_deg,
        eta=site.antenna_efficiency,
    )
    gases = itur.atmospheric_attenuation_slant_path(
        *site.path(50.0),
        hs=s.rain.site.get("hs_km"),
        include_rain=False,
        include_clouds=False,
        include_scintillation=False,
    )
    return float(total.value) - float(gases.value)


def statistics(s: Synthesis) -> dict[str, Any]:
    """The site's annual statistics next to the trace's own.

    site: P.837 R_0.01 (mm/h) and P0 (probability of rain, %), P.618 rain attenuation exceeded
    p % of an average year (and, for the combined model, the P.618 total less the median gases);
    trace: the fraction of ticks in rain and the attenuation its ticks
    exceed p % of the time (a trace much shorter than a year sees few or no deep fades)."""
    from itur.models import itu618, itu837

    site = s.site
    lon360 = site.lon % 360.0
    hs = s.rain.site.get("hs_km")
    probs = np.array(STAT_PROBABILITIES)
    p618 = np.atleast_1d(
        itu618.rain_attenuation(
            site.lat, lon360, site.freq_ghz, site.elevation_deg, hs, probs, tau=site.tau_deg
        ).value
    )
    rows = [
        {
            "p_pct": float(p),
            "site_rain_db": float(a),
            "trace_rain_db": exceeded(s.rain_db, float(p)),
            "trace_total_db": exceeded(s.values_db, float(p)),
            "site_total_db": site_total_db(s, float(p)) if s.model == "combined" else None,
        }
        for p, a in zip(probs, p618, strict=True)
    ]
    return {
        "rain_rate_001_mm_h": float(itu837.rainfall_rate(site.lat, lon360, 0.01).value),
        "p_rain_pct": s.rain.p_rain_pct,
        "trace_rain_pct": 100.0 * float(np.mean(s.rain_db > 0)),
        "trace_duration_s": (len(s.values_db) - 1) * s.step_ms / 1000.0,
        "trace_max_db": float(np.max(s.values_db)),
        "clamped_ticks": s.clamped_ticks,
        "exceedances": rows,
    }
