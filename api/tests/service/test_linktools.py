"""The link tools' API: link budget rows, a weather trace previewed and stored as an upload, a
modem log imported; bounds are 422s naming the field and the limit."""

from __future__ import annotations

import math
import re

import pytest
import yaml
from fastapi.testclient import TestClient

from satlab import db
from satlab.service.models import Run

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
    combined = {**SITE, "duration_s": 60, "model": "combined"}
    r = client.post("/api/traces/synth", json={**combined, "step_ms": 1500}, headers=h)
    assert r.status_code == 422
    assert "step_ms: the combined model (itur) steps whole seconds" in r.text
    r = client.post("/api/traces/synth", json={**combined, "clouds": True}, headers=h)
    assert r.status_code == 422
    assert "model: the combined model has its own clouds and scintillation" in r.text
    r = client.post("/api/traces/synth", json={**SITE, "model": "both"}, headers=h)
    assert r.status_code == 422 and "model: Input should be 'independent' or 'combined'" in r.text
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


def test_the_report_shows_what_each_sweep_point_gave_the_emulator(
    client: TestClient, tokens: Tokens
) -> None:
    """A sweep over a budget field: the report's budget section gives, per point, the hops' C/N
    the stored run documents hold, their cascade and the clear-sky MODCOD (stored runs, no run
    executed: the figures come from what the runs were queued with)."""
    h = tokens.h("submitter")
    data = yaml.safe_load(yaml.safe_dump(BUDGET_SCENARIO))
    data["name"] = "budget-swept"
    data["link_budget"]["forward"] = {
        "uplink": {"frequency_ghz": 14.0, "eirp_dbw": 75, "g_over_t_db_per_k": 3},
        "downlink": {"frequency_ghz": 12.0, "eirp_dbw": 45, "g_over_t_db_per_k": 15},
    }
    data["link"]["forward"] = {"modcod_set": "dvbs2x", "acm": {"margin_db": 0.5}}
    data["sweep"] = {"path": "link_budget.forward.downlink.eirp_dbw", "values": [45, 52]}
    sc = client.post("/api/scenarios", json={"yaml": yaml.safe_dump(data)}, headers=h)
    assert sc.status_code == 201, sc.text
    exp = client.post("/api/experiments", json={"scenario_id": sc.json()["id"]}, headers=h)
    assert exp.status_code == 201, exp.text
    exp_id = exp.json()["experiment"]["id"]
    with db.new_session() as s:
        stored = {
            r.sweep_value: r.spec["link"]["forward"]
            for r in s.query(Run).filter(Run.experiment_id == exp_id)
        }
    down = {v: f["downlink"]["clear_sky_db"] for v, f in stored.items()}
    assert round(down[52] - down[45], 2) == 7.0  # the swept EIRP, dB for dB
    page = client.get(f"/api/experiments/{exp_id}/report", headers=tokens.h("viewer")).text
    assert "<h3>As the emulator received it</h3>" in page
    for v, f in stored.items():
        up, dn = f["uplink"]["clear_sky_db"], f["downlink"]["clear_sky_db"]
        esn0 = -10 * math.log10(10 ** (-up / 10) + 10 ** (-dn / 10))
        row = re.search(
            rf"<tr><td>eirp_dbw={v}</td><td>forward</td><td>([^<]*)</td><td>([^<]*)</td>"
            r"<td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td></tr>",
            page,
        )
        assert row, f"no forward row for eirp_dbw={v}"
        assert [float(x) for x in row.groups()[:3]] == pytest.approx([up, dn, esn0], abs=0.01)
        # the ACM rule at Es/N0 - 0.5 dB margin, a DVB-S2X id (EN 302 307-2 PLS codes 132-214
        # or the 28 DVB-S2 ones), and a rate
        assert re.fullmatch(r"\d+ \S+ \S+", row.group(4)), row.group(4)
        assert row.group(5).endswith(" Mbit/s")
    # the return direction (RCS2) is listed with its C/N, its MODCOD named as not computed
    assert "<td>return</td>" in page and "RCS2 waveform table (not computed here)" in page
