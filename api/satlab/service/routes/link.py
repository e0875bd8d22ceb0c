"""What the link model computes for the UI: the MODCOD table and a trace's preview on a forward
link (satlab.linkmodel asks the emulator binary; no copy of the arithmetic here or in the web)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from satlab import linkmodel
from satlab.service.auth import Viewer
from satlab.service.errors import link_model_answers

router = APIRouter(prefix="/api/link", tags=["link tools"])

MAX_TRACE_CHARS = 4 << 20  # 200 000 ticks (the model's preview limit) of "<tick> <dB>" lines

Table = Literal["dvbs2", "dvbs2x"]


class ModcodOut(BaseModel):
    id: int
    name: str
    modulation: str
    rate: str
    efficiency: float = Field(description="bit/symbol (EN 302 307-1 Table 13, no pilots)")
    esn0_db: float = Field(description="required Es/N0 (QEF), dB")
    useful_bits_per_frame: int | None = Field(description="normal frame: K_bch - BBHEADER")
    frame_symbols_pilots: int | None
    frame_symbols_no_pilots: int | None


class PreviewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str = Field(
        max_length=MAX_TRACE_CHARS, description="attenuation trace: `<tick> <dB>` lines"
    )
    tick_ms: float = Field(1000, gt=0, le=3_600_000)
    symbol_rate_baud: float = Field(gt=0, le=1e10)
    clear_sky_up_db: float = Field(ge=-20, le=60)
    clear_sky_down_db: float = Field(ge=-20, le=60)
    margin_db: float = Field(0, ge=0, le=20)
    pilots: bool = True
    table: Table = "dvbs2"


class PreviewOut(BaseModel):
    """One value per tick 0..last tick of the trace (the ACM loop's feedback delay not applied)."""

    modcods: list[ModcodOut] = Field(description="the table the MODCOD ids refer to")
    t_s: list[float]
    attenuation_db: list[float]
    esn0_db: list[float]
    modcod: list[int]
    rate_bps: list[float] = Field(description="the MODCOD's data-field rate")


@router.get("/modcods", response_model=list[ModcodOut], summary="A MODCOD table (link model)")
def modcods(_: Viewer, table: Annotated[Table, Query()] = "dvbs2") -> list[ModcodOut]:
    with link_model_answers(field="table"):
        return [ModcodOut.model_validate(r) for r in linkmodel.modcods(table)]


@router.post(
    "/preview",
    response_model=PreviewOut,
    summary="A trace's attenuation, Es/N0, MODCOD and useful rate per tick on a forward link",
)
def preview(_: Viewer, body: PreviewIn) -> PreviewOut:
    with link_model_answers():  # the model names the field: "trace: line N: ..."
        rows = linkmodel.modcods(body.table)
        per_tick = linkmodel.preview(body.model_dump())
    return PreviewOut.model_validate({"modcods": rows, **per_tick})
