"""The link budget: each hop's clear-sky C/N from the operator's figures, for the emulator.

A scenario's `link_budget` section gives, per direction (`forward`, `return`) and hop (`uplink`,
`downlink`), the transmitter's EIRP, the receiver's G/T, the carrier frequency and other losses;
the stations and the satellite come from `link.geometry`, the noise bandwidth is the direction's
symbol rate (`link.<direction>.symbol_rate_baud`, default 40 Msym/s forward, 4 Msym/s return), so
the C/N is the Es/N0 the emulator works with. For each hop:

  C/N = EIRP - L_fs - A_gas - L_other + G/T - 10 log10(k) - 10 log10(R_s)        (dB)
  L_fs = 20 log10(4 pi d f / c), d the slant range (WGS84 station, GEO at 42 164 km: the emulator's
  geometry.rs), k = 1.380649e-23 J/K (-228.60 dBW/K/Hz)

A_gas is the P.676 (Annex 2) gaseous attenuation of the slant path under median conditions
(P.836 water vapour exceeded 50 % of the time), at the hop's ground station: the uplink's
transmitting station, the downlink's receiving one. That C/N fills the link's
`<direction>.<hop>.clear_sky_db`: the emulator keeps receiving C/N, and rain comes from the
attenuation source (a trace from `satlab trace synth`, a constant, ...).

The budget also gives, at the chosen availability (p = 100 - availability_pct % of an average
year), the ITU-R P.618 rain attenuation and the total atmospheric attenuation (P.618 section 2.5:
gases, clouds P.840, rain; scintillation is left out), and the C/N then: clear sky - (total at p -
A_gas). The direction's Es/N0 combines its two hops as the emulator does, 1/(1/up + 1/down) in
linear terms; at the availability both hops are taken faded at once (pessimistic: the two sites'
fades are not simultaneous). Sky-noise rise on the downlink is not in the table (the emulator's
`downlink.sky_noise` models it during a run).
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import asdict, dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

GEO_RADIUS_M = 42_164_000.0
C_M_PER_S = 299_792_458.0
WGS84_A = 6_378_137.0
WGS84_F = 1.0 / 298.257_223_563
BOLTZMANN_DB = 10.0 * math.log10(1.380649e-23)  # dBW/K/Hz
CLEAR_SKY_DB = (-20.0, 60.0)  # the emulator's bounds of clear_sky_db
MIN_ELEVATION_DEG = 5.0  # P.618 and P.676 Annex 2 hold from 5 deg
DEFAULT_SYMBOL_RATE = {"forward": 40e6, "return": 4e6}  # emulator/CONFIG.md
HOP_STATION = {
    ("forward", "uplink"): "gateway",
    ("forward", "downlink"): "terminal",
    ("return", "uplink"): "terminal",
    ("return", "downlink"): "gateway",
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class HopBudget(_Strict):
    """One hop's transmitter, receiver and carrier."""

    frequency_ghz: float = Field(ge=1, le=55, description="carrier frequency (P.618: 1-55 GHz)")
    eirp_dbw: float = Field(ge=-30, le=100, description="transmitter EIRP toward the receiver")
    g_over_t_db_per_k: float = Field(ge=-60, le=60, description="receiver figure of merit G/T")
    other_losses_db: float = Field(
        0, ge=0, le=50, description="pointing, polarisation, feeder and implementation losses"
    )
    polarization_tilt_deg: float = Field(
        45, ge=0, le=90, description="P.618 polarisation tilt (45: circular)"
    )


class DirectionBudget(_Strict):
    uplink: HopBudget
    downlink: HopBudget


class LinkBudget(_Strict):
    """Each hop's clear-sky C/N derived from EIRP, G/T and frequency over `link.geometry`
    (satlab.linkbudget); it fills `link.<direction>.<hop>.clear_sky_db`."""

    availability_pct: float = Field(
        99.9, ge=95, le=99.999, description="share of an average year the budget holds for"
    )
    forward: DirectionBudget | None = None
    return_: DirectionBudget | None = Field(None, alias="return")

    model_config = ConfigDict(extra="forbid", populate_by_name=True, serialize_by_alias=True)

    def directions(self) -> list[tuple[str, DirectionBudget]]:
        return [(d, b) for d, b in (("forward", self.forward), ("return", self.return_)) if b]


@dataclass(frozen=True)
class Station:
    lat_deg: float
    lon_deg: float
    alt_m: float | None


def slant_range(st: Station, sat_lon_deg: float) -> tuple[float, float]:
    """(slant range m, elevation deg) from a WGS84 station to the GEO satellite (geometry.rs)."""
    e2 = WGS84_F * (2.0 - WGS84_F)
    lat, lon = math.radians(st.lat_deg), math.radians(st.lon_deg)
    alt = st.alt_m or 0.0
    n = WGS84_A / math.sqrt(1.0 - e2 * math.sin(lat) ** 2)
    g = (
        (n + alt) * math.cos(lat) * math.cos(lon),
        (n + alt) * math.cos(lat) * math.sin(lon),
        (n * (1.0 - e2) + alt) * math.sin(lat),
    )
    sl = math.radians(sat_lon_deg)
    s = (GEO_RADIUS_M * math.cos(sl), GEO_RADIUS_M * math.sin(sl), 0.0)
    d = [a - b for a, b in zip(s, g, strict=True)]
    rng = math.sqrt(sum(x * x for x in d))
    up = (math.cos(lat) * math.cos(lon), math.cos(lat) * math.sin(lon), math.sin(lat))
    el = math.degrees(math.asin(sum(u * x for u, x in zip(up, d, strict=True)) / rng))
    return rng, el


def free_space_loss_db(range_m: float, freq_ghz: float) -> float:
    return 20.0 * math.log10(4.0 * math.pi * range_m * freq_ghz * 1e9 / C_M_PER_S)


@functools.lru_cache(maxsize=256)
def atmosphere_db(
    lat: float,
    lon: float,
    freq_ghz: float,
    el: float,
    p_pct: float,
    hs_km: float | None,
    tau: float,
) -> tuple[float, float, float]:
    """(median gaseous attenuation, P.618 rain attenuation at p, total at p) in dB (itur)."""
    import itur  # heavy import (astropy, maps): only when a budget is really computed

    lon360 = lon % 360.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        gas = itur.atmospheric_attenuation_slant_path(
            lat,
            lon360,
            freq_ghz,
            el,
            50.0,
            1.0,
            hs=hs_km,
            tau=tau,
            include_rain=False,
            include_clouds=False,
            include_scintillation=False,
        )
        _, _, rain, _, total = itur.atmospheric_attenuation_slant_path(
            lat,
            lon360,
            freq_ghz,
            el,
            p_pct,
            1.0,
            hs=hs_km,
            tau=tau,
            include_scintillation=False,
            return_contributions=True,
        )
    return float(gas.value), float(rain.value), float(total.value)


def _num(link: dict[str, Any], path: str, required: bool = True) -> float | None:
    node: Any = link
    for k in path.split("."):
        node = node.get(k) if isinstance(node, dict) else None
    if node is None and not required:
        return None
    if isinstance(node, bool) or not isinstance(node, int | float):
        raise ValueError(f"link.{path}: the link budget needs it as a number, got {node!r}")
    return float(node)


def stations(link: dict[str, Any]) -> tuple[float, dict[str, Station]]:
    """The satellite's longitude and the two stations of link.geometry."""
    if not isinstance(link.get("geometry"), dict):
        raise ValueError(
            "link.geometry: the link budget needs the stations and the satellite "
            "(satellite_longitude_deg, gateway and terminal lat_deg/lon_deg)"
        )
    sat = _num(link, "geometry.satellite_longitude_deg")
    st = {
        name: Station(
            _num(link, f"geometry.{name}.lat_deg"),  # type: ignore[arg-type]
            _num(link, f"geometry.{name}.lon_deg"),  # type: ignore[arg-type]
            _num(link, f"geometry.{name}.alt_m", required=False),
        )
        for name in ("gateway", "terminal")
    }
    return sat, st  # type: ignore[return-value]


def _direction(link: dict[str, Any], d: str) -> dict[str, Any]:
    v = link.get(d)
    return v if isinstance(v, dict) else {}


def check(budget: LinkBudget, link: dict[str, Any]) -> None:
    """What can be checked without the ITU-R maps: geometry present, stations seeing the
    satellite at >= 5 deg, no clear_sky_db given twice, no fixed-rate direction."""
    if not budget.directions():
        raise ValueError("link_budget: give forward, return or both")
    sat, st = stations(link)
    for name, s in st.items():
        _, el = slant_range(s, sat)
        if el < MIN_ELEVATION_DEG:
            raise ValueError(
                f"link.geometry.{name}: elevation {el:.2f} deg is below the {MIN_ELEVATION_DEG:g} "
                "deg the link budget's ITU-R models (P.618, P.676) hold from"
            )
    for d, _ in budget.directions():
        dl = _direction(link, d)
        if dl.get("kind") == "fixed":
            raise ValueError(f"link_budget.{d}: link.{d}.kind is fixed, which has no C/N")
        for hop in ("uplink", "downlink"):
            h = dl.get(hop)
            if isinstance(h, dict) and "clear_sky_db" in h:
                raise ValueError(
                    f"link.{d}.{hop}.clear_sky_db: given while link_budget.{d} derives it; "
                    "remove one of them"
                )
        _num(link, f"{d}.symbol_rate_baud", required=False)


@dataclass
class HopRow:
    direction: str
    hop: str
    station: str
    frequency_ghz: float
    elevation_deg: float
    slant_range_km: float
    eirp_dbw: float
    free_space_loss_db: float
    gas_db: float
    other_losses_db: float
    g_over_t_db_per_k: float
    boltzmann_dbw_per_k_hz: float
    symbol_rate_baud: float
    bandwidth_db_hz: float
    clear_sky_db: float
    unavailability_pct: float
    rain_db: float
    atmosphere_db: float
    availability_db: float


@dataclass
class DirectionRow:
    direction: str
    clear_sky_esn0_db: float
    availability_esn0_db: float


def combine_db(a_db: float, b_db: float) -> float:
    """Total C/N of two hops in cascade: 1 / (1/a + 1/b) in linear terms (the emulator's)."""
    return -10.0 * math.log10(10 ** (-a_db / 10.0) + 10 ** (-b_db / 10.0))


def compute(budget: LinkBudget, link: dict[str, Any]) -> tuple[list[HopRow], list[DirectionRow]]:
    check(budget, link)
    sat, st = stations(link)
    p = round(100.0 - budget.availability_pct, 6)
    hops: list[HopRow] = []
    dirs: list[DirectionRow] = []
    for d, db in budget.directions():
        rs = _num(link, f"{d}.symbol_rate_baud", required=False) or DEFAULT_SYMBOL_RATE[d]
        pair = []
        for hop, hb in (("uplink", db.uplink), ("downlink", db.downlink)):
            name = HOP_STATION[(d, hop)]
            s = st[name]
            rng, el = slant_range(s, sat)
            hs = None if s.alt_m is None else s.alt_m / 1000.0
            gas, rain, total = atmosphere_db(
                s.lat_deg, s.lon_deg, hb.frequency_ghz, el, p, hs, hb.polarization_tilt_deg
            )
            fsl = free_space_loss_db(rng, hb.frequency_ghz)
            bw = 10.0 * math.log10(rs)
            cn = (
                hb.eirp_dbw
                - fsl
                - gas
                - hb.other_losses_db
                + hb.g_over_t_db_per_k
                - BOLTZMANN_DB
                - bw
            )
            row = HopRow(
                d,
                hop,
                name,
                hb.frequency_ghz,
                el,
                rng / 1000.0,
                hb.eirp_dbw,
                fsl,
                gas,
                hb.other_losses_db,
                hb.g_over_t_db_per_k,
                BOLTZMANN_DB,
                rs,
                bw,
                cn,
                p,
                rain,
                total,
                cn - max(total - gas, 0.0),
            )
            hops.append(row)
            pair.append(row)
        dirs.append(
            DirectionRow(
                d,
                combine_db(pair[0].clear_sky_db, pair[1].clear_sky_db),
                combine_db(pair[0].availability_db, pair[1].availability_db),
            )
        )
    return hops, dirs


def apply(budget: LinkBudget | None, link: dict[str, Any]) -> dict[str, Any]:
    """The link with each budgeted hop's clear_sky_db filled (rounded to 0.01 dB)."""
    if budget is None:
        return link
    hops, _ = compute(budget, link)
    out = {**link}
    for h in hops:
        lo, hi = CLEAR_SKY_DB
        if not lo <= h.clear_sky_db <= hi:
            raise ValueError(
                f"link_budget.{h.direction}.{h.hop}: clear-sky C/N {h.clear_sky_db:.2f} dB is "
                f"outside the emulator's [{lo:g}, {hi:g}] dB"
            )
        dl = {**_direction(out, h.direction)}
        dl[h.hop] = {**(dl.get(h.hop) or {}), "clear_sky_db": round(h.clear_sky_db, 2)}
        out[h.direction] = dl
    return out


def table(budget: LinkBudget, link: dict[str, Any]) -> dict[str, Any]:
    """The budget as rows (the API's and the CLI's)."""
    hops, dirs = compute(budget, link)
    return {
        "availability_pct": budget.availability_pct,
        "hops": [asdict(h) for h in hops],
        "directions": [asdict(x) for x in dirs],
    }
