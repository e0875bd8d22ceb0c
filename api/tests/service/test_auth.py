"""Auth: no token -> 401 everywhere but health and docs; each role's allowed and denied
endpoints; revoked tokens; scopes; the per-token rate limit."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from satlab import db
from satlab.service import auth, runs

from .conftest import Tokens, make_experiment
from .runhelpers import ME, run_ids

ROLES = ("viewer", "submitter", "admin")

# (method, path, minimum role); {e} {r} {s} are filled with a real experiment, run, scenario.
ENDPOINTS = [
    ("GET", "/api/whoami", "viewer"),
    ("GET", "/api/scenario-schema", "viewer"),
    ("GET", "/api/schemes", "viewer"),
    ("GET", "/api/scenarios", "viewer"),
    ("GET", "/api/scenarios/{s}", "viewer"),
    ("GET", "/api/scenarios/{s}/yaml", "viewer"),
    ("GET", "/api/scenarios/{s}/revisions", "viewer"),
    ("GET", "/api/files", "viewer"),
    ("GET", "/api/experiments", "viewer"),
    ("GET", "/api/experiments/{e}", "viewer"),
    ("GET", "/api/experiments/{e}/results", "viewer"),
    ("GET", "/api/experiments/{e}/comparison", "viewer"),
    ("GET", "/api/experiments/{e}/expectations", "viewer"),
    ("GET", "/api/experiments/{e}/export", "viewer"),
    ("GET", "/api/experiments/{e}/events?follow=false", "viewer"),
    ("GET", "/api/runs", "viewer"),
    ("GET", "/api/runs/{r}", "viewer"),
    ("GET", "/api/runs/{r}/series", "viewer"),
    ("GET", "/api/runs/{r}/artifacts", "viewer"),
    ("GET", "/api/experiments/{e}/report", "viewer"),
    ("GET", "/api/metrics", "viewer"),
    ("GET", "/api/metrics/runs", "viewer"),
    ("GET", "/api/reproductions/latest", "viewer"),
    ("GET", "/api/link/modcods", "viewer"),
    ("POST", "/api/link/preview", "viewer"),
    ("POST", "/api/scenarios", "submitter"),
    ("POST", "/api/scenarios/import", "submitter"),
    ("POST", "/api/scenarios/{s}/revisions", "submitter"),
    ("POST", "/api/files?name=x.txt&kind=delay", "submitter"),
    ("POST", "/api/experiments/plan", "submitter"),
    ("POST", "/api/experiments", "submitter"),
    ("POST", "/api/experiments/{e}/retry", "submitter"),
    ("POST", "/api/runs/{r}/control", "submitter"),
    ("POST", "/api/reproductions", "submitter"),
    ("POST", "/api/link-budget", "submitter"),
    ("POST", "/api/traces/synth", "submitter"),
    ("POST", "/api/traces/modem-log", "submitter"),
    ("POST", "/api/opensand/import?name=x", "submitter"),
    ("GET", "/api/tokens", "admin"),
    ("POST", "/api/tokens", "admin"),
    ("DELETE", "/api/tokens/999", "admin"),
    ("GET", "/api/boxes", "admin"),
    ("POST", "/api/boxes", "admin"),
    ("DELETE", "/api/boxes/x", "admin"),
]


def test_every_endpoint_needs_a_token_but_health_and_docs(
    client: TestClient, tokens: Tokens
) -> None:
    exp = make_experiment(client, tokens, "au", reps=1)["experiment"]
    ids = {"e": exp["id"], "r": 1, "s": 1}
    for method, path, _ in ENDPOINTS:
        r = client.request(method, path.format(**ids))
        assert r.status_code == 401, (method, path, r.status_code)
        assert r.headers["www-authenticate"] == "Bearer"
        r = client.request(method, path.format(**ids), headers={"Authorization": "Bearer sl_wrong"})
        assert r.status_code == 401
    for path in ("/api/health", "/docs", "/openapi.json"):
        assert client.get(path).status_code == 200
    # Every route in the app is in the table above (or open).
    spec = client.get("/openapi.json").json()
    listed = {(m, p.split("?")[0]) for m, p, _ in ENDPOINTS}
    for path, ops in spec["paths"].items():
        for method in ops:
            if path == "/api/health":
                continue
            concrete = (
                path.replace("{experiment_id}", "{e}")
                .replace("{run_id}", "{r}")
                .replace("{scenario_id}", "{s}")
                .replace("{token_id}", "999")
            )
            if "{" in concrete:  # deeper paths (revision number, series name, ...): covered by role
                continue
            assert (method.upper(), concrete) in listed, (method, path)


@pytest.mark.parametrize("role", ROLES)
def test_role_allowed_and_denied(client: TestClient, tokens: Tokens, role: str) -> None:
    exp = make_experiment(client, tokens, "ro", reps=1)["experiment"]
    ids = {"e": exp["id"], "r": exp["id"], "s": 1}
    for method, path, needed in ENDPOINTS:
        r = client.request(method, path.format(**ids), headers=tokens.h(role), json={})
        allowed = ROLES.index(role) >= ROLES.index(needed)
        if allowed:
            assert r.status_code not in (401, 403), (role, method, path, r.status_code, r.text)
        else:
            assert r.status_code == 403, (role, method, path, r.status_code)
            assert f"needs the {needed} role" in r.json()["detail"]


def test_token_management_and_revocation(client: TestClient, tokens: Tokens) -> None:
    r = client.post(
        "/api/tokens",
        json={"name": "ci", "role": "submitter", "scope": ["ci-*"]},
        headers=tokens.h("admin"),
    )
    assert r.status_code == 201
    new, tid = r.json()["token"], r.json()["id"]
    h = {"Authorization": f"Bearer {new}"}
    assert client.get("/api/whoami", headers=h).json()["scope"] == ["ci-*"]
    listed = client.get("/api/tokens", headers=tokens.h("admin")).json()
    assert all("token" not in t for t in listed) and any(t["id"] == tid for t in listed)
    assert client.delete(f"/api/tokens/{tid}", headers=tokens.h("admin")).status_code == 200
    assert client.get("/api/whoami", headers=h).status_code == 401


def test_scoped_token_sees_only_its_scenarios(client: TestClient, tokens: Tokens) -> None:
    make_experiment(client, tokens, "ci-one", reps=1)
    make_experiment(client, tokens, "other", reps=1)
    with db.new_session() as s:
        _, tok = auth.create_token(s, "ci", "submitter", scope=["ci-*"])
        s.commit()
    h = {"Authorization": f"Bearer {tok}"}
    names = [e["scenario_name"] for e in client.get("/api/experiments", headers=h).json()["items"]]
    assert names == ["ci-one"]
    assert [s["name"] for s in client.get("/api/scenarios", headers=h).json()["items"]] == [
        "ci-one"
    ]
    r = client.post("/api/experiments", json={"scenario_name": "other"}, headers=h)
    assert r.status_code == 404
    assert (
        client.post("/api/experiments", json={"scenario_name": "ci-one"}, headers=h).status_code
        == 201
    )


def test_rate_limit_per_token(client: TestClient, tokens: Tokens) -> None:
    with db.new_session() as s:
        _, tok = auth.create_token(s, "slow", "viewer", rate_limit_per_min=3)
        s.commit()
    h = {"Authorization": f"Bearer {tok}"}
    codes = [client.get("/api/whoami", headers=h).status_code for _ in range(4)]
    assert codes == [200, 200, 200, 429]
    r = client.get("/api/whoami", headers=h)
    assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
    assert client.get("/api/whoami", headers=tokens.h("viewer")).status_code == 200  # per token


def test_run_result_is_served_as_stored_and_only_within_scope(
    client: TestClient, tokens: Tokens
) -> None:
    """GET /api/runs/{id}/result hands on the stored JSON text (no re-encoding): the
    same document, 404 before a result exists, and 404 to a token whose scope excludes it."""
    exp = make_experiment(client, tokens, "ci-one", reps=1)
    rid = run_ids(exp["experiment"]["id"])[0]  # type: ignore[index]
    assert client.get(f"/api/runs/{rid}/result", headers=tokens.h("viewer")).status_code == 404
    doc = {"schema": "satlab.run/1", "status": "ok", "flows": [], "name": "ü \u2028"}
    with db.new_session() as s:
        runs.claim(s, rid, ME)
    with db.new_session() as s:
        runs.finish(s, rid, ME, doc, None)
    r = client.get(f"/api/runs/{rid}/result", headers=tokens.h("viewer"))
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == doc
    with db.new_session() as s:
        _, tok = auth.create_token(s, "ci", "viewer", scope=["other-*"])
        s.commit()
    r = client.get(f"/api/runs/{rid}/result", headers={"Authorization": f"Bearer {tok}"})
    assert r.status_code == 404 and "does not exist" in r.text
