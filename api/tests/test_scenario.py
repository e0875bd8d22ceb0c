from pathlib import Path

import pytest

from satlab.scenario import ScenarioError, expand_runs, load_scenario, parse_scenario

BASE = {
    "name": "t",
    "traffic": [{"kind": "bulk_tcp", "bytes": 1000}],
    "configurations": [
        {"name": "cubic"},
        {"name": "reno", "transport": {"congestion_control": "reno"}},
    ],
}


def test_a_short_scenario_gets_geo_defaults() -> None:
    sc = parse_scenario(BASE)
    assert sc.hosts.settings.rmem_max_bytes >= 32 << 20  # a GEO bandwidth-delay product fits
    assert sc.repetitions == 1 and sc.sample_period_ms == 100


def test_errors_name_the_field_and_the_limit() -> None:
    bad = {**BASE, "duration_s": 0, "hosts": {"clients": 99}}
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(bad)
    msg = str(exc.value)
    assert "duration_s: Input should be greater than 0" in msg
    assert "hosts.clients: Input should be less than or equal to 16" in msg


def test_unknown_fields_are_rejected_by_name() -> None:
    with pytest.raises(ScenarioError, match="durration_s: Extra inputs are not permitted"):
        parse_scenario({**BASE, "durration_s": 3})


@pytest.mark.parametrize("name", [".", "..", "-rf", "+x", "_x", "a" * 41, "a b"])
def test_configuration_names_start_with_a_letter_or_digit(name: str) -> None:
    bad = {**BASE, "configurations": [{"name": name}]}
    with pytest.raises(ScenarioError, match="configurations.0.name: String should match pattern"):
        parse_scenario(bad)


def test_configuration_names_may_hold_dots_dashes_and_plus() -> None:
    sc = parse_scenario({**BASE, "configurations": [{"name": "pep-beten+1.5"}, {"name": "9_x"}]})
    assert [c.name for c in sc.configurations] == ["pep-beten+1.5", "9_x"]


def test_bulk_needs_exactly_one_stop_rule() -> None:
    with pytest.raises(ScenarioError, match="traffic.0.bulk_tcp: Value error, give exactly one"):
        parse_scenario({**BASE, "traffic": [{"kind": "bulk_tcp", "bytes": 5, "duration_s": 1}]})


def test_traffic_must_reference_existing_hosts() -> None:
    with pytest.raises(ScenarioError, match=r"traffic.0.client: 2 > hosts.clients \(1\)"):
        parse_scenario({**BASE, "traffic": [{"kind": "bulk_tcp", "bytes": 5, "client": 2}]})


def test_runs_pair_configurations_on_the_same_seed() -> None:
    sc = parse_scenario(
        {
            **BASE,
            "repetitions": 3,
            "seed": 10,
            "sweep": {"path": "forward.bit_errors.ber", "values": [0, 1e-6]},
        }
    )
    runs = expand_runs(sc)
    assert len(runs) == 2 * 2 * 3
    for rep in range(3):  # every configuration and sweep point of a repetition: one seed
        assert {r.seed for r in runs if r.repetition == rep} == {10 + rep}
    assert runs[-1].link == {"forward": {"bit_errors": {"ber": 1e-6}}}
    assert sc.link == {}  # expansion never mutates the scenario


def test_load_reports_the_file_on_bad_yaml(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text("name: [unclosed\n")
    with pytest.raises(ScenarioError, match="s.yaml: not valid YAML"):
        load_scenario(f)


def test_shipped_scenarios_are_valid() -> None:
    root = Path(__file__).resolve().parents[2] / "scenarios"
    files = sorted(root.glob("*.yaml"))
    assert files, "scenarios/*.yaml missing"
    for f in files:
        load_scenario(f)


def test_relative_link_files_resolve_against_the_scenario(tmp_path: Path) -> None:
    f = tmp_path / "s.yaml"
    f.write_text(
        "name: t\ntraffic: [{kind: bulk_tcp, bytes: 10}]\nconfigurations: [{name: c}]\n"
        "link: {forward: {downlink: {attenuation: {type: file, file: traces/a.txt}}}}\n"
    )
    sc = load_scenario(f)
    got = sc.link["forward"]["downlink"]["attenuation"]["file"]
    assert got == str(tmp_path / "traces/a.txt")


def _with_traffic(item: dict[str, object], duration_s: float = 10) -> dict[str, object]:
    return {**BASE, "duration_s": duration_s, "traffic": [item]}


@pytest.mark.parametrize(
    "item",
    [
        {"kind": "bulk_tcp", "bytes": 1000},
        {"kind": "short_flows", "count": 3, "mean_size_bytes": 1000},
        {"kind": "udp_cbr", "rate_bps": 1e6},
    ],
)
def test_every_traffic_kind_takes_start_and_stop_times(item: dict[str, object]) -> None:
    t = parse_scenario(_with_traffic({**item, "start_s": 2.5, "stop_s": 10})).traffic[0]
    assert (t.start_s, t.stop_s) == (2.5, 10)
    t = parse_scenario(_with_traffic(item)).traffic[0]
    assert (t.start_s, t.stop_s) == (0, None)  # from the run's start to its own or the run's end
    with pytest.raises(ScenarioError, match=r"stop_s: 2.0 must be greater than start_s \(3.0\)"):
        parse_scenario(_with_traffic({**item, "start_s": 3, "stop_s": 2}))
    with pytest.raises(ScenarioError, match=r"start_s: Input should be greater than or equal to 0"):
        parse_scenario(_with_traffic({**item, "start_s": -1}))


def test_start_and_stop_lie_within_the_run() -> None:
    bulk = {"kind": "bulk_tcp", "duration_s": 5}
    with pytest.raises(
        ScenarioError, match=r"traffic.0.start_s: 10.0 must be less than duration_s \(10.0\)"
    ):
        parse_scenario(_with_traffic({**bulk, "start_s": 10}))
    with pytest.raises(
        ScenarioError, match=r"traffic.0.stop_s: 10.5 must be at most duration_s \(10.0\)"
    ):
        parse_scenario(_with_traffic({**bulk, "stop_s": 10.5}))
    # A bulk flow given bytes and a stop time stops at whichever comes first: both are accepted.
    parse_scenario(_with_traffic({"kind": "bulk_tcp", "bytes": 10**6, "stop_s": 4, "parallel": 4}))


def test_udp_takes_a_rate_or_a_share_of_the_capacity() -> None:
    t = parse_scenario(_with_traffic({"kind": "udp_cbr", "rate_share": 0.1})).traffic[0]
    assert t.rate_share == 0.1 and t.rate_bps is None
    for both_or_none in ({"rate_bps": 1e6, "rate_share": 0.1}, {}):
        with pytest.raises(
            ScenarioError,
            match="udp_onoff: Value error, give exactly one of rate_bps or rate_share",
        ):
            parse_scenario(_with_traffic({"kind": "udp_onoff", **both_or_none}))
    with pytest.raises(
        ScenarioError, match="traffic.0.udp_cbr.rate_share: Input should be less than or equal to 1"
    ):
        parse_scenario(_with_traffic({"kind": "udp_cbr", "rate_share": 1.5}))
    with pytest.raises(
        ScenarioError, match="traffic.0.udp_cbr.rate_share: Input should be greater than 0"
    ):
        parse_scenario(_with_traffic({"kind": "udp_cbr", "rate_share": 0}))
