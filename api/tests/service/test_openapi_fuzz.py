"""schemathesis against the OpenAPI spec, with an admin token: no request makes a 5xx.

Bounded: a few examples per operation, no shrinking, about 20 s. The SSE endpoints are fuzzed with
follow=false so a stream ends."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, Phase, settings

from satlab.app import create_app

from .conftest import Tokens, make_experiment

app = create_app()
schema = schemathesis.openapi.from_asgi("/openapi.json", app)


@pytest.fixture
def seeded(client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch) -> Tokens:
    from satlab.settings import get_settings

    monkeypatch.setattr(get_settings(), "control_timeout_s", 0.2)
    monkeypatch.setattr(get_settings(), "rate_limit_per_min", 1_000_000)
    make_experiment(client, tokens, "fz", reps=1)
    return tokens


@schema.parametrize()
@settings(
    max_examples=8,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors(case: Any, seeded: Tokens) -> None:
    if case.path.endswith("/events"):
        case.query = {**(case.query or {}), "follow": "false"}
    case.headers = {**(case.headers or {}), **seeded.h("admin")}
    response = case.call()
    assert response.status_code < 500, (case.method, case.path, response.status_code, response.text)
