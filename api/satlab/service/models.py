"""The PostgreSQL schema (SQLAlchemy 2 typed models); migrations live in api/alembic/.

Scenarios have immutable revisions (the YAML kept verbatim and its parsed, validated form); an
experiment points at one revision and pins the uploaded files it uses; a run is one configuration
x sweep value x repetition of an experiment; its result, time series and artifacts hang off it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    func,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from satlab.db import Base

ROLES = ("viewer", "submitter", "admin")
RUN_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
EXPERIMENT_STATES = ("queued", "running", "succeeded", "failed", "cancelled")
FILE_KINDS = ("attenuation", "delay", "modcod", "per")
BOX_ROLES = ("server", "client", "gw", "emu", "st", "hop")  # a hardware box's part in a testbed


def _now() -> Mapped[datetime]:
    return mapped_column(DateTime(timezone=True), server_default=func.now(), nullable=False)


def _in(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


class ApiToken(Base):
    __tablename__ = "api_tokens"
    __table_args__ = (CheckConstraint(_in("role", ROLES), name="role"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(16))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the token
    # Scenario-name patterns (fnmatch) the token may use; null = every scenario.
    scope: Mapped[list[str] | None] = mapped_column(JSONB)
    rate_limit_per_min: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = _now()
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Scenario(Base):
    __tablename__ = "scenarios"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = _now()
    created_by: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    revisions: Mapped[list[ScenarioRevision]] = relationship(
        back_populates="scenario",
        order_by="ScenarioRevision.number",
        cascade="all, delete-orphan",
        passive_deletes=True,
    )


class ScenarioRevision(Base):
    """Never updated: a revise makes the next number."""

    __tablename__ = "scenario_revisions"
    __table_args__ = (UniqueConstraint("scenario_id", "number", name="uq_revision_number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    scenario_id: Mapped[int] = mapped_column(ForeignKey("scenarios.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    yaml: Mapped[str] = mapped_column(Text)  # verbatim, comments and all
    spec: Mapped[dict[str, Any]] = mapped_column(JSONB)  # validated, defaults filled in
    # name -> sha256 of every file its links name, as validated (NULL: stored before pins).
    files: Mapped[dict[str, str] | None] = mapped_column(JSONB, nullable=True)
    created_at: Mapped[datetime] = _now()
    created_by: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    scenario: Mapped[Scenario] = relationship(back_populates="revisions")


class UploadedFile(Base):
    """Attenuation traces, delay files, MODCOD and PER tables. Immutable: the same name uploaded
    again with other content is a new row; experiments pin the row they used."""

    __tablename__ = "files"
    __table_args__ = (
        UniqueConstraint("name", "sha256", name="uq_files_name_sha256"),
        CheckConstraint(_in("kind", FILE_KINDS), name="kind"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)
    kind: Mapped[str] = mapped_column(String(16))
    size_bytes: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = _now()
    created_by: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))


class Experiment(Base):
    __tablename__ = "experiments"
    __table_args__ = (
        UniqueConstraint("created_by", "idempotency_key", name="uq_experiments_idempotency"),
        CheckConstraint(_in("state", EXPERIMENT_STATES), name="state"),
        Index("ix_experiments_state_id", "state", "id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    revision_id: Mapped[int] = mapped_column(ForeignKey("scenario_revisions.id"), index=True)
    scenario_name: Mapped[str] = mapped_column(String(64), index=True)
    # The matrix as submitted: configurations, sweep {path, values}, repetitions.
    matrix: Mapped[dict[str, Any]] = mapped_column(JSONB)
    # The scenario the runs execute (revision spec with the matrix overrides applied).
    scenario_spec: Mapped[dict[str, Any]] = mapped_column(JSONB)
    files: Mapped[dict[str, int]] = mapped_column(JSONB)  # link file name -> files.id, pinned
    idempotency_key: Mapped[str | None] = mapped_column(String(200))
    priority: Mapped[int] = mapped_column(Integer, default=0)
    state: Mapped[str] = mapped_column(String(16), default="queued")
    estimate_s: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = _now()
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    created_by: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    runs: Mapped[list[Run]] = relationship(
        back_populates="experiment", order_by="Run.index", passive_deletes=True
    )


class Run(Base):
    """queued -> running -> succeeded | failed; queued | running -> cancelled;
    running -> queued again when its worker died and attempt < max_attempts; failed -> queued by
    an explicit retry."""

    __tablename__ = "runs"
    __table_args__ = (
        CheckConstraint(_in("state", RUN_STATES), name="state"),
        UniqueConstraint("experiment_id", "index", name="uq_runs_experiment_index"),
        Index("ix_runs_state_heartbeat", "state", "heartbeat_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    index: Mapped[int] = mapped_column(Integer)  # position in the matrix, 0-based
    configuration: Mapped[str] = mapped_column(String(40))
    sweep_value: Mapped[Any] = mapped_column(JSONB)  # a scalar, [v1, v2] (two dimensions) or null
    repetition: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(BigInteger)
    spec: Mapped[dict[str, Any]] = mapped_column(JSONB)  # satlab.scenario.RunSpec
    state: Mapped[str] = mapped_column(String(16), default="queued", index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    job_id: Mapped[int | None] = mapped_column(BigInteger)  # the procrastinate job
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker_id: Mapped[str | None] = mapped_column(String(200))  # host:pid
    worker_host: Mapped[str | None] = mapped_column(String(200))
    testbed_id: Mapped[str | None] = mapped_column(String(16))
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    queued_at: Mapped[datetime] = _now()
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(Text)
    # Headline metrics of the run (first flow's goodput, completion, retransmissions).
    summary: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    experiment: Mapped[Experiment] = relationship(back_populates="runs")


class Result(Base):
    """The run result document (docs/run-result.md) without its time series."""

    __tablename__ = "results"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    document: Mapped[dict[str, Any]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()


class Series(Base):
    """One time series of one run, stored compactly: little-endian float32 arrays of times (s since
    the senders started) and values."""

    __tablename__ = "series"
    __table_args__ = (UniqueConstraint("run_id", "name", name="uq_series_run_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))  # tcp.srv1:43210-5001.cwnd, link.forward.modcod
    n: Mapped[int] = mapped_column(Integer)
    t: Mapped[bytes] = mapped_column(LargeBinary)
    v: Mapped[bytes] = mapped_column(LargeBinary)


class Artifact(Base):
    __tablename__ = "artifacts"
    __table_args__ = (UniqueConstraint("run_id", "name", name="uq_artifacts_run_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(200))
    content_type: Mapped[str] = mapped_column(String(100))
    size_bytes: Mapped[int] = mapped_column(Integer)
    content: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = _now()


class LiveMetrics(Base):
    """The newest Prometheus scrape of a running run's emulator, gateways and PEPs
    (service/live_metrics.py); the row goes when the run ends."""

    __tablename__ = "live_metrics"

    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    scraped_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    targets: Mapped[list[dict[str, str]]] = mapped_column(JSONB)  # [{component, box, text}]


class RunEvent(Base):
    """Progress of runs (state changes and current metrics) for live views; the worker writes one
    row and a NOTIFY on channel satlab_events per change, at most every heartbeat while running."""

    __tablename__ = "run_events"
    __table_args__ = (Index("ix_run_events_experiment_id", "experiment_id", "id"),)

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    experiment_id: Mapped[int] = mapped_column(ForeignKey("experiments.id", ondelete="CASCADE"))
    at: Mapped[datetime] = _now()
    state: Mapped[str] = mapped_column(String(16))
    progress: Mapped[float] = mapped_column(Float, default=0.0)
    message: Mapped[str] = mapped_column(Text, default="")
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


class ControlRequest(Base):
    """A live control command for a running run's emulator, carried out by the run's worker."""

    __tablename__ = "control_requests"
    __table_args__ = (Index("ix_control_requests_run_pending", "run_id", "state"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    body: Mapped[dict[str, Any]] = mapped_column(JSONB)
    state: Mapped[str] = mapped_column(String(16), default="pending")  # pending | done | failed
    status_code: Mapped[int | None] = mapped_column(Integer)
    response: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()
    created_by: Mapped[int | None] = mapped_column(ForeignKey("api_tokens.id", ondelete="SET NULL"))
    done_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Worker(Base):
    """Workers that have started (for liveness in the metrics and the janitor's report)."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)  # host:pid
    host: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime] = _now()
    heartbeat_at: Mapped[datetime] = _now()
    current_run_id: Mapped[int | None] = mapped_column(ForeignKey("runs.id", ondelete="SET NULL"))
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class Box(Base):
    """A registered machine of the hardware testbed (satlab.service.boxes)."""

    __tablename__ = "boxes"
    __table_args__ = (CheckConstraint(_in("role", BOX_ROLES), name="role"),)

    name: Mapped[str] = mapped_column(String(63), primary_key=True)
    role: Mapped[str] = mapped_column(String(16))
    address: Mapped[str] = mapped_column(String(300))  # host:port of its agent (mutual TLS)
    interfaces: Mapped[list[str]] = mapped_column(JSONB)
    created_at: Mapped[datetime] = _now()
