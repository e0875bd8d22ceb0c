"""Limits on the work an experiment and a token may ask for (issue 24, class 3)."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from satlab.settings import get_settings

from .conftest import Tokens, make_experiment, make_scenario, upload_fade


def test_a_huge_plan_is_refused_at_once_naming_its_factors(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "max_experiment_hours", 10.0)  # 10 000 x 5 s = 13.9 h
    upload_fade(client, tokens)
    body = {
        "scenario_id": make_scenario(client, tokens, "big")["id"],
        "sweep": {"path": "forward.delay_ms", "values": list(range(200, 250))},
        "repetitions": 100,
    }
    for url in ("/api/experiments/plan", "/api/experiments"):
        t0 = time.monotonic()
        r = client.post(url, json=body, headers=tokens.h("submitter"))
        elapsed = time.monotonic() - t0
        assert r.status_code == 422, r.text
        errors = r.json()["errors"]
        assert any(
            "10000 runs (2 configurations x 50 sweep.values x 100 repetitions) exceed the limit "
            "of 2000 runs per experiment" in e
            for e in errors
        ), errors
        assert any("13.9 h estimated" in e and "limit of 10 h" in e for e in errors), errors
        # Refused before 10 000 runs were expanded (a generous bound, not a benchmark).
        assert elapsed < 5, elapsed
    assert client.get("/api/experiments", headers=tokens.h("viewer")).json()["total"] == 0


def test_a_tokens_queued_work_is_bounded(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "max_pending_runs_per_token", 5)
    make_experiment(client, tokens, "first", reps=2)  # 2 configurations x 2 repetitions: 4 queued
    body = {"scenario_id": make_scenario(client, tokens, "second")["id"], "repetitions": 1}
    r = client.post("/api/experiments", json=body, headers=tokens.h("submitter"))
    assert r.status_code == 422, r.text
    assert "2 runs with the 4 this token has queued or running exceed its limit of 5" in r.text
    # Another token's queue is its own.
    r = client.post("/api/experiments", json=body, headers=tokens.h("admin"))
    assert r.status_code == 201, r.text
