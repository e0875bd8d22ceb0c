"""A beam whose terminals are on VLANs needs hosts.terminals (the testbed gives each VLAN an st edge
of its own): the service refuses the scenario when it is saved, naming the field, not only the run
that would fail at its start (satlab.beam_hosts)."""

from __future__ import annotations

import copy
from typing import Any

import yaml
from fastapi.testclient import TestClient

from .conftest import Tokens

SCENARIO: dict[str, Any] = {
    "name": "vlan-beam",
    "duration_s": 5,
    "link": {
        "forward": {
            "delay_ms": 20.0,
            "symbol_rate_baud": 2.0e6,
            "beam": {
                "terminals": [
                    {"name": "a", "vlan": 101, "prefixes": ["10.250.3.11/32"]},
                    {"name": "b", "vlan": 102, "prefixes": ["10.250.42.12/32"]},
                ],
            },
        },
        "return": {"delay_ms": 20.0},
    },
    "hosts": {"clients": 2},
    "traffic": [{"kind": "bulk_tcp", "client": 1, "duration_s": 5}],
    "configurations": [{"name": "cubic", "transport": {"congestion_control": "cubic"}}],
}


def _save(client: TestClient, tokens: Tokens, scenario: dict[str, Any]) -> Any:
    return client.post(
        "/api/scenarios", json={"yaml": yaml.safe_dump(scenario)}, headers=tokens.h("submitter")
    )


def test_vlan_terminals_without_hosts_terminals_are_refused_at_submission(
    client: TestClient, tokens: Tokens
) -> None:
    r = _save(client, tokens, SCENARIO)
    assert r.status_code == 422, r.text
    first = r.json()["errors"][0]
    assert first.startswith("hosts.terminals: the 2 terminals of link.forward.beam are on VLANs")
    listed = client.get("/api/scenarios", headers=tokens.h("viewer")).json()
    assert "vlan-beam" not in str(listed), "a refused scenario must not be stored"


def test_the_same_beam_with_hosts_terminals_is_accepted(client: TestClient, tokens: Tokens) -> None:
    ok = copy.deepcopy(SCENARIO)
    ok["hosts"] = {"terminals": [{"name": "a", "clients": 1}, {"name": "b", "clients": 1}]}
    r = _save(client, tokens, ok)
    assert r.status_code == 201, r.text
