"""The link model's answers through the API (GET /api/link/modcods, POST /api/link/preview): the
emulator binary computes them (emulator/src/describe.rs); bounds are 422s naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from satlab import linkmodel
from satlab.service import files
from satlab.service.errors import Unavailable
from satlab.service.routes.link import MAX_TRACE_CHARS

from .conftest import Tokens

BUDGET = {
    "tick_ms": 100,
    "symbol_rate_baud": 5e6,
    "clear_sky_up_db": 20,
    "clear_sky_down_db": 20,
    "margin_db": 0.5,
}


def test_modcods_table(client: TestClient, tokens: Tokens) -> None:
    r = client.get("/api/link/modcods", headers=tokens.h("viewer"))
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [m["id"] for m in rows] == list(range(1, 29))
    m28 = rows[27]
    assert (m28["name"], m28["esn0_db"], m28["useful_bits_per_frame"]) == (
        "32APSK 9/10",
        16.05,
        58112,
    )
    assert (m28["frame_symbols_no_pilots"], m28["frame_symbols_pilots"]) == (13050, 13338)
    r = client.get("/api/link/modcods?table=dvbs2x", headers=tokens.h("viewer"))
    assert r.status_code == 200 and len(r.json()) > 28
    r = client.get("/api/link/modcods?table=s3", headers=tokens.h("viewer"))
    assert r.status_code == 422


def test_preview_per_tick(client: TestClient, tokens: Tokens) -> None:
    trace = "# comment\n0 0\n50 0\n100 9 # peak\n150 0\n"
    r = client.post(
        "/api/link/preview", json={**BUDGET, "trace": trace}, headers=tokens.h("viewer")
    )
    assert r.status_code == 200, r.text
    p = r.json()
    assert len(p["t_s"]) == len(p["modcod"]) == len(p["rate_bps"]) == 151
    assert p["t_s"][100] == 10
    assert p["attenuation_db"][75] == 4.5
    # 9 dB of rain: C/N_down 11 dB -> Es/N0 10.49 dB, minus 0.5 dB margin -> 8PSK 5/6 (9.35)
    assert round(p["esn0_db"][100], 2) == 10.49
    assert (p["modcod"][0], p["modcod"][100]) == (28, 15)
    assert p["rate_bps"][0] > p["rate_bps"][100]
    assert {m["id"]: m["name"] for m in p["modcods"]}[15] == "8PSK 5/6"


def test_preview_errors_are_422s_naming_the_field(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("viewer")
    r = client.post("/api/link/preview", json={**BUDGET, "trace": "0 0\n5 1\n5 2\n"}, headers=h)
    assert r.status_code == 422
    assert r.json()["errors"] == [
        "trace: line 3: tick 5 is not after the previous tick 5 (ticks must increase)"
    ]
    r = client.post("/api/link/preview", json={**BUDGET, "trace": "0 0\n1 500\n"}, headers=h)
    assert r.status_code == 422 and r.json()["errors"][0].startswith("trace: line 2: ")
    r = client.post("/api/link/preview", json={**BUDGET, "trace": "0 0\n300000 1\n"}, headers=h)
    assert r.status_code == 422
    assert "over the preview limit of 200000 ticks" in r.text
    big = "0 0 " * (MAX_TRACE_CHARS // 4 + 1)  # under the request limit once JSON-escaped
    r = client.post("/api/link/preview", json={**BUDGET, "trace": big}, headers=h)
    assert r.status_code == 422
    assert r.json()["errors"] == [f"trace: String should have at most {MAX_TRACE_CHARS} characters"]
    r = client.post("/api/link/preview", json={**BUDGET, "trace": "0 0", "x": 1}, headers=h)
    assert r.status_code == 422
    r = client.post("/api/link/preview", json={**BUDGET, "trace": "0 0"})
    assert r.status_code == 401


def test_a_missing_link_model_is_a_503_not_a_422(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(linkmodel, "EMULATOR_BIN", Path("/nonexistent/satlab-emulator"))
    with pytest.raises(Unavailable, match="could not start"):
        files.validate("attenuation", b"0 0\n")
    r = client.post(
        "/api/link/preview", json={**BUDGET, "trace": "0 0"}, headers=tokens.h("viewer")
    )
    assert r.status_code == 503 and "could not start" in r.text
