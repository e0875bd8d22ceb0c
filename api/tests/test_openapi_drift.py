"""The web UI's API types are generated from the API's OpenAPI document (web: npm run gen:api);
this fails when the committed copy is stale."""

from __future__ import annotations

import json

from satlab.app import create_app
from satlab.settings import REPO_ROOT

COMMITTED = REPO_ROOT / "web" / "src" / "api" / "openapi.json"


def test_the_web_client_is_generated_from_the_current_api() -> None:
    assert json.loads(COMMITTED.read_text()) == create_app().openapi(), (
        "web/src/api/openapi.json is stale: run `cd web && npm run gen:api` and commit the result"
    )
