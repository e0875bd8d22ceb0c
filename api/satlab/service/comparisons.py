"""Each configuration against a chosen baseline, per sweep point.

For a metric with repetition values a_1..a_n (configuration) and b_1..b_m (baseline), the
estimate is the ratio of means R = mean(a) / mean(b) with a 95% Fieller interval for independent
samples (the repetitions of different configurations are separate runs; they share the channel
seed but not the flows, so no covariance is assumed):

    va = s_a^2 / n,  vb = s_b^2 / m,  t = t_{0.975, min(n, m) - 1},  g = t^2 vb / mean(b)^2
    interval = (R -+ (t / |mean(b)|) sqrt(va (1 - g) + R^2 vb)) / (1 - g)

When g >= 1 the baseline's mean is not distinguishable from 0 and the interval is unbounded
(returned as null bounds); with fewer than 2 repetitions on either side there is no interval.
Taking the smaller sample's degrees of freedom is conservative against Welch-Satterthwaite.
The difference of means with a Welch interval is given too.

Sweep points are keyed by the runs' sweep_value: a scalar for one dimension, the list of both
values for two. `verdicts` judges the scenario's expectations (satlab.expectations) on these
comparisons.
"""

from __future__ import annotations

import math
from typing import Any

from scipy import stats as sstats

from satlab import expectations
from satlab.metrics import METRICS
from satlab.service.errors import Invalid
from satlab.stats import t975


def _mean_var(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    m = sum(xs) / n
    var = sum((x - m) ** 2 for x in xs) / (n - 1) if n > 1 else math.nan
    return m, var


def fieller(a: list[float], b: list[float]) -> dict[str, float | None]:
    if not a or not b:
        return {"ratio": None, "low": None, "high": None}
    ma, sa2 = _mean_var(a)
    mb, sb2 = _mean_var(b)
    if mb == 0:
        return {"ratio": None, "low": None, "high": None}
    r = ma / mb
    if len(a) < 2 or len(b) < 2:
        return {"ratio": r, "low": None, "high": None}
    va, vb = sa2 / len(a), sb2 / len(b)
    t = t975(min(len(a), len(b)) - 1)
    g = t * t * vb / (mb * mb)
    if g >= 1:
        return {"ratio": r, "low": None, "high": None}
    half = (t / abs(mb)) * math.sqrt(max(0.0, va * (1 - g) + r * r * vb))
    return {"ratio": r, "low": (r - half) / (1 - g), "high": (r + half) / (1 - g)}


def welch_difference(a: list[float], b: list[float]) -> dict[str, float | None]:
    if not a or not b:
        return {"difference": None, "low": None, "high": None}
    ma, sa2 = _mean_var(a)
    mb, sb2 = _mean_var(b)
    d = ma - mb
    if len(a) < 2 or len(b) < 2:
        return {"difference": d, "low": None, "high": None}
    va, vb = sa2 / len(a), sb2 / len(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"difference": d, "low": d, "high": d}
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    t = float(sstats.t.ppf(0.975, df))
    return {"difference": d, "low": d - t * se, "high": d + t * se}


def compare(
    rows: list[dict[str, Any]], baseline: str, metrics: list[str] | None = None
) -> dict[str, Any]:
    """rows: results.aggregate output. Per sweep point, every configuration vs the baseline."""
    metrics = metrics or list(METRICS)
    bad = [m for m in metrics if m not in METRICS]
    if bad:
        raise Invalid(f"metric: {', '.join(bad)} unknown (one of {', '.join(METRICS)})")
    configs = list(dict.fromkeys(r["configuration"] for r in rows))
    if baseline not in configs:
        raise Invalid(f"baseline: {baseline!r} is not a configuration ({', '.join(configs)})")
    points: list[dict[str, Any]] = []
    by_point: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_point.setdefault(repr(r["sweep_value"]), []).append(r)
    for group in by_point.values():
        base = next((r for r in group if r["configuration"] == baseline), None)
        entries = []
        for r in group:
            cmp_metrics: dict[str, Any] = {}
            for m in metrics:
                a = r["metrics"][m]["values"]
                b = base["metrics"][m]["values"] if base else []
                cmp_metrics[m] = {
                    "mean": r["metrics"][m]["mean"],
                    "half_width": r["metrics"][m]["half_width"],
                    "n": r["metrics"][m]["n"],
                    "baseline_mean": base["metrics"][m]["mean"] if base else None,
                    **fieller(a, b),
                    "difference": welch_difference(a, b),
                }
            entries.append(
                {
                    "configuration": r["configuration"],
                    "succeeded": r["succeeded"],
                    "metrics": cmp_metrics,
                }
            )
        points.append({"sweep_value": group[0]["sweep_value"], "configurations": entries})
    return {"baseline": baseline, "metrics": metrics, "points": points}


def verdicts(rows: list[dict[str, Any]], spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The expectations of `spec` (an experiment's scenario as data) judged on `rows`
    (results.aggregate): one comparison per baseline the measures name."""
    specs = [expectations.ExpectationSpec.model_validate(e) for e in spec.get("expectations") or []]
    sweep = spec.get("sweep")
    paths = [d["path"] for d in (sweep if isinstance(sweep, list) else [sweep] if sweep else [])]
    configs = list(dict.fromkeys(r["configuration"] for r in rows))

    def comparison_for(baseline: str | None) -> dict[str, Any] | None:
        base = baseline or (configs[0] if configs else None)
        if base is None or base not in configs:
            return None
        return compare(rows, base)

    return expectations.verdicts(specs, paths, comparison_for)
