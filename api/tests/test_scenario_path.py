"""The `path` section (terrestrial hops) and `hop` on traffic items: what is accepted, what each
hop's emulator link is, and errors that name the field and the limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from satlab.scenario import ScenarioError, load_scenario, parse_scenario
from satlab.testbed import hops


def scenario(path: Any, traffic: list[dict[str, Any]] | None = None, **over: Any) -> dict[str, Any]:
    return {
        "name": "p",
        "path": path,
        "traffic": traffic or [{"kind": "bulk_tcp", "duration_s": 5}],
        "configurations": [{"name": "cubic"}],
        **over,
    }


ETEN_PATH = {
    "terrestrial": [
        {"delay_ms": 100, "rate_bps": 1e8, "queue": {"limit_packets": 100}},
        {"delay_ms": 100, "rate_bps": 1e7, "queue": {"limit_packets": 50}, "cross_hosts": 2},
        {"delay_ms": 100, "rate_bps": 1e8},
    ]
}


def refused(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(data)
    return str(err.value)


def test_hops_become_fixed_rate_emulator_links_and_cross_traffic_names_a_hop() -> None:
    udp = {"kind": "udp_onoff", "rate_bps": 2.5e6, "mean_on_s": 0.5, "mean_off_s": 0.5}
    sc = parse_scenario(
        scenario(
            ETEN_PATH,
            [{"kind": "bulk_tcp", "bytes": 1000}, {**udp, "hop": 2, "client": 2, "server": 2}],
        )
    )
    assert sc.path is not None and len(sc.path.terrestrial) == 3
    link = sc.path.terrestrial[1].link()
    assert link["forward"] == {
        "kind": "fixed",
        "rate_bps": 1e7,
        "delay_ms": 100,
        "queue": {"limit_packets": 50, "limit_bytes": 1_500_000},
    }
    assert link["return"] == link["forward"]
    assert hops.cross_hosts(sc) == [0, 2, 0]
    assert hops.ends(sc.traffic[0]) == ("srv1", "cli1")
    assert hops.ends(sc.traffic[1]) == ("x2s2", "x2c2")
    # Without a path section nothing changes: no hops, traffic between servers and clients.
    plain = parse_scenario(scenario(None))
    assert plain.path is None and hops.cross_hosts(plain) == []


def test_bit_errors_are_per_direction() -> None:
    hop = {"delay_ms": 1, "rate_bps": 1e6, "bit_errors": {"model": "uniform", "ber": 1e-6}}
    link = parse_scenario(scenario({"terrestrial": [hop]})).path.terrestrial[0].link()  # type: ignore[union-attr]
    assert link["forward"]["bit_errors"] == {"model": "uniform", "ber": 1e-6}
    assert "bit_errors" not in link["return"]


def test_hop_seeds_are_distinct_per_hop_and_repeat_per_run() -> None:
    seeds = [hops.hop_seed(7, k) for k in (1, 2, 3)]
    assert len(set(seeds)) == 3 and 7 not in seeds
    assert seeds == [hops.hop_seed(7, k) for k in (1, 2, 3)]
    assert hops.hop_seed(8, 1) != seeds[0]
    assert all(0 <= s < 2**64 for s in seeds)


@pytest.mark.parametrize(
    ("hop", "message"),
    [
        ({"rate_bps": 1e6}, "path.terrestrial.0.delay_ms: Field required"),
        (
            {"delay_ms": -1, "rate_bps": 1e6},
            "path.terrestrial.0.delay_ms: Input should be greater than or equal to 0",
        ),
        (
            {"delay_ms": 10, "rate_bps": 10},
            "path.terrestrial.0.rate_bps: Input should be greater than or equal to 1000",
        ),
        (
            {"delay_ms": 10, "rate_bps": 1e6, "queue": {"limit_packets": 0}},
            "path.terrestrial.0.queue.limit_packets: Input should be greater than or equal to 1",
        ),
        (
            {"delay_ms": 10, "rate_bps": 1e6, "cross_hosts": 9},
            "path.terrestrial.0.cross_hosts: Input should be less than or equal to 8",
        ),
        (
            {"delay_ms": 10, "rate_bps": 1e6, "jitter_ms": 1},
            "path.terrestrial.0.jitter_ms: Extra inputs are not permitted",
        ),
    ],
)
def test_hop_fields_are_checked_with_the_field_named(hop: dict[str, Any], message: str) -> None:
    assert message in refused(scenario({"terrestrial": [hop]}))


def test_at_most_eight_hops() -> None:
    many = {"terrestrial": [{"delay_ms": 1, "rate_bps": 1e6}] * 9}
    assert "path.terrestrial: List should have at most 8 items" in refused(scenario(many))


def test_traffic_on_a_hop_must_name_an_existing_hop_and_its_cross_hosts() -> None:
    udp = {"kind": "udp_cbr", "rate_bps": 1e6}
    assert "traffic.0.hop: 4 > the hops of path.terrestrial (3)" in refused(
        scenario(ETEN_PATH, [{**udp, "hop": 4}])
    )
    assert "traffic.0.hop: 1 > the hops of path.terrestrial (0)" in refused(
        scenario(None, [{**udp, "hop": 1}])
    )
    assert (
        "traffic.0.server: 1 > path.terrestrial.0.cross_hosts (0), the cross hosts of hop 1"
        in refused(scenario(ETEN_PATH, [{**udp, "hop": 1}]))
    )
    assert (
        "traffic.0.server: 3 > path.terrestrial.1.cross_hosts (2), the cross hosts of hop 2"
        in refused(scenario(ETEN_PATH, [{**udp, "hop": 2, "server": 3}]))
    )
    # A hop's cross hosts are counted by the hop, not by hosts.servers / hosts.clients.
    parse_scenario(scenario(ETEN_PATH, [{**udp, "hop": 2, "client": 2}]))
    assert "traffic.0.udp_cbr.hop: Input should be greater than or equal to 1" in refused(
        scenario(ETEN_PATH, [{**udp, "hop": 0}])
    )


def test_a_pep_is_refused_with_hops_naming_both_fields() -> None:
    data = scenario(ETEN_PATH, configurations=[{"name": "pep", "pep": {}}])
    assert "configurations.0.pep: " in refused(data) and "path.terrestrial" in refused(data)


def test_relative_hop_files_resolve_against_the_scenario_file(tmp_path: Path) -> None:
    f = tmp_path / "hops.yaml"
    f.write_text(
        "name: p\n"
        "path:\n"
        "  terrestrial:\n"
        "    - {delay_ms: 5, rate_bps: 1.0e6, bit_errors: {model: pattern, pattern_file: e.txt}}\n"
        "traffic: [{kind: bulk_tcp, duration_s: 1}]\n"
        "configurations: [{name: cubic}]\n"
    )
    sc = load_scenario(f)
    assert sc.path is not None
    assert sc.path.terrestrial[0].bit_errors["pattern_file"] == str(tmp_path / "e.txt")
