"""tests/compose/parity.py, the backend parity comparison the compose smoke test runs: intervals,
agreement, the metrics it reads from a result document, and its table."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "parity", Path(__file__).resolve().parents[1] / "compose" / "parity.py"
)
assert _spec and _spec.loader
parity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(parity)


def test_interval_is_the_t_interval() -> None:
    mean, half = parity.interval([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert math.isclose(half, 4.303 * 1.0 / math.sqrt(3))
    with pytest.raises(ValueError, match="repetitions: 1"):
        parity.interval([5.0])
    # a count is at least as spread as a Poisson one: equal counts give no zero-width interval
    assert parity.interval([3.0, 3.0, 3.0]) == (3.0, 0.0)
    assert math.isclose(parity.interval([3.0, 3.0, 3.0], count=True)[1], 4.303)


def test_agree_when_intervals_overlap_only() -> None:
    assert parity.agree([10.0, 11.0, 12.0], [11.5, 12.5, 13.5])
    assert not parity.agree([10.0, 10.1, 9.9], [20.0, 20.1, 19.9])


def result(goodput: float, corruption: int, congestion: int, accepted: int) -> dict:
    stats = {"accepted": accepted, "loss_corruption": corruption, "loss_congestion": congestion}
    return {
        "flows": [{"goodput_bps": goodput}],
        "endhosts": {
            "srv1": {"beten": {"cc": "x", "stats": stats}},
            "cli1": {"ceten": {"cc": "y", "stats": {"options_parsed": 999}}},
        },
    }


def test_metrics_reads_the_senders_counters() -> None:
    m = parity.metrics(result(1e6, 3, 4, 50))
    assert m == {"goodput_bps": 1e6, "loss_corruption": 3, "loss_congestion": 4, "notices": 50}
    assert parity.metrics({"flows": [{"goodput_bps": 2.0}]}) == {"goodput_bps": 2.0}


def test_compare_and_table() -> None:
    left = {"beten": [parity.metrics(result(1e6 + i, 3 + i, 1, 50 + i)) for i in range(3)]}
    right = {"beten": [parity.metrics(result(1e6 - i, 3 + i, 1, 150 + i)) for i in range(3)]}
    rows = parity.compare(left, right)
    by_metric = {r["metric"]: r["agree"] for r in rows}
    assert by_metric == {
        "goodput_bps": True,
        "loss_congestion": True,
        "loss_corruption": True,
        "notices": False,
    }
    text = parity.table(rows)
    assert "| beten | notices | 51 ± 18 | 151 ± 31 | NO |" in text


def test_compare_refuses_what_one_side_lacks() -> None:
    full = [parity.metrics(result(1e6, 1, 1, 5))] * 2
    bare = [{"goodput_bps": 1e6}] * 2
    with pytest.raises(ValueError, match="beten: loss_congestion missing"):
        parity.compare({"beten": full}, {"beten": bare})
    with pytest.raises(ValueError, match="configurations"):
        parity.compare({"beten": full}, {"pep": full})
    with pytest.raises(ValueError, match="run pep: boom"):
        parity.by_configuration([{"configuration": "pep", "status": "failed", "error": "boom"}])
