"""Reproductions of the source papers: submit the repository's reproduction scenarios for the
server's commit, and the assembled report (satlab/reproduce/service.py)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from satlab.db import get_session
from satlab.reproduce import service as reproductions
from satlab.reproduce.selection import PAPERS
from satlab.reproduce.version import commit as server_commit
from satlab.service.auth import Submitter, Viewer

router = APIRouter(prefix="/api/reproductions", tags=["reproductions"])
DB = Annotated[Session, Depends(get_session)]
Paper = Literal["eten", "ipern", "garcia", "yang", "ecn", "product"]
assert set(Paper.__args__) == set(PAPERS)  # type: ignore[attr-defined]


class ReproductionIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subset: Literal["ci", "full"] = Field(
        "ci", description="ci: the scenarios with `reproduction.ci`, shrunk; full: as written"
    )
    paper: Paper | None = Field(None, description="only this paper's scenarios")
    claim: str | None = Field(
        None, pattern=r"^[a-z0-9][a-z0-9.-]{0,63}$", description="only the scenario of this claim"
    )


class SubmittedOut(BaseModel):
    scenario: str
    experiment_id: int
    created: bool
    runs: int
    estimate_s: float


class ReproductionOut(BaseModel):
    commit: str
    subset: str
    experiments: list[SubmittedOut]
    estimate_s: float = Field(description="the estimates of the experiments created now")


class ClaimOut(BaseModel):
    id: str
    paper: str
    source: str | None
    section: str | None
    figure: str | None
    statement: str | None
    measure: str | None
    point: dict[str, Any] | None
    band: list[float] | None
    direction: str | None
    neutral: float | None
    mean: float | None
    ci: list[float] | None
    n: int | None
    verdict: Literal["holds", "direction", "fails", "no-data"]
    note: str | None
    linux_note: str | None
    scenario: str
    subset: str
    seeds: list[int]
    experiment_id: int | None
    results_dir: str | None
    versions: dict[str, str | None]


class SummaryOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    holds: int
    direction: int
    fails: int
    no_data: int = Field(alias="no-data")
    total: int


class ReportOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    report_schema: str = Field(alias="schema")
    commit: str
    generated_at: str
    summary: SummaryOut
    claims: list[ClaimOut]
    parts: list[dict[str, Any]] = Field(
        description="per scenario: subset, commit, time, state, experiment, seeds, versions, "
        "the sweep series plotted and the PFTK model beside NewReno"
    )


@router.post(
    "",
    response_model=ReproductionOut,
    summary="Submit the selected reproduction scenarios for the server's commit (idempotent)",
)
def submit(
    who: Submitter, session: DB, body: ReproductionIn, response: Response
) -> ReproductionOut:
    commit = server_commit()
    made = reproductions.submit(session, who, commit, body.subset, body.paper, body.claim)
    out = [
        SubmittedOut(
            scenario=exp.scenario_name,
            experiment_id=exp.id,
            created=created,
            runs=len(exp.runs),
            estimate_s=exp.estimate_s,
        )
        for exp, created in made
    ]
    response.status_code = 201 if any(s.created for s in out) else 200
    return ReproductionOut(
        commit=commit,
        subset=body.subset,
        experiments=out,
        estimate_s=sum(s.estimate_s for s in out if s.created),
    )


@router.get(
    "/latest",
    response_model=ReportOut,
    response_model_by_alias=True,
    summary="The report of the newest commit with reproduction experiments (or of `commit`)",
)
def latest(
    who: Viewer,
    session: DB,
    commit: Annotated[str | None, Query(pattern=r"^[0-9A-Za-z]{1,40}$")] = None,
) -> dict[str, Any]:
    return reproductions.assemble(session, who, commit)
