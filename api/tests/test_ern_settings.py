"""IP-ERN's scenario rules: timestamps off, and the gateway's ERN ports (satlab.testbed.runner)."""

import pytest

from satlab.scenario import ScenarioError, parse_scenario
from satlab.testbed.runner import BASE_PORT, ern_ports

ERN = {"transport": {"congestion_control": "sl_ern"}, "gateway": {"ern": {"enabled": True}}}


def scenario(**over: object) -> dict[str, object]:
    return {
        "name": "t",
        "hosts": {"settings": {"timestamps": False}},
        "traffic": [
            {"kind": "bulk_tcp", "bytes": 1000},
            {"kind": "bulk_tcp", "bytes": 1000, "congestion_control": "cubic"},
            {"kind": "bulk_tcp", "bytes": 1000, "congestion_control": "sl_ern_reno"},
        ],
        "configurations": [{"name": "ern", **ERN}],
        **over,
    }


def test_ern_needs_timestamps_off() -> None:
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(scenario(hosts={}))
    assert "hosts.settings.timestamps: configurations.0 uses sl_ern" in str(exc.value)


def test_ern_needs_the_gateway_router() -> None:
    bad = scenario(configurations=[{"name": "ern", "transport": ERN["transport"]}])
    with pytest.raises(ScenarioError) as exc:
        parse_scenario(bad)
    assert "configurations.0.gateway.ern.enabled: sl_ern needs it" in str(exc.value)


def test_runner_gives_the_router_the_ern_flows_ports() -> None:
    sc = parse_scenario(scenario())
    assert ern_ports(sc, sc.configurations[0]) == [BASE_PORT, BASE_PORT + 2]  # not the cubic one


def test_explicit_ern_ports_are_kept() -> None:
    conf = {"name": "ern", **ERN, "gateway": {"ern": {"enabled": True, "ports": [9]}}}
    sc = parse_scenario(scenario(configurations=[conf]))
    assert ern_ports(sc, sc.configurations[0]) == [9]
