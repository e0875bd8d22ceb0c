"""Sweeps over any scenario field in up to two dimensions, and the reproduction section."""

from typing import Any

import pytest

from satlab.scenario import (
    MAX_SWEEP_POINTS,
    ScenarioError,
    apply_subset,
    expand_runs,
    parse_scenario,
    sweep_record,
)

BASE: dict[str, Any] = {
    "name": "t",
    "seed": 7,
    "repetitions": 2,
    "traffic": [{"kind": "bulk_tcp", "bytes": 1000}],
    "configurations": [
        {"name": "cubic"},
        {"name": "reno", "transport": {"congestion_control": "reno"}},
    ],
}
TWO_D = [
    {"path": "link.forward.bit_errors.ber", "values": [1.0e-6, 1.0e-5]},
    {"path": "hosts.settings.rack", "values": [True, False]},
]


def scenario(**over: Any) -> dict[str, Any]:
    return {**BASE, **over}


def test_two_dimensions_expand_to_the_product_with_one_seed_per_repetition() -> None:
    sc = parse_scenario(scenario(sweep=TWO_D))
    runs = expand_runs(sc)
    assert len(runs) == 2 * 2 * 2 * 2  # configurations x ber x rack x repetitions
    points = [[1.0e-6, True], [1.0e-6, False], [1.0e-5, True], [1.0e-5, False]]
    assert [r.sweep_value for r in runs if r.repetition == 0][::2] == points
    for rep in range(2):  # every configuration and point of a repetition: one seed
        assert {r.seed for r in runs if r.repetition == rep} == {7 + rep}
    for r in runs:
        assert r.scenario is not None
        ber, rack = r.sweep_value  # type: ignore[misc]
        assert r.link == {"forward": {"bit_errors": {"ber": ber}}} == r.scenario.link
        assert r.scenario.hosts.settings.rack is rack
        assert r.scenario.sweep is None and r.scenario.expectations == []
    assert sweep_record(sc, [1.0e-6, True]) == {
        "paths": ["link.forward.bit_errors.ber", "hosts.settings.rack"],
        "value": [1.0e-6, True],
    }


def test_the_v1_form_still_sweeps_inside_link() -> None:
    sc = parse_scenario(
        scenario(repetitions=1, sweep={"path": "forward.bit_errors.ber", "values": [0, 1e-6]})
    )
    runs = expand_runs(sc)
    assert [r.sweep_value for r in runs] == [0, 0, 1e-6, 1e-6]
    assert runs[-1].link == {"forward": {"bit_errors": {"ber": 1e-6}}}
    assert sweep_record(sc, 0) == {"path": "forward.bit_errors.ber", "value": 0}


def test_sweeps_of_hosts_traffic_configurations_and_duration_reach_the_run() -> None:
    sc = parse_scenario(
        scenario(
            repetitions=1,
            sweep=[
                {"path": "traffic.0.bytes", "values": [5000, 9000]},
                {"path": "configurations.1.transport.ecn_ld_k", "values": [3, 4]},
            ],
        )
    )
    runs = expand_runs(sc)
    by_cfg = {(r.configuration.name, r.sweep_value[0], r.sweep_value[1]): r for r in runs}  # type: ignore[index]
    reno = by_cfg[("reno", 9000, 4)]
    assert reno.scenario is not None and reno.scenario.traffic[0].bytes == 9000  # type: ignore[union-attr]
    assert reno.configuration.transport.ecn_ld_k == 4
    # A configuration field applies to that configuration only.
    assert by_cfg[("cubic", 9000, 4)].configuration.transport.ecn_ld_k == 2
    runs = expand_runs(parse_scenario(scenario(sweep={"path": "duration_s", "values": [5, 8]})))
    assert sorted({r.scenario.duration_s for r in runs if r.scenario}) == [5, 8]


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (
            [TWO_D[0], {"path": "hosts.settings.rak", "values": [True]}],
            "sweep.1.path: hosts.settings.rak names no field of the scenario",
        ),
        (
            {"path": "traffic.3.bytes", "values": [5]},
            "sweep.path: traffic.3: no item 3 (the list has 1)",
        ),
        (
            {"path": "hosts.mtu_bytes.x", "values": [5]},
            "sweep.path: hosts.mtu_bytes.x goes through hosts.mtu_bytes, which is 1500",
        ),
        (
            {"path": "configurations.0.gateway.eten.enabled", "values": [True]},
            "goes through configurations.0.gateway, which is null",
        ),
        ({"path": "repetitions", "values": [2]}, "repetitions cannot be swept"),
        ({"path": "configurations.0.name", "values": ["x"]}, "cannot be swept"),
        (
            [TWO_D[1], {"path": "hosts.settings", "values": [1]}],
            "sweep.1.path: hosts.settings overlaps sweep.0.path",
        ),
        ({"path": "hosts.settings.rack", "values": [True, True]}, "sweep.values.1: True is there"),
    ],
)
def test_bad_sweep_paths_name_the_sweep_and_the_field(sweep: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(scenario(sweep=sweep))
    assert message in str(exc.value)


def test_every_value_is_validated_by_the_run_scenario() -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(
            scenario(sweep=[TWO_D[0], {"path": "hosts.settings.rack", "values": [True, False, 3]}])
        )
    assert "sweep.1.values.2: hosts.settings.rack: Input should be a valid boolean" in str(
        exc.value
    )
    with pytest.raises(ScenarioError, match=r"sweep.values.0: duration_s: Input should be greater"):
        parse_scenario(scenario(sweep={"path": "duration_s", "values": [-1]}))
    # Values that parse alone but not together name both.
    with pytest.raises(ScenarioError, match=r"sweep.0.values.1, sweep.1.values.1: .*timestamps"):
        parse_scenario(
            scenario(
                hosts={"settings": {"timestamps": False}},
                configurations=[
                    {"name": "a"},
                    {"name": "b", "gateway": {"ern": {"enabled": True}}},
                ],
                sweep=[
                    {"path": "hosts.settings.timestamps", "values": [False, True]},
                    {
                        "path": "configurations.1.transport.congestion_control",
                        "values": ["cubic", "sl_ern"],
                    },
                ],
            )
        )


def test_the_number_of_points_is_bounded() -> None:
    sweep = [
        {"path": "traffic.0.bytes", "values": list(range(1, 12))},
        {"path": "duration_s", "values": list(range(1, 11))},
    ]
    with pytest.raises(
        ScenarioError, match=f"11 x 10 = 110 points exceed the limit of {MAX_SWEEP_POINTS}"
    ):
        parse_scenario(scenario(sweep=sweep))
    with pytest.raises(ScenarioError, match="sweep: Value error, give 1 to 2 dimensions, not 3"):
        parse_scenario(scenario(sweep=[*TWO_D, {"path": "duration_s", "values": [1]}]))


def test_reproduction_ci_subset() -> None:
    claim = {
        "id": "rack-helps",
        "claim": "RACK helps",
        "source": {"paper": "product"},
        "measure": "ratio(goodput_bps, reno/cubic)",
        "band": [1.0, 2.0],
    }
    sc = parse_scenario(
        scenario(
            sweep=TWO_D,
            duration_s=30,
            expectations=[
                {**claim, "at": {"link.forward.bit_errors.ber": 1.0e-5}},
                {**claim, "id": "low-ber", "at": {"link.forward.bit_errors.ber": 1.0e-6}},
            ],
            reproduction={
                "paper": "product",
                "ci": {
                    "duration_s": 8,
                    "repetitions": 1,
                    "sweep_values": {"link.forward.bit_errors.ber": [1.0e-5]},
                },
            },
        )
    )
    ci = apply_subset(sc, "ci")
    assert ci.duration_s == 8 and ci.repetitions == 1
    assert [d.values for d in ci.sweeps()] == [[1.0e-5], [True, False]]
    assert [e.id for e in ci.expectations] == ["rack-helps"]  # low-ber's point is not run
    assert len(expand_runs(ci)) == 2 * 2
    with pytest.raises(ScenarioError, match="is not in the CI subset"):
        apply_subset(parse_scenario(scenario()), "ci")


@pytest.mark.parametrize(
    ("reproduction", "message"),
    [
        ({"paper": "eten2"}, "reproduction.paper: Input should be 'eten'"),
        ({"paper": "eten", "ci": {"repetitions": 11}}, "reproduction.ci.repetitions: Input should"),
        ({"paper": "eten", "ci": {"duration_s": 0}}, "reproduction.ci.duration_s: Input should"),
        (
            {"paper": "eten", "ci": {"sweep_values": {"forward.bit_errors.ber": [1e-5]}}},
            "reproduction.ci.sweep_values.forward.bit_errors.ber: not a sweep path as written",
        ),
        (
            {"paper": "eten", "ci": {"sweep_values": {"link.forward.bit_errors.ber": [3e-5]}}},
            "3e-05 is not one of the sweep's values",
        ),
    ],
)
def test_bad_reproduction_sections_name_the_field(reproduction: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(scenario(sweep=TWO_D, reproduction=reproduction))
    assert message in str(exc.value)
