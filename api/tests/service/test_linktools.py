"""The link tools' API: link budget rows, a weather trace previewed and stored as an upload, a
modem log imported; bounds are 422s naming the field and the limit."""

from __future__ import annotations

import yaml
from fastapi.testclient import TestClient

from .conftest import Tokens

SITE = {"lat": 43.6, "lon": 1.44, "freq_ghz": 20.0, "elevation_deg": 35.0}

BUDGET_SCENARIO = {
    "name": "budget",
    "link": {
        "geometry": {
            "satellite_longitude_deg": 13.0,
            "gateway": {"lat_deg": 43.6, "lon_deg": 1.44},
            "terminal": {"lat_deg": 48.86, "lon_deg": 2.35},
        }
    },
    "link_budget": {
        "return": {
            "uplink": {"frequency_ghz": 29.5, "eirp_dbw": 50, "g_over_t_db_per_k": 10},
            "downlink": {"frequency_ghz": 19.7, "eirp_dbw": 45, "g_over_t_db_per_k": 30},
        }
    },
    "traffic": [{"kind": "bulk_tcp", "duration_s": 5}],
    "configurations": [{"name": "cubic"}],
}


def test_link_budget_rows(client: TestClient, tokens: Tokens) -> None:
    r = client.post(
        "/api/link-budget",
        json={"yaml": yaml.safe_dump(BUDGET_SCENARIO)},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert [(h["direction"], h["hop"], h["station"]) for h in body["hops"]] == [
        ("return", "uplink", "terminal"),
        ("return", "downlink", "gateway"),
    ]
    assert body["hops"][0]["symbol_rate_baud"] == 4e6  # the return link's default
    assert body["directions"][0]["clear_sky_esn0_db"] < body["hops"][0]["clear_sky_db"]
    no_budget = {k: v for k, v in BUDGET_SCENARIO.items() if k != "link_budget"}
    r = client.post(
        "/api/link-budget", json={"yaml": yaml.safe_dump(no_budget)}, headers=tokens.h("submitter")
    )
    assert r.status_code == 422
    assert r.json()["errors"] == ["link_budget: the scenario has no link_budget section"]


def test_trace_preview_then_stored(client: TestClient, tokens: Tokens) -> None:
    body = {**SITE, "duration_s": 120, "step_ms": 500, "seed": 3, "scintillation": True}
    r = client.post("/api/traces/synth", json=body, headers=tokens.h("submitter"))
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["ticks"] == 241 == len(out["values_db"]) and out["file"] is None
    assert out["statistics"]["exceedances"][0]["p_pct"] == 0.01
    assert any("scintillation: P.618 sigma=" in h for h in out["header"])
    r = client.post(
        "/api/traces/synth",
        json={**body, "store_as": "sites/toulouse.txt"},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 200, r.text
    stored = r.json()["file"]
    assert stored["name"] == "sites/toulouse.txt" and stored["kind"] == "attenuation"
    assert r.json()["values_db"] == out["values_db"]  # same seed, same trace
    text = client.get(f"/api/files/{stored['id']}/content", headers=tokens.h("viewer")).text
    data = [line.split() for line in text.splitlines() if not line.startswith("#")]
    assert [float(v) for _, v in data] == out["values_db"]
    # the name belongs to its first uploader
    r = client.post(
        "/api/traces/synth",
        json={**body, "seed": 4, "store_as": "sites/toulouse.txt"},
        headers=tokens.h("other_submitter"),
    )
    assert r.status_code == 403, r.text


def test_trace_bounds_are_422s_naming_the_field(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("submitter")
    r = client.post("/api/traces/synth", json={**SITE, "duration_s": 90_000}, headers=h)
    assert r.status_code == 422
    assert r.json()["errors"] == ["duration_s: Input should be less than or equal to 86400"]
    r = client.post(
        "/api/traces/synth", json={**SITE, "duration_s": 3600, "step_ms": 10}, headers=h
    )
    assert r.status_code == 422
    assert "duration_s: 3600 s at step_ms 10 is 360001 ticks, over the limit of 200000" in r.text
    r = client.post(
        "/api/traces/synth",
        json={**SITE, "duration_s": 60, "step_ms": 5000, "scintillation": True},
        headers=h,
    )
    assert r.status_code == 422
    assert "step_ms: scintillation needs a step of at most 1000 ms" in r.text
    r = client.post(
        "/api/traces/synth", json={**SITE, "duration_s": 60}, headers=tokens.h("viewer")
    )
    assert r.status_code == 403


def test_modem_log_import(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("submitter")
    csv = "time_s,esn0_db\n0,12\n1,10\n2,12\n"
    r = client.post("/api/traces/modem-log", json={"csv": csv, "step_ms": 500}, headers=h)
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["ticks"] == 5 and out["uplink_db"] == 60 and out["values_db"][0] == 0.0
    r = client.post(
        "/api/traces/modem-log",
        json={"csv": "time_s,esn0_db\n0,12\n1,10\n0.5,12\n"},
        headers=h,
    )
    assert r.status_code == 422
    assert r.json()["errors"][0].startswith("csv: line 4: time 0.5 is not after")
    r = client.post(
        "/api/traces/modem-log", json={"csv": csv, "store_as": "modem/fade.txt"}, headers=h
    )
    assert r.status_code == 200 and r.json()["file"]["kind"] == "attenuation"


def test_scenarios_with_a_budget_are_stored_and_checked(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("submitter")
    r = client.post("/api/scenarios", json={"yaml": yaml.safe_dump(BUDGET_SCENARIO)}, headers=h)
    assert r.status_code == 201, r.text
    assert r.json()["latest"]["spec"]["link_budget"]["return"]["uplink"]["eirp_dbw"] == 50
    hot = yaml.safe_load(yaml.safe_dump(BUDGET_SCENARIO))
    hot["name"] = "hot"
    hot["link_budget"]["return"]["downlink"]["eirp_dbw"] = 90  # C/N far above 60 dB
    r = client.post("/api/scenarios", json={"yaml": yaml.safe_dump(hot)}, headers=h)
    assert r.status_code == 422, r.text
    assert "link_budget.return.downlink: clear-sky C/N" in r.text
    assert "is outside the emulator's [-20, 60] dB" in r.text
