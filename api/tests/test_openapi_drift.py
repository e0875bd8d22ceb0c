"""The web UI's API types are generated from the API's OpenAPI document (web: npm run gen:api);
this fails when the committed copy is stale."""

from __future__ import annotations

import json

from satlab.app import create_app
from satlab.settings import REPO_ROOT

COMMITTED = REPO_ROOT / "web" / "src" / "api" / "openapi.json"


def numbers_as_floats(text: str) -> object:
    # The committed copy is written by Node, whose numbers are all doubles (1.0 is written 1).
    return json.loads(text, parse_int=float)


def test_the_web_client_is_generated_from_the_current_api() -> None:
    current = numbers_as_floats(json.dumps(create_app().openapi()))
    assert numbers_as_floats(COMMITTED.read_text()) == current, (
        "web/src/api/openapi.json is stale: run `cd web && npm run gen:api` and commit the result"
    )
