"""Aggregation over repetitions: mean with a Student-t 95% confidence interval."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from scipy import stats


@dataclass(frozen=True)
class Estimate:
    mean: float
    half_width: float | None  # None with a single sample: no interval can be given
    n: int

    def format(self, scale: float = 1.0, digits: int = 2) -> str:
        if self.n == 0:
            return "-"
        m = self.mean / scale
        if self.half_width is None:
            return f"{m:.{digits}f}"
        return f"{m:.{digits}f} ± {self.half_width / scale:.{digits}f}"


def mean_ci95(values: list[float]) -> Estimate:
    n = len(values)
    if n == 0:
        return Estimate(math.nan, None, 0)
    mean = sum(values) / n
    if n == 1:
        return Estimate(mean, None, 1)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    return Estimate(mean, t975(n - 1) * sd / math.sqrt(n), n)


@lru_cache(maxsize=1024)
def t975(df: int) -> float:
    """Student's t 97.5 % quantile; cached, since scipy's ppf costs about 100 us a call and a
    comparison document needs one per configuration, metric and point (make bench-api)."""
    return float(stats.t.ppf(0.975, df))
