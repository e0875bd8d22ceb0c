"""Request and response bodies of the REST API (what the OpenAPI spec and the web client see)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from satlab.scenario import Configuration, SweepValue
from satlab.service import models

T = TypeVar("T")


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


class RevisionOut(BaseModel):
    id: int
    scenario_id: int
    number: int
    created_at: datetime
    created_by: int | None
    spec: dict[str, Any]
    files: dict[str, str] | None = Field(
        None, description="name -> sha256 of each file its links name, as validated"
    )

    @classmethod
    def of(cls, r: models.ScenarioRevision) -> RevisionOut:
        return cls(
            id=r.id,
            scenario_id=r.scenario_id,
            number=r.number,
            created_at=r.created_at,
            created_by=r.created_by,
            spec=r.spec,
            files=r.files,
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
        return cls(
            id=s.id,
            name=s.name,
            created_at=s.created_at,
            created_by=s.created_by,
            revisions=len(s.revisions),
            latest=RevisionOut.of(s.revisions[-1]) if s.revisions else None,
        )


class FileOut(BaseModel):
    id: int
    name: str
    kind: str
    size_bytes: int
    sha256: str
    created_at: datetime

    @classmethod
    def of(cls, f: models.UploadedFile) -> FileOut:
        return cls(
            id=f.id,
            name=f.name,
            kind=f.kind,
            size_bytes=f.size_bytes,
            sha256=f.sha256,
            created_at=f.created_at,
        )


class Estimate(BaseModel):
    runs: int
    duration_s: float
    overhead_s: float
    overhead_source: str
    per_run_s: float
    total_s: float


class RunOut(BaseModel):
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

    @classmethod
    def of(cls, r: models.Run) -> RunOut:
        return cls(
            id=r.id,
            experiment_id=r.experiment_id,
            index=r.index,
            configuration=r.configuration,
            sweep_value=r.sweep_value,
            repetition=r.repetition,
            seed=r.seed,
            state=r.state,
            attempt=r.attempt,
            progress=r.progress,
            worker_id=r.worker_id,
            testbed_id=r.testbed_id,
            heartbeat_at=r.heartbeat_at,
            queued_at=r.queued_at,
            started_at=r.started_at,
            finished_at=r.finished_at,
            cancel_requested=r.cancel_requested,
            error=r.error,
            summary=r.summary,
        )


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
        return cls(
            id=e.id,
            scenario_name=e.scenario_name,
            revision_id=e.revision_id,
            matrix=e.matrix,
            priority=e.priority,
            state=e.state,
            estimate_s=e.estimate_s,
            idempotency_key=e.idempotency_key,
            created_at=e.created_at,
            finished_at=e.finished_at,
            created_by=e.created_by,
            files=e.files or {},
            runs_by_state=counts,
            runs=[RunOut.of(r) for r in e.runs] if with_runs else None,
        )


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


class TokenOut(BaseModel):
    id: int
    name: str
    role: str
    scope: list[str] | None
    rate_limit_per_min: int | None
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, t: models.ApiToken) -> TokenOut:
        return cls(
            id=t.id,
            name=t.name,
            role=t.role,
            scope=t.scope,
            rate_limit_per_min=t.rate_limit_per_min,
            created_at=t.created_at,
            expires_at=t.expires_at,
            last_used_at=t.last_used_at,
            revoked_at=t.revoked_at,
        )


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
