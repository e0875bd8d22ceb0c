"""Expectations in the scenario file and their verdicts on comparison documents."""

from typing import Any

import pytest

from satlab.expectations import Expectation, evaluate, point_label
from satlab.scenario import ScenarioError, parse_scenario
from satlab.service.comparisons import compare, verdicts
from satlab.service.results import aggregate_rows

SWEEP = [
    {"path": "link.forward.bit_errors.ber", "values": [1.0e-6, 1.0e-5]},
    {"path": "hosts.settings.rack", "values": [True, False]},
]
CLAIM: dict[str, Any] = {
    "id": "beten-goodput-high-ber",
    "claim": "BETEN's goodput is 2.4-3x NewReno's at BER 1e-5",
    "source": {"paper": "ETEN report (BBN TR 8333)", "section": "5.1", "figure": "Fig. 4"},
    "measure": "ratio(goodput_bps, beten/newreno)",
    "at": {"link.forward.bit_errors.ber": 1.0e-5},
    "band": [2.0, 4.5],
    "direction": ">",
}


def scenario(*claims: dict[str, Any], sweep: Any = SWEEP) -> dict[str, Any]:
    return {
        "name": "t",
        "repetitions": 3,
        "traffic": [{"kind": "bulk_tcp", "bytes": 1000}],
        "configurations": [{"name": "newreno"}, {"name": "beten"}],
        "sweep": sweep,
        "expectations": list(claims),
    }


def rows(goodput: dict[tuple[str, float, bool], list[float | None]]) -> list[dict[str, Any]]:
    """Aggregate rows from each (configuration, ber, rack)'s repetitions' goodput (None: failed)."""
    return aggregate_rows(
        (cfg, [ber, rack], None if g is None else {"goodput_bps": g})
        for (cfg, ber, rack), gs in goodput.items()
        for g in gs
    )


def measured(ratio_at_high_ber: float) -> list[dict[str, Any]]:
    data: dict[tuple[str, float, bool], list[float | None]] = {}
    for ber in (1.0e-6, 1.0e-5):
        for rack in (True, False):
            base = [10e6, 11e6, 9e6]
            r = ratio_at_high_ber if ber == 1.0e-5 else 1.0
            data[("newreno", ber, rack)] = list(base)
            data[("beten", ber, rack)] = [g * r for g in base]
    return rows(data)


def judge(claim: dict[str, Any], data: list[dict[str, Any]]) -> dict[str, Any]:
    sc = parse_scenario(scenario(claim))
    (v,) = verdicts(data, sc.model_dump(mode="json"))
    return v


def test_the_verdict_is_holds_direction_or_fails_by_band_and_side() -> None:
    v = judge(CLAIM, measured(2.5))
    assert v["verdict"] == "holds" and v["mean"] == pytest.approx(2.5) and v["n"] == 3
    assert v["ci"][0] <= 2.5 <= v["ci"][1]  # the Fieller interval of the ratio
    assert "ber=1e-05, rack=true" in v["note"] and "ber=1e-05, rack=false" in v["note"]
    assert set(v) == {
        "id", "claim", "source", "measure", "at", "band", "direction", "neutral", "verdict",
        "mean", "ci", "n", "note", "linux_note",
    }  # fmt: skip
    assert v["neutral"] == 1.0 and v["source"]["figure"] == "Fig. 4"
    assert judge(CLAIM, measured(1.4))["verdict"] == "direction"  # above 1, below the band
    assert judge(CLAIM, measured(0.8))["verdict"] == "fails"
    # Without `at` every point must hold: at BER 1e-6 the ratio is 1, outside the band.
    everywhere = {k: v for k, v in CLAIM.items() if k != "at"}
    assert judge(everywhere, measured(2.5))["verdict"] == "fails"
    # A mean: neutral 0, its interval mean +- half-width.
    mean = {**everywhere, "measure": "mean(goodput_bps, newreno)", "band": [9e6, 11e6]}
    v = judge(mean, measured(2.5))
    assert v["verdict"] == "holds" and v["neutral"] == 0.0
    assert v["ci"] == pytest.approx([10e6 - v["ci"][1] + 10e6, v["ci"][1]])


def test_missing_results_are_no_data() -> None:
    data = measured(2.5)
    for r in data:
        if r["configuration"] == "beten":
            r["metrics"]["goodput_bps"].update(mean=None, half_width=None, n=0, values=[])
    v = judge(CLAIM, data)
    assert v["verdict"] == "no-data" and v["mean"] is None and v["ci"] is None
    assert "no value" in v["note"]
    # The experiment ran one configuration only (a --config subset).
    only = [r for r in measured(2.5) if r["configuration"] == "newreno"]
    assert judge(CLAIM, only)["verdict"] == "no-data"
    # Runs that failed are no-data even when a point also fails elsewhere: fails decides.
    failed = rows(
        {
            ("newreno", 1.0e-5, True): [None],
            ("beten", 1.0e-5, True): [None],
            ("newreno", 1.0e-5, False): [10e6, 10e6],
            ("beten", 1.0e-5, False): [5e6, 5e6],
        }
    )
    assert judge(CLAIM, failed)["verdict"] == "fails"
    assert judge({**CLAIM, "band": [0.1, 4.5]}, failed)["verdict"] == "no-data"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"measure": "ratio(goodput, beten/newreno)"}, "metric 'goodput' is not one of"),
        ({"measure": "ratio(goodput_bps, beten)"}, "ratio needs CONFIG/BASELINE"),
        ({"measure": "ratio(goodput_bps, bbr/newreno)"}, "expectations.0.measure: 'bbr' is not a"),
        (
            {"measure": "ratio(goodput_bps, beten/newreno, sweep=1e-5)"},
            "give the sweep point as `at`",
        ),
        ({"at": {"forward.bit_errors.ber": 1e-5}}, "expectations.0.at.forward.bit_errors.ber: not"),
        ({"at": {"link.forward.bit_errors.ber": 2e-5}}, "2e-05 is not one of the sweep's values"),
        ({"band": [3.0, 2.0]}, "expectations.0: Value error, band: [3.0, 2.0] must be finite"),
        ({"band": [0.2, 0.9]}, "lies below neutral 1.0, not '>'"),
        ({"id": "Bad_Id"}, "expectations.0.id: String should match pattern"),
        ({"verdict": "holds"}, "expectations.0.verdict: Extra inputs are not permitted"),
        ({"source": {"paper": ""}}, "expectations.0.source.paper: String should have at least"),
    ],
)
def test_bad_expectations_name_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(scenario({**CLAIM, **change}))
    assert message in str(exc.value)


def test_ids_are_unique() -> None:
    with pytest.raises(ScenarioError, match="expectations.1.id: 'beten-goodput-high-ber' is used"):
        parse_scenario(scenario(CLAIM, CLAIM))


def test_expect_selects_a_point_of_two_dimensions() -> None:
    sc = parse_scenario(scenario())
    data = measured(2.5)

    cmp = compare(data, "newreno")
    e = Expectation.parse("ratio(goodput_bps, beten/newreno, sweep=[1e-5, false]) >= 2.4")
    assert e.sweep == "[1e-5, false]"
    ok, note = evaluate(e, cmp)
    assert ok and note.count("holds") == 1 and "False" in note
    assert not evaluate(Expectation.parse("ratio(goodput_bps, beten/newreno) >= 2.4"), cmp)[0]
    assert not evaluate(
        Expectation.parse("ratio(goodput_bps, beten/newreno, sweep=[1e-4, false]) >= 1"), cmp
    )[0]
    assert point_label([d.path for d in sc.sweeps()], [1e-5, False]) == "ber=1e-05, rack=false"
