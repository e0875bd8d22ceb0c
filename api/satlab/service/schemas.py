"""Request and response bodies of the REST API (what the OpenAPI spec and the web client see)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from satlab import contention
from satlab.scenario import Configuration, SweepValue
from satlab.service import models

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def _from_row(cls: type[M], row: object, **computed: Any) -> M:
    """`cls` from a database row: each field from the row's attribute of that name, except the
    `computed` ones (only those attributes are left unread, so no relationship loads for them)."""
    read = {name: getattr(row, name) for name in cls.model_fields if name not in computed}
    return cls.model_validate({**read, **computed})


class RowOut(BaseModel):
    """A response whose fields are all read from the database row's attributes of those names."""

    @classmethod
    def of(cls, row: object) -> Self:
        return cls.model_validate(row, from_attributes=True)


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int
    limit: int
    offset: int


class Problem(BaseModel):
    detail: str
    errors: list[str] = Field(default_factory=list, description="`field: reason` lines (422)")


class ScenarioIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    yaml: str = Field(description="the scenario document, kept verbatim", max_length=1 << 20)


class RevisionOut(RowOut):  # of models.ScenarioRevision
    id: int
    scenario_id: int
    number: int
    created_at: datetime
    created_by: int | None
    spec: dict[str, Any]
    files: dict[str, str] | None = Field(
        None, description="name -> sha256 of each file its links name, as validated"
    )


class ScenarioOut(BaseModel):
    id: int
    name: str
    created_at: datetime
    created_by: int | None
    revisions: int
    latest: RevisionOut | None

    @classmethod
    def of(cls, s: models.Scenario) -> ScenarioOut:
        latest = RevisionOut.of(s.revisions[-1]) if s.revisions else None
        return _from_row(cls, s, revisions=len(s.revisions), latest=latest)


class FileOut(RowOut):  # of models.UploadedFile
    id: int
    name: str
    kind: str
    size_bytes: int
    sha256: str
    created_at: datetime


class Estimate(BaseModel):
    runs: int
    duration_s: float
    overhead_s: float
    overhead_source: str
    per_run_s: float
    total_s: float


class RunOut(RowOut):  # of models.Run
    id: int
    experiment_id: int
    index: int
    configuration: str
    sweep_value: SweepValue = Field(description="one dimension: the value; two: [v1, v2]")
    repetition: int
    seed: int
    state: str
    attempt: int
    progress: float
    worker_id: str | None
    testbed_id: str | None
    heartbeat_at: datetime | None
    queued_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    cancel_requested: bool
    error: str | None
    summary: dict[str, float | None] | None
    return_contention: bool = Field(
        description="the run's return link has DAMA contention access (link.return.dama."
        "contention): its beam terminals' contention split is in the heartbeats' status, the "
        "stored series and the result's `contention`"
    )

    @classmethod
    def of(cls, row: object) -> Self:
        """The row's fields, and whether its link (the run's spec) has contention access."""
        if not isinstance(row, models.Run):
            raise TypeError(f"RunOut of a {type(row).__name__}, not of a run")
        return _from_row(cls, row, return_contention=contention.configured(row.spec["link"]))


class ExperimentOut(BaseModel):
    id: int
    scenario_name: str
    revision_id: int
    matrix: dict[str, Any]
    priority: int
    state: str
    estimate_s: float
    idempotency_key: str | None
    created_at: datetime
    finished_at: datetime | None
    created_by: int | None
    files: dict[str, int] = Field(
        default_factory=dict, description="name -> id of each upload its runs use (pinned)"
    )
    runs_by_state: dict[str, int]
    runs: list[RunOut] | None = None

    @classmethod
    def of(
        cls, e: models.Experiment, counts: dict[str, int], with_runs: bool = False
    ) -> ExperimentOut:
        runs = [RunOut.of(r) for r in e.runs] if with_runs else None
        return _from_row(cls, e, files=e.files or {}, runs_by_state=counts, runs=runs)


class SubmitOut(BaseModel):
    experiment: ExperimentOut
    estimate: Estimate | None
    created: bool


class PlanOut(BaseModel):
    scenario: str
    revision: int
    runs: list[dict[str, Any]]
    estimate: Estimate


class TokenIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=100)
    role: Literal["viewer", "submitter", "admin"]
    scope: list[str] | None = Field(
        None, max_length=50, description="scenario-name patterns (fnmatch) the token may use"
    )
    rate_limit_per_min: int | None = Field(None, ge=1, le=100_000)
    expires_in_days: float | None = Field(None, gt=0, le=3650)


class TokenOut(RowOut):  # of models.ApiToken
    id: int
    name: str
    role: str
    scope: list[str] | None
    rate_limit_per_min: int | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="shown once; only its SHA-256 is stored")


class WhoAmI(BaseModel):
    id: int
    name: str
    role: str
    scope: list[str] | None
    rate_limit_per_min: int


class ControlOut(BaseModel):
    request_id: int
    status_code: int | None
    response: dict[str, Any] | None


class SchemeOut(BaseModel):
    """A transport scheme of the catalogue (satlab.catalog)."""

    name: str
    label: str
    description: str
    paper_section: str | None = Field(description="the part of the paper it implements")
    configuration: Configuration = Field(description="a scenario `configurations[]` item")
    host_settings: dict[str, Any] = Field(
        default_factory=dict,
        description="hosts.settings the scheme needs in the scenario (e.g. timestamps off)",
    )
