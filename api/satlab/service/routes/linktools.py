"""The operator's link tools: a scenario's link budget, a site's weather trace (previewed, and
stored as an upload if asked), a modem log imported as a trace (satlab.linkbudget, weather,
modemlog; the CLI's `satlab budget` and `satlab trace ...` do the same)."""

from __future__ import annotations

from typing import Any, Literal

import yaml
from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, model_validator

from satlab import db, linkbudget, modemlog, weather
from satlab.scenario import ScenarioError, parse_scenario
from satlab.service import files
from satlab.service.auth import Principal, Submitter
from satlab.service.errors import Invalid, link_model_answers
from satlab.service.schemas import FileOut, ScenarioIn

router = APIRouter(prefix="/api", tags=["link tools"])

MAX_PREVIEW_TICKS = 200_000  # duration_s / step_ms of one synthesis
MAX_LOG_BYTES = 5 << 20


class BudgetOut(BaseModel):
    availability_pct: float
    hops: list[linkbudget.HopRow]  # the module's row types: one definition of each column
    directions: list[linkbudget.DirectionRow]


class TraceSynthIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lat: float = Field(ge=-90, le=90, description="station latitude, deg")
    lon: float = Field(ge=-180, le=180, description="station longitude, deg east")
    freq_ghz: float = Field(ge=4, le=55, description="P.1853: 4-55 GHz")
    elevation_deg: float = Field(ge=5, le=90, description="P.1853: 5-90 deg")
    duration_s: float = Field(gt=0, le=86_400, description="trace length")
    step_ms: int = Field(1000, ge=10, le=3_600_000, description="tick (= attenuation.tick_ms)")
    seed: int = Field(1, ge=0, le=2**63 - 1)
    model: Literal["independent", "combined"] = Field(
        "independent",
        description="independent: rain (+ clouds, scintillation) summed; combined: ITU-R "
        "P.1853-2 section 3 by itur (whole-second steps, at most 86400 s; ~10 s, ~1.2 GB)",
    )
    clouds: bool = False
    scintillation: bool = False
    antenna_diameter_m: float = Field(1.2, ge=0.1, le=30, description="for scintillation")
    tau_deg: float = Field(45, ge=0, le=90, description="polarisation tilt (45: circular)")
    store_as: str | None = Field(
        None, max_length=200, description="also store the trace as an attenuation upload"
    )

    @model_validator(mode="after")
    def _ticks(self) -> TraceSynthIn:
        n = int(round(self.duration_s * 1000 / self.step_ms)) + 1
        if n > MAX_PREVIEW_TICKS:
            raise ValueError(
                f"duration_s: {self.duration_s:g} s at step_ms {self.step_ms} is {n} ticks, over "
                f"the limit of {MAX_PREVIEW_TICKS} (use a longer step or the CLI)"
            )
        return self


class ExceedanceOut(BaseModel):
    p_pct: float
    site_rain_db: float
    trace_rain_db: float
    trace_total_db: float
    site_total_db: float | None = Field(
        None, description="combined model: P.618 total attenuation less the median gases"
    )


class TraceStatsOut(BaseModel):
    rain_rate_001_mm_h: float
    p_rain_pct: float
    trace_rain_pct: float
    trace_duration_s: float
    trace_max_db: float
    clamped_ticks: int
    exceedances: list[ExceedanceOut]


class TraceOut(BaseModel):
    header: list[str]
    ticks: int
    step_ms: int
    values_db: list[float] = Field(description="one value per tick (the trace's data lines)")
    statistics: TraceStatsOut | None = None
    clear_sky_db: float | None = Field(None, description="modem logs: downlink clear sky to set")
    uplink_db: float | None = Field(None, description="modem logs: uplink clear sky to set")
    file: FileOut | None = None


class ModemLogIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    csv: str = Field(max_length=MAX_LOG_BYTES, description="the log (satlab.modemlog columns)")
    step_ms: int = Field(100, ge=1, le=3_600_000)
    max_gap_s: float = Field(10, gt=0, le=86_400)
    uplink_db: float = Field(60, ge=-20, le=60)
    clear_sky_db: float | None = Field(None, ge=-20, le=60)
    margin_db: float = Field(0, ge=0, le=20, description="ACM margin, for modcod logs")
    modcod_set: Literal["dvbs2", "dvbs2x"] = Field(
        "dvbs2", description="the embedded MODCOD table of a modcod log (the link's modcod_set)"
    )
    store_as: str | None = Field(None, max_length=200)


def _store(who: Principal, name: str | None, text: str) -> FileOut | None:
    if name is None:
        return None
    with db.new_session() as session:
        return FileOut.of(files.upload(session, who, name, "attenuation", text.encode()))


@router.post("/link-budget", response_model=BudgetOut, summary="A scenario's link budget table")
def link_budget(_: Submitter, body: ScenarioIn) -> BudgetOut:
    try:
        data = yaml.safe_load(body.yaml)
        sc = parse_scenario(data)
    except yaml.YAMLError as err:
        raise Invalid(f"yaml: not valid YAML: {err}") from None
    except ScenarioError as err:
        raise Invalid(str(err)) from None
    if sc.link_budget is None:
        raise Invalid("link_budget: the scenario has no link_budget section")
    try:
        return BudgetOut.model_validate(linkbudget.table(sc.link_budget, sc.link))
    except ValueError as err:
        raise Invalid(str(err)) from None


@router.post(
    "/traces/synth",
    response_model=TraceOut,
    summary="Synthesise a site's ITU-R P.1853 weather trace (preview; optionally stored)",
)
def synth_trace(who: Submitter, body: TraceSynthIn) -> TraceOut:
    site = weather.Site(
        body.lat,
        body.lon,
        body.freq_ghz,
        body.elevation_deg,
        body.tau_deg,
        None,
        body.antenna_diameter_m,
    )
    try:
        s = weather.synthesize(
            site,
            body.duration_s,
            body.step_ms,
            body.seed,
            body.clouds,
            body.scintillation,
            model=body.model,
        )
    except ValueError as err:
        raise Invalid(str(err)) from None
    stats: dict[str, Any] = weather.statistics(s)
    return TraceOut(
        header=s.header(),
        ticks=len(s.values_db),
        step_ms=s.step_ms,
        values_db=[round(float(v), 4) for v in s.values_db],
        statistics=TraceStatsOut.model_validate(stats),
        file=_store(who, body.store_as, s.text()),
    )


@router.post(
    "/traces/modem-log",
    response_model=TraceOut,
    summary="Import a modem's Es/N0 or MODCOD log as an attenuation trace (optionally stored)",
)
def import_modem_log(who: Submitter, body: ModemLogIn) -> TraceOut:
    try:
        with link_model_answers():  # the MODCOD table is read by the link model
            log = modemlog.parse(body.csv, body.margin_db, None, body.max_gap_s, body.modcod_set)
        imp = modemlog.to_trace(log, body.step_ms, body.clear_sky_db, body.uplink_db)
    except modemlog.LogError as err:
        raise Invalid(f"csv: {err}" if str(err).startswith("line") else str(err)) from None
    return TraceOut(
        header=imp.header,
        ticks=len(imp.values_db),
        step_ms=imp.step_ms,
        values_db=[float(v) for v in imp.values_db],
        clear_sky_db=imp.clear_sky_db,
        uplink_db=imp.uplink_db,
        file=_store(who, body.store_as, imp.text()),
    )
