"""Experiments: matrix, estimate, idempotent submission, priorities, cancel, retry, listing."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import text

from satlab import db

from .conftest import Tokens, make_experiment, scenario_yaml, upload_fade


def _jobs() -> list[tuple[int, str, int, dict[str, int]]]:
    with db.get_engine().connect() as c:
        return [
            (r[0], r[1], r[2], r[3])
            for r in c.execute(
                text("SELECT id, status::text, priority, args FROM procrastinate_jobs ORDER BY id")
            )
        ]


def test_submit_makes_the_matrix_and_queues_one_job_per_run(
    client: TestClient, tokens: Tokens
) -> None:
    sub = make_experiment(
        client,
        tokens,
        "mx",
        reps=2,
        priority=5,
        sweep={"path": "forward.bit_errors.ber", "values": [1e-7, 1e-6, 1e-5]},
    )
    exp, est = sub["experiment"], sub["estimate"]
    assert sub["created"] is True
    # 2 configurations x 3 sweep values x 2 repetitions
    assert est["runs"] == 12
    assert est["overhead_source"] == "as estimated at submission"
    assert est["total_s"] == 12 * (2 + 3.0)
    full = client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).json()
    runs = full["runs"]
    assert len(runs) == 12 and {r["state"] for r in runs} == {"queued"}
    assert {r["seed"] for r in runs if r["repetition"] == 1} == {8}  # scenario seed + repetition
    jobs = _jobs()
    assert len(jobs) == 12 and {j[1] for j in jobs} == {"todo"} and {j[2] for j in jobs} == {5}
    assert sorted(j[3]["run_id"] for j in jobs) == sorted(r["id"] for r in runs)


def test_plan_gives_the_estimate_without_creating(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    sc = client.post(
        "/api/scenarios", json={"yaml": scenario_yaml("pl", 3)}, headers=tokens.h("submitter")
    ).json()
    r = client.post(
        "/api/experiments/plan",
        json={"scenario_name": "pl", "configurations": ["bbr"]},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 200, r.text
    assert r.json()["estimate"]["runs"] == 3 and r.json()["estimate"]["total_s"] == 15.0
    assert {x["configuration"] for x in r.json()["runs"]} == {"bbr"}
    assert client.get("/api/experiments", headers=tokens.h("viewer")).json()["total"] == 0
    r = client.post(
        "/api/experiments",
        json={"scenario_id": sc["id"], "configurations": ["nope"]},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("configurations.0:")
    r = client.post(
        "/api/experiments",
        json={"scenario_id": sc["id"], "repetitions": 0},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("repetitions:")


def test_idempotency_key_never_duplicates(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    sc = client.post(
        "/api/scenarios", json={"yaml": scenario_yaml("idem", 1)}, headers=tokens.h("submitter")
    ).json()
    h = {**tokens.h("submitter"), "Idempotency-Key": "ci-build-42"}
    a = client.post("/api/experiments", json={"scenario_id": sc["id"]}, headers=h)
    b = client.post("/api/experiments", json={"scenario_id": sc["id"]}, headers=h)
    assert a.status_code == 201 and b.status_code == 200
    assert a.json()["experiment"]["id"] == b.json()["experiment"]["id"]
    assert b.json()["created"] is False
    assert len(_jobs()) == 2
    # The key is per token: another token's same key is a new experiment.
    h2 = {**tokens.h("other_submitter"), "Idempotency-Key": "ci-build-42"}
    c = client.post("/api/experiments", json={"scenario_id": sc["id"]}, headers=h2)
    assert c.status_code == 201 and c.json()["experiment"]["id"] != a.json()["experiment"]["id"]


def test_cancel_and_retry(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, "cx", reps=1)["experiment"]
    eid = exp["id"]
    assert (
        client.post(
            f"/api/experiments/{eid}/cancel", headers=tokens.h("other_submitter")
        ).status_code
        == 403
    )
    r = client.post(f"/api/experiments/{eid}/cancel", headers=tokens.h("submitter"))
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    assert {x["state"] for x in r.json()["runs"]} == {"cancelled"}
    assert {j[1] for j in _jobs()} == {"cancelled"}
    # Retry re-queues failed runs only.
    with db.get_engine().begin() as c:
        c.execute(
            text("UPDATE runs SET state = 'failed', error = 'x', attempt = 1 WHERE index = 0")
        )
    r = client.post(f"/api/experiments/{eid}/retry", headers=tokens.h("admin"))
    assert r.status_code == 200
    states = {x["index"]: x["state"] for x in r.json()["runs"]}
    assert states == {0: "queued", 1: "cancelled"} and r.json()["state"] == "running"
    assert [j[1] for j in _jobs()].count("todo") == 1


def test_list_filters_and_pagination(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    for name in ("la", "lb"):
        client.post(
            "/api/scenarios", json={"yaml": scenario_yaml(name, 1)}, headers=tokens.h("submitter")
        )
    for name in ("la", "la", "lb"):
        r = client.post(
            "/api/experiments", json={"scenario_name": name}, headers=tokens.h("submitter")
        )
        assert r.status_code == 201
    v = tokens.h("viewer")
    assert client.get("/api/experiments", headers=v).json()["total"] == 3
    page = client.get("/api/experiments?scenario=la&limit=1&offset=1", headers=v).json()
    assert page["total"] == 2 and len(page["items"]) == 1
    assert client.get("/api/experiments?state=running", headers=v).json()["total"] == 0
    assert client.get("/api/experiments?mine=true", headers=v).json()["total"] == 0
    runs = client.get("/api/runs?configuration=bbr&limit=2", headers=v).json()
    assert runs["total"] == 3 and len(runs["items"]) == 2
