"""Response bodies of the result endpoints (/results, /comparison, /series, /artifacts), so that
the OpenAPI spec, and the web client generated from it, describe them. Built from what
satlab.service.results and satlab.service.comparisons return."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from satlab.scenario import SweepCoordinate, SweepValue


class MetricAggregate(BaseModel):
    mean: float | None = Field(description="mean over the successful repetitions")
    half_width: float | None = Field(description="half-width of the Student-t 95% interval")
    n: int
    values: list[float] = Field(description="the value of every successful repetition")


class AggregateRow(BaseModel):
    configuration: str
    sweep_value: SweepValue
    runs: int
    succeeded: int
    metrics: dict[str, MetricAggregate] = Field(description="by metric (results.METRICS)")


class ResultsOut(BaseModel):
    experiment_id: int
    rows: list[AggregateRow]


class Difference(BaseModel):
    difference: float | None = Field(description="mean minus the baseline's mean")
    low: float | None = Field(description="Welch 95% interval")
    high: float | None


class ComparedMetric(BaseModel):
    mean: float | None
    half_width: float | None
    n: int
    baseline_mean: float | None
    ratio: float | None = Field(description="mean over the baseline's mean")
    low: float | None = Field(description="Fieller 95% interval of the ratio (null: unbounded)")
    high: float | None
    difference: Difference


class ComparedConfiguration(BaseModel):
    configuration: str
    succeeded: int
    metrics: dict[str, ComparedMetric]


class ComparisonPoint(BaseModel):
    sweep_value: SweepValue
    configurations: list[ComparedConfiguration]


class ComparisonOut(BaseModel):
    experiment_id: int
    state: str
    baseline: str
    metrics: list[str]
    points: list[ComparisonPoint]


class SeriesInfo(BaseModel):
    name: str = Field(description="`link.<direction>.<field>` or `tcp.<host>:<sport>-<dport>.<f>`")
    points: int


class Bucket(BaseModel):
    t0: float
    t1: float
    n: int
    min: float
    max: float
    mean: float


class SeriesBuckets(BaseModel):
    run_id: int
    name: str
    points: int
    buckets: list[Bucket] = Field(description="equal-width time buckets holding samples")


class ArtifactInfo(BaseModel):
    name: str
    content_type: str
    size_bytes: int


class VerdictOut(BaseModel):
    """One scenario expectation judged on the comparison (satlab.expectations)."""

    id: str
    claim: str
    source: dict[str, str] = Field(description="paper, and section, figure or table if given")
    measure: str = Field(description="FUNC(METRIC, CONFIG[/BASELINE])")
    at: dict[str, SweepCoordinate] | None = Field(description="the sweep point; null: every point")
    band: list[float] = Field(description="[low, high]: the claim holds when the mean lies in it")
    direction: Literal[">", "<"] | None
    neutral: float | None
    verdict: Literal["holds", "direction", "fails", "no-data"]
    mean: float | None = Field(description="the measured mean at the deciding point")
    ci: list[float] | None = Field(description="its 95% interval [low, high]; null: none")
    n: int = Field(description="repetitions behind it (the smaller side of a ratio)")
    note: str = Field(description="the value at every point judged, or why there is none")
    linux_note: str | None
