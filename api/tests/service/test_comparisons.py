"""The statistics of results and comparisons (pure functions)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from satlab.service import comparisons, results


def test_fieller_matches_a_simulation_and_the_delta_method_for_tight_baselines() -> None:
    a, b = [15.0, 15.5, 14.8, 15.2], [10.0, 10.2, 9.9, 10.1]
    f = comparisons.fieller(a, b)
    assert f["ratio"] == pytest.approx(np.mean(a) / np.mean(b))
    assert f["low"] is not None and f["high"] is not None
    assert f["low"] < f["ratio"] < f["high"]
    # Delta method: se(R) = R sqrt(va/ma^2 + vb/mb^2); close to Fieller when g is small.
    ma, mb = np.mean(a), np.mean(b)
    va, vb = np.var(a, ddof=1) / 4, np.var(b, ddof=1) / 4
    r = ma / mb
    se = r * math.sqrt(va / ma**2 + vb / mb**2)
    t = 3.182446305284263  # t_{0.975, 3}
    assert f["low"] == pytest.approx(r - t * se, rel=0.01)
    assert f["high"] == pytest.approx(r + t * se, rel=0.01)


def test_fieller_edges() -> None:
    assert comparisons.fieller([1.0], [2.0]) == {"ratio": 0.5, "low": None, "high": None}
    assert comparisons.fieller([], [2.0])["ratio"] is None
    assert comparisons.fieller([1.0, 2.0], [0.0, 0.0])["ratio"] is None
    # A baseline indistinguishable from zero: unbounded interval.
    f = comparisons.fieller([5.0, 6.0], [-1.0, 1.1])
    assert f["low"] is None and f["high"] is None


def test_welch_difference() -> None:
    d = comparisons.welch_difference([2.0, 2.1, 1.9], [1.0, 1.1, 0.9])
    assert d["difference"] == pytest.approx(1.0)
    assert d["low"] is not None and d["high"] is not None and d["low"] < 1.0 < d["high"]


def test_jain() -> None:
    assert results.jain([1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert results.jain([1.0, 0.0]) == pytest.approx(0.5)
    assert results.jain([5.0]) is None


def test_pack_roundtrip_is_float32() -> None:
    blob = results.pack([0.0, 0.1, 1e6, math.nan])
    assert len(blob) == 16
    back = results.unpack(blob)
    assert back[1] == pytest.approx(0.1, rel=1e-6) and math.isnan(back[3])


def test_compare_rejects_unknown_baseline_and_metric() -> None:
    rows = [
        {
            "configuration": "a",
            "sweep_value": None,
            "runs": 1,
            "succeeded": 1,
            "metrics": {
                m: {"mean": 1.0, "half_width": None, "n": 1, "values": [1.0]}
                for m in results.METRICS
            },
        },
    ]
    from satlab.service.errors import Invalid

    with pytest.raises(Invalid, match="baseline:"):
        comparisons.compare(rows, "zzz")
    with pytest.raises(Invalid, match="metric:"):
        comparisons.compare(rows, "a", ["speed"])
    out = comparisons.compare(rows, "a", ["goodput_bps"])
    assert out["points"][0]["configurations"][0]["metrics"]["goodput_bps"]["ratio"] == 1.0
