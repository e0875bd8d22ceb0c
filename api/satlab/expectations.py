"""Expectations: a claim about a comparison, and its verdict once the runs have results.

One grammar of measures, `FUNC(METRIC, CONFIG[/BASELINE])`, serves two forms:

- `--expect` (satlab submit/wait), a CI gate that holds or not at every selected sweep point:

      FUNC(METRIC, CONFIG[/BASELINE][, sweep=V]) OP NUMBER
      FUNC: mean | ratio | ratio_low | ratio_high   (ratio_* are the 95% Fieller bounds)
      OP:   >= > <= < == !=
      sweep=V selects one point of a one-dimensional sweep, sweep=[V1, V2] one of two dimensions

- a scenario's `expectations:` (ExpectationSpec): a paper's claim as data, with its source, the
  measure, the sweep point `at`, the `band` that counts as reproducing it and the claimed
  `direction` against `neutral`. Its verdict (`verdicts`) is one of
      holds      the measured mean lies in the band,
      direction  it does not, but lies on the claimed side of neutral (the claim holds in
                 direction only),
      fails      neither,
      no-data    the point, the configuration or the value is missing (failed runs, a point the
                 experiment did not run, a ratio whose baseline mean is 0).
  Without `at` every sweep point must satisfy it and the worst point decides (fails, then no-data,
  then direction).

Both read a comparison document (satlab.service.comparisons.compare): per sweep point and
configuration the mean with its Student-t 95% half-width over the repetitions, and against the
baseline the ratio of means with its 95% Fieller interval. A verdict's `ci` is that interval:
mean +- half-width for `mean`, the Fieller bounds for `ratio` (null while unbounded or with fewer
than two repetitions a side), none for `ratio_low`/`ratio_high` (they are bounds already).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from satlab.metrics import METRICS

FUNCS = ("mean", "ratio", "ratio_low", "ratio_high")
# The comparison's field each function reads.
FIELD = {"mean": "mean", "ratio": "ratio", "ratio_low": "low", "ratio_high": "high"}
CONFIG_NAME = r"[A-Za-z0-9_.+-]+"
MEASURE = (
    r"(?P<func>mean|ratio|ratio_low|ratio_high)\s*\(\s*(?P<metric>[a-z_]+)\s*,\s*"
    rf"(?P<config>{CONFIG_NAME})\s*(?:/\s*(?P<base>{CONFIG_NAME})\s*)?"
    r"(?:,\s*sweep\s*=\s*(?P<sweep>[^)]+?)\s*)?\)"
)
MEASURE_RE = re.compile(rf"^\s*{MEASURE}\s*$")
EXPECT_RE = re.compile(rf"^\s*{MEASURE}\s*(?P<op>>=|<=|==|!=|>|<)\s*(?P<value>[-+0-9.eE]+)\s*$")
OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}
Verdict = Literal["holds", "direction", "fails", "no-data"]
# The worst verdict of several points decides (a measured failure outweighs a missing point).
SEVERITY: dict[str, int] = {"holds": 0, "direction": 1, "no-data": 2, "fails": 3}


class ExpectationError(ValueError):
    """An expectation that cannot be read; the message quotes it."""


@dataclass
class Expectation:
    """One `--expect` expression."""

    text: str
    func: str
    metric: str
    config: str
    baseline: str | None
    sweep: str | None
    op: str
    value: float

    @classmethod
    def parse(cls, text: str) -> Expectation:
        m = EXPECT_RE.match(text)
        if not m:
            raise ExpectationError(
                f"--expect {text!r}: expected FUNC(METRIC, CONFIG[/BASELINE][, sweep=V]) OP NUMBER"
            )
        if m["func"] != "mean" and not m["base"]:
            raise ExpectationError(f"--expect {text!r}: {m['func']} needs CONFIG/BASELINE")
        try:
            value = float(m["value"])
        except ValueError:
            raise ExpectationError(f"--expect {text!r}: {m['value']!r} is not a number") from None
        return cls(text, m["func"], m["metric"], m["config"], m["base"], m["sweep"], m["op"], value)


def _same_text(want: str, got: Any) -> bool:
    """A selector's text against one coordinate of a point."""
    try:
        return math.isclose(float(want), float(got), rel_tol=1e-9)
    except (TypeError, ValueError):
        if isinstance(got, bool):
            return want.lower() == str(got).lower()
        return str(got) == want


def same_sweep(want: str, got: Any) -> bool:
    """`sweep=V` against a point's sweep_value; `sweep=[V1, V2]` against a two-dimensional one."""
    if want.startswith("[") and want.endswith("]"):
        parts = [p.strip() for p in want[1:-1].split(",")]
        return (
            isinstance(got, list)
            and len(got) == len(parts)
            and all(_same_text(w, g) for w, g in zip(parts, got, strict=True))
        )
    return _same_text(want, got)


def same_value(want: Any, got: Any) -> bool:
    """Two sweep coordinates from YAML/JSON: numbers to 1e-9 relative, the rest exactly."""
    if isinstance(want, bool) or isinstance(got, bool):
        return want is got
    if isinstance(want, int | float) and isinstance(got, int | float):
        return math.isclose(float(want), float(got), rel_tol=1e-9)
    return bool(want == got)


def evaluate(e: Expectation, comparison: dict[str, Any]) -> tuple[bool, str]:
    """Whether an `--expect` expression holds at every point it selects, and why."""
    field = FIELD[e.func]
    points = [
        p for p in comparison["points"] if e.sweep is None or same_sweep(e.sweep, p["sweep_value"])
    ]
    if not points:
        return False, f"no sweep point {e.sweep}"
    notes = []
    ok = True
    for p in points:
        entry = next((c for c in p["configurations"] if c["configuration"] == e.config), None)
        where = "" if p["sweep_value"] is None else f" at sweep={p['sweep_value']}"
        if entry is None:
            return False, f"no configuration {e.config!r}"
        if e.metric not in entry["metrics"]:
            return False, f"unknown metric {e.metric!r}"
        v = entry["metrics"][e.metric][field]
        if v is None:
            ok = False
            notes.append(f"{e.func}{where}: no value (failed runs, or too few repetitions)")
            continue
        held = OPS[e.op](float(v), e.value)
        ok = ok and held
        notes.append(f"{e.func}{where} = {float(v):.4g} {'holds' if held else 'FAILS'}")
    return ok, "; ".join(notes)


# -- expectations in the scenario file --


@dataclass
class Measure:
    func: str
    metric: str
    config: str
    baseline: str | None

    @classmethod
    def parse(cls, text: str) -> Measure:
        m = MEASURE_RE.match(text)
        if not m:
            raise ValueError(f"{text!r}: expected FUNC(METRIC, CONFIG[/BASELINE])")
        if m["sweep"] is not None:
            raise ValueError(f"{text!r}: give the sweep point as `at`, not sweep=")
        if m["func"] != "mean" and not m["base"]:
            raise ValueError(f"{text!r}: {m['func']} needs CONFIG/BASELINE")
        if m["metric"] not in METRICS:
            raise ValueError(f"{text!r}: metric {m['metric']!r} is not one of {', '.join(METRICS)}")
        return cls(m["func"], m["metric"], m["config"], m["base"])

    def configurations(self) -> list[str]:
        return [self.config] + ([self.baseline] if self.baseline else [])


class Source(BaseModel):
    """Where the claim is made: the paper by title or report number, and the place in it."""

    model_config = ConfigDict(extra="forbid")

    paper: str = Field(min_length=1, max_length=200, examples=["ETEN report (BBN TR 8333)"])
    section: str | None = Field(None, max_length=40)
    figure: str | None = Field(None, max_length=40)
    table: str | None = Field(None, max_length=40)


SweepCoordinate = bool | int | float | str


class ExpectationSpec(BaseModel):
    """A claim of a paper (or of the product) as data; its verdict is computed on the comparison."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.-]{0,63}$", description="unique in the scenario")
    claim: str = Field(min_length=1, max_length=500, description="the paper's statement")
    source: Source
    measure: str = Field(
        max_length=200,
        description="FUNC(METRIC, CONFIG[/BASELINE]) as in `--expect`; FUNC: mean, ratio, "
        "ratio_low, ratio_high",
        examples=["ratio(goodput_bps, beten/newreno)"],
    )
    at: dict[str, SweepCoordinate] | None = Field(
        None,
        max_length=2,
        description="the sweep point, by sweep path as written; absent: every point must satisfy "
        "the claim (a path left out: every value of that dimension)",
    )
    band: tuple[float, float] = Field(
        description="[low, high]: the claim holds when the measured mean lies in it"
    )
    direction: Literal[">", "<"] | None = Field(
        None, description="the claim's side of `neutral`; absent: only holds or fails"
    )
    neutral: float | None = Field(None, description="default 1.0 for ratio*, 0.0 for mean")
    linux_note: str | None = Field(
        None, max_length=2000, description="where Linux TCP differs from the paper's setup"
    )

    @field_validator("measure")
    @classmethod
    def _measure(cls, v: str) -> str:
        Measure.parse(v)
        return v

    @model_validator(mode="after")
    def _band_and_side(self) -> ExpectationSpec:
        low, high = self.band
        if not (math.isfinite(low) and math.isfinite(high)) or low > high:
            raise ValueError(f"band: [{low}, {high}] must be finite with low <= high")
        if self.neutral is None:
            self.neutral = 0.0 if Measure.parse(self.measure).func == "mean" else 1.0
        if self.direction == ">" and high <= self.neutral:
            raise ValueError(f"band: [{low}, {high}] lies below neutral {self.neutral}, not '>'")
        if self.direction == "<" and low >= self.neutral:
            raise ValueError(f"band: [{low}, {high}] lies above neutral {self.neutral}, not '<'")
        return self


def point_label(paths: list[str], value: Any) -> str:
    """`ber=1e-05, rack=false`: each dimension by the last key of its path."""
    if not paths:
        return "(no sweep)"
    coords = value if len(paths) > 1 and isinstance(value, list) else [value]
    return ", ".join(
        f"{p.rsplit('.', 1)[-1]}={str(v).lower() if isinstance(v, bool) else v}"
        for p, v in zip(paths, coords, strict=False)
    )


def _in_point(spec: ExpectationSpec, paths: list[str], value: Any) -> bool:
    if not spec.at:
        return True
    coords = value if len(paths) > 1 and isinstance(value, list) else [value]
    return all(
        k in paths and same_value(want, coords[paths.index(k)]) for k, want in spec.at.items()
    )


def _classify(spec: ExpectationSpec, mean: float) -> str:
    low, high = spec.band
    if low <= mean <= high:
        return "holds"
    neutral = spec.neutral if spec.neutral is not None else 0.0
    if (spec.direction == ">" and mean > neutral) or (spec.direction == "<" and mean < neutral):
        return "direction"
    return "fails"


def _at_point(
    spec: ExpectationSpec, m: Measure, point: dict[str, Any]
) -> tuple[str, float | None, list[float] | None, int, str]:
    """(verdict, mean, ci, n, reason) at one comparison point."""
    entries = {c["configuration"]: c for c in point["configurations"]}
    missing = [c for c in m.configurations() if c not in entries]
    if missing:
        return "no-data", None, None, 0, f"no runs of {', '.join(missing)}"
    x = entries[m.config]["metrics"][m.metric]
    n = int(x["n"])
    if m.baseline:
        n = min(n, int(entries[m.baseline]["metrics"][m.metric]["n"]))
    value = x[FIELD[m.func]]
    if value is None:
        return "no-data", None, None, n, "no value (failed runs, too few repetitions, or 0 base)"
    ci: list[float] | None = None
    if m.func == "mean" and x["half_width"] is not None:
        ci = [value - x["half_width"], value + x["half_width"]]
    elif m.func == "ratio" and x["low"] is not None and x["high"] is not None:
        ci = [x["low"], x["high"]]
    return _classify(spec, float(value)), float(value), ci, n, ""


def verdict(
    spec: ExpectationSpec,
    paths: list[str],
    comparison_for: Callable[[str | None], dict[str, Any] | None],
) -> dict[str, Any]:
    """The verdict of one expectation. `paths`: the scenario's sweep paths as written;
    `comparison_for(baseline)`: the comparison against that baseline (None: any baseline), or
    None when the experiment has no runs of it."""
    m = Measure.parse(spec.measure)
    out: dict[str, Any] = {
        "id": spec.id,
        "claim": spec.claim,
        "source": spec.source.model_dump(exclude_none=True),
        "measure": spec.measure,
        "at": spec.at,
        "band": list(spec.band),
        "direction": spec.direction,
        "neutral": spec.neutral,
        "verdict": "no-data",
        "mean": None,
        "ci": None,
        "n": 0,
        "note": "",
        "linux_note": spec.linux_note,
    }
    doc = comparison_for(m.baseline)
    if doc is None:
        out["note"] = f"the experiment has no runs of {m.baseline or m.config}"
        return out
    points = [p for p in doc["points"] if _in_point(spec, paths, p["sweep_value"])]
    if not points:
        out["note"] = "the experiment has no results at this sweep point"
        return out
    worst: tuple[str, float | None, list[float] | None, int, str] | None = None
    notes = []
    for p in points:
        got = _at_point(spec, m, p)
        where = point_label(paths, p["sweep_value"]) + ": " if paths else ""
        if got[1] is None:
            notes.append(f"{where}{got[4]}")
        else:
            ci = "" if got[2] is None else f" [{got[2][0]:.4g}, {got[2][1]:.4g}]"
            notes.append(f"{where}{got[1]:.4g}{ci} (n={got[3]}) {got[0]}")
        if worst is None or SEVERITY[got[0]] > SEVERITY[worst[0]]:
            worst = got
    assert worst is not None
    out.update(verdict=worst[0], mean=worst[1], ci=worst[2], n=worst[3], note="; ".join(notes))
    return out


def verdicts(
    specs: list[ExpectationSpec],
    paths: list[str],
    comparison_for: Callable[[str | None], dict[str, Any] | None],
) -> list[dict[str, Any]]:
    """Every expectation's verdict; each baseline's comparison is asked for once."""
    cache: dict[str | None, dict[str, Any] | None] = {}

    def cached(baseline: str | None) -> dict[str, Any] | None:
        if baseline not in cache:
            cache[baseline] = comparison_for(baseline)
        return cache[baseline]

    return [verdict(s, paths, cached) for s in specs]
