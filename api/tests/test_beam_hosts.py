"""hosts.terminals: which clients sit behind which terminal of link.forward.beam (refusals name
the field), the testbed's plan of st edges and addresses, and the prefixes the runner fills in."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from satlab.scenario import ScenarioError, parse_scenario
from satlab.testbed import terminals
from satlab.testbed import testbed as native
from satlab.testbed.backend import create_testbed
from satlab.testbed.gateway import gateway_config


def _beam(*names: str) -> dict[str, Any]:
    return {"forward": {"beam": {"terminals": [{"name": n} for n in names]}}}


def _scenario(hosts: dict[str, Any], link: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "link": link,
        "hosts": hosts,
        "traffic": [{"kind": "bulk_tcp", "duration_s": 5}],
        "configurations": [{"name": "c"}],
        **over,
    }


TWO = {"terminals": [{"name": "a", "clients": 2}, {"name": "b"}]}


def test_clients_are_the_terminals_sum_and_survive_a_dump() -> None:
    sc = parse_scenario(_scenario(TWO, _beam("a", "b")))
    assert sc.hosts.clients == 3
    again = parse_scenario(sc.model_dump(mode="json"))
    assert again.hosts == sc.hosts


@pytest.mark.parametrize(
    ("hosts", "link", "message"),
    [
        (
            {"terminals": [{"name": "a"}, {"name": "a"}]},
            _beam("a"),
            "hosts.terminals.1.name: 'a' is the name of an earlier terminal",
        ),
        (
            {"terminals": [{"name": "a"}]},
            _beam("a", "b"),
            "link.forward.beam.terminals.1.name: terminal 'b' has no hosts.terminals entry",
        ),
        (
            {"terminals": [{"name": "a"}, {"name": "c"}]},
            _beam("a"),
            "hosts.terminals.1.name: 'c' is no terminal of link.forward.beam",
        ),
        (
            {"clients": 2, **TWO},
            _beam("a", "b"),
            "hosts.clients: 2, but hosts.terminals hold 3 clients",
        ),
        (
            {"terminals": [{"name": "a", "clients": 9}, {"name": "b", "clients": 8}]},
            _beam("a", "b"),
            "hosts.terminals: 17 clients in all, at most 16",
        ),
        (TWO, {}, "hosts.terminals: needs link.forward.beam.terminals"),
        ({}, _beam("a", "b"), "hosts.terminals: link.forward.beam has 2 terminals and none"),
        (
            {},
            {"forward": {"beam": {"terminals": [{"name": "a", "vlan": 7}, {"name": "b"}]}}},
            "hosts.terminals: the 2 terminals of link.forward.beam are on VLANs",
        ),
    ],
)
def test_refusals_name_the_field(hosts: dict[str, Any], link: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace(".", r"\.")):
        parse_scenario(_scenario(hosts, link))


def test_a_beam_with_prefixes_needs_no_hosts_terminals() -> None:
    link = _beam("a", "b")
    link["forward"]["beam"]["terminals"][1]["prefixes"] = ["10.250.3.12"]
    assert parse_scenario(_scenario({"clients": 2}, link)).hosts.terminals is None


def test_every_terminals_st_edge_gets_an_st_gateway_of_its_own() -> None:
    conf = {"name": "c", "gateway": {"eten": {"enabled": True}}}
    sc = parse_scenario(_scenario(TWO, _beam("a", "b"), configurations=[conf]))
    g = sc.configurations[0].gateway
    assert g is not None
    second = terminals.plan([2, 1])[1]
    cfg = gateway_config(g, second.edge, second.sat_address, Path("/t/telemetry-st2.sock"), 7)
    assert (cfg["role"], cfg["ports"]) == ("st", {"inside": "stx", "outside": "wan"})
    assert cfg["eten"] == {**cfg["eten"], "enabled": True, "source_ip": "10.250.2.3"}
    assert cfg["telemetry"]["socket"] == "/t/telemetry-st2.sock"
    assert gateway_config(g, "gw", "10.250.2.1", Path("/t/e.sock"), 7)["ports"]["inside"] == "gwx"


@pytest.mark.parametrize(
    "kind", ["hardware"]
)  # containers: tests/testbed/test_container_terminals.py
def test_other_testbeds_refuse_several_terminals(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SATLAB_TESTBED", kind)
    with pytest.raises(
        native.TestbedError, match=f"hosts.terminals: 2 terminals need the namespaces.*{kind}"
    ):
        create_testbed(1, 3, terminal_clients=[2, 1])


def test_plan_numbers_clients_across_terminals_and_keeps_the_first_terminals_addresses() -> None:
    first, second = terminals.plan([2, 1])
    assert (first.edge, first.net, first.sat_address, first.clients) == (
        "st",
        "10.250.3",
        "10.250.2.2",
        [1, 2],
    )
    assert (second.edge, second.net, second.sat_address, second.clients) == (
        "st2",
        "10.250.42",
        "10.250.2.3",
        [3],
    )
    assert terminals.plan([]) == [terminals.Terminal("st", "10.250.3", "10.250.2.2", [])]


def test_prefixes_are_filled_unless_the_scenario_gave_them() -> None:
    link = _beam("a", "b")
    link["forward"]["beam"]["terminals"][1]["prefixes"] = ["10.9.9.0/24"]
    sc = parse_scenario(_scenario(TWO, link))
    cfg = copy.deepcopy(sc.link)
    terminals.fill_beam_prefixes(cfg, sc.hosts)
    a, b = cfg["forward"]["beam"]["terminals"]
    assert a["prefixes"] == ["10.250.3.0/24", "10.250.2.2/32"]
    assert b["prefixes"] == ["10.9.9.0/24"]
    assert terminals.terminal_of_client(sc.hosts, 3) == "b"
    assert terminals.flow_terminal(sc.hosts, sc.traffic[0]) == {"terminal": "a"}
