"""The scheme catalogue, the typed result endpoints in the OpenAPI spec, and deleting a scenario
that experiments use."""

from __future__ import annotations

import yaml
from fastapi.testclient import TestClient

from satlab import catalog
from satlab.scenario import parse_scenario

from .conftest import Tokens, make_experiment, scenario_yaml


def test_every_scheme_is_a_configuration_a_scenario_accepts(
    client: TestClient, tokens: Tokens
) -> None:
    r = client.get("/api/schemes", headers=tokens.h("viewer"))
    assert r.status_code == 200, r.text
    got = r.json()
    names = [s["name"] for s in got]
    assert {"cubic", "reno", "bbr", "sl_newreno", "cubic-red", "reno-red-ecn"} <= set(names)
    assert len(names) == len(set(names)) == len(catalog.SCHEME_PRESETS)
    red_ecn = next(s for s in got if s["name"] == "reno-red-ecn")
    # Served as written in the catalogue: no defaults filled in.
    assert red_ecn["configuration"] == {
        "name": "reno-red-ecn",
        "transport": {"congestion_control": "reno"},
        "gateway": {"egress": {"aqm": {"kind": "red_ecn"}}},
    }
    assert next(s for s in got if s["name"] == "cubic")["paper_section"] is None
    # Every configuration fits into a scenario as is, all of them together too.
    doc = yaml.safe_load(scenario_yaml("schemes"))
    doc["configurations"] = [s["configuration"] for s in got]
    doc.setdefault("hosts", {}).setdefault("settings", {})
    for s in got:  # what the schemes need of the hosts (ERN: timestamps off; withhold: no SACK)
        doc["hosts"]["settings"].update(s.get("host_settings", {}))
    sc = parse_scenario(doc)
    assert [c.name for c in sc.configurations] == names
    assert client.get("/api/schemes").status_code == 401


def test_result_endpoints_have_response_models(client: TestClient, tokens: Tokens) -> None:
    spec = client.get("/openapi.json").json()

    def schema_of(path: str) -> dict[str, object]:
        ok = spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
        return dict(ok["schema"])

    assert schema_of("/api/experiments/{experiment_id}/results")["$ref"].endswith("/ResultsOut")
    assert schema_of("/api/experiments/{experiment_id}/comparison")["$ref"].endswith(
        "/ComparisonOut"
    )
    assert schema_of("/api/runs/{run_id}/series/{name}")["$ref"].endswith("/SeriesBuckets")
    assert schema_of("/api/runs/{run_id}/series")["items"]["$ref"].endswith("/SeriesInfo")
    assert schema_of("/api/schemes")["items"]["$ref"].endswith("/SchemeOut")
    ratio = spec["components"]["schemas"]["ComparedMetric"]["properties"]
    assert {"ratio", "low", "high", "difference", "baseline_mean"} <= set(ratio)


def test_a_scenario_used_by_experiments_is_not_deleted(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, "keep", reps=1)["experiment"]
    sc_id = client.get("/api/scenarios?name=keep", headers=tokens.h("viewer")).json()["items"][0][
        "id"
    ]
    r = client.delete(f"/api/scenarios/{sc_id}", headers=tokens.h("admin"))
    assert r.status_code == 409 and "used by experiments" in r.json()["detail"]
    assert client.get(f"/api/scenarios/{sc_id}", headers=tokens.h("viewer")).status_code == 200
    assert (
        client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).status_code == 200
    )
