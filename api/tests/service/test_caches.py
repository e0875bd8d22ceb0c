"""The API's in-process caches (issue 24, API latency): the token cache honours a revocation made
elsewhere within its TTL and one made through the API at once; finished runs' results and
finished experiments' comparisons are served from doccache until a retry changes them; the
document cache stays within its byte bound, and a finished experiment's run counts in the list
are cached the same way."""

from __future__ import annotations

import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update

from satlab import db
from satlab.service import auth, doccache, runs
from satlab.service.models import ApiToken

from .conftest import Tokens, make_experiment
from .runhelpers import ME, run_ids


def _finish(rid: int, doc: dict[str, Any], error: str | None = None) -> None:
    with db.new_session() as s:
        assert runs.claim(s, rid, ME) is not None
    with db.new_session() as s:
        runs.finish(s, rid, ME, doc, error)


def _doc(goodput: float) -> dict[str, Any]:
    return {"schema": "satlab.run/1", "status": "ok", "flows": [{"goodput_bps": goodput}]}


def test_a_token_revoked_elsewhere_is_refused_within_the_ttl(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(auth.tokens, "ttl_s", 1.0)
    with db.new_session() as s:
        row, tok = auth.create_token(s, "elsewhere", "viewer")
        s.commit()
    h = {"Authorization": f"Bearer {tok}"}
    assert client.get("/api/whoami", headers=h).status_code == 200
    assert auth.tokens.get(auth.hash_token(tok)) is not None  # cached
    # As `satlab token revoke` or another API process would: straight in the database.
    with db.new_session() as s:
        s.execute(
            update(ApiToken).where(ApiToken.id == row.id).values(revoked_at=ApiToken.created_at)
        )
        s.commit()
    time.sleep(1.05)
    r = client.get("/api/whoami", headers=h)
    assert r.status_code == 401 and "revoked" in r.text


def test_a_token_revoked_through_the_api_is_refused_at_once(
    client: TestClient, tokens: Tokens
) -> None:
    with db.new_session() as s:
        row, tok = auth.create_token(s, "here", "viewer")
        s.commit()
    h = {"Authorization": f"Bearer {tok}"}
    assert client.get("/api/whoami", headers=h).status_code == 200
    r = client.delete(f"/api/tokens/{row.id}", headers=tokens.h("admin"))
    assert r.status_code == 200, r.text
    assert client.get("/api/whoami", headers=h).status_code == 401


def test_token_cache_is_bounded() -> None:
    cache = auth.TokenCache(ttl_s=60.0, max_entries=3)
    valid = auth._Valid(1, "t", "viewer", None, None, None)
    for i in range(10):
        cache.put(f"h{i}", valid)
        assert len(cache) <= 3
    assert cache.get("h9") is valid


def test_a_retried_run_result_replaces_the_cached_one(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, reps=1)
    eid = exp["experiment"]["id"]  # type: ignore[index]
    rid = run_ids(eid)[0]
    _finish(rid, {**_doc(1e6), "status": "error", "error": "first try"}, None)
    first = client.get(f"/api/runs/{rid}/result", headers=tokens.h("viewer"))
    assert first.json()["error"] == "first try"
    assert len(doccache.documents) == 1
    assert client.get(f"/api/runs/{rid}/result", headers=tokens.h("viewer")).json() == first.json()
    r = client.post(f"/api/experiments/{eid}/retry", headers=tokens.h("submitter"))
    assert r.status_code == 200, r.text
    _finish(rid, _doc(2e6))
    again = client.get(f"/api/runs/{rid}/result", headers=tokens.h("viewer"))
    assert again.json() == _doc(2e6)


def test_a_comparison_changes_when_a_retried_run_finishes(
    client: TestClient, tokens: Tokens
) -> None:
    exp = make_experiment(client, tokens, reps=1)  # cubic and bbr, one run each
    eid = exp["experiment"]["id"]  # type: ignore[index]
    cubic, bbr = run_ids(eid)
    _finish(cubic, _doc(1e6))
    _finish(bbr, _doc(0.0), "lost")
    url = f"/api/experiments/{eid}/comparison?baseline=cubic&metric=goodput_bps"

    def ratio() -> tuple[str, float | None]:
        r = client.get(url, headers=tokens.h("viewer"))
        assert r.status_code == 200, r.text
        body = r.json()
        bbr_row = body["points"][0]["configurations"][1]
        return body["state"], bbr_row["metrics"]["goodput_bps"]["ratio"]

    assert ratio() == ("failed", None)
    assert len(doccache.documents) == 1
    assert ratio() == ("failed", None)  # from the cache
    assert client.post(f"/api/experiments/{eid}/retry", headers=tokens.h("submitter")).is_success
    assert ratio() == ("running", None)
    _finish(bbr, _doc(2e6))
    assert ratio() == ("succeeded", pytest.approx(2.0))


def test_a_listed_experiment_counts_its_retried_runs(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, reps=1)
    eid = exp["experiment"]["id"]  # type: ignore[index]
    cubic, bbr = run_ids(eid)
    _finish(cubic, _doc(1e6))
    _finish(bbr, _doc(0.0), "lost")

    def listed() -> tuple[str, dict[str, int]]:
        r = client.get("/api/experiments?limit=50", headers=tokens.h("viewer"))
        assert r.status_code == 200, r.text
        item = r.json()["items"][0]
        return item["state"], item["runs_by_state"]

    assert listed() == ("failed", {"succeeded": 1, "failed": 1})
    assert len(doccache.documents) == 1
    assert listed() == ("failed", {"succeeded": 1, "failed": 1})  # from the cache
    assert client.post(f"/api/experiments/{eid}/retry", headers=tokens.h("submitter")).is_success
    assert listed() == ("running", {"succeeded": 1, "queued": 1})
    _finish(bbr, _doc(2e6))
    assert listed() == ("succeeded", {"succeeded": 2})


def test_document_cache_stays_within_its_bytes_and_drops_the_least_recently_used() -> None:
    cache = doccache.DocumentCache(max_bytes=800)
    for i in range(8):
        cache.put(i, bytes(100))
    assert cache.bytes == 800 and len(cache) == 8
    assert cache.get(0) is not None  # now the most recently used
    cache.put(8, bytes(100))
    assert cache.bytes == 800
    assert cache.get(1) is None and cache.get(0) is not None and cache.get(8) is not None
    cache.put(9, bytes(101))  # over an eighth of the bound: never kept
    assert cache.get(9) is None and cache.bytes == 800
    cache.put(0, bytes(50))  # replacing an entry counts its new size only
    assert cache.bytes == 750
