"""The worker against the real database, the real procrastinate queue and real testbed runs
(root and the emulator binary): claim, heartbeat, stored results, a run whose agent dies, the
janitor. A worker killed mid-run, and the other faults, are in test_faults.py."""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update

from satlab import db, worker
from satlab.service import runs
from satlab.service.models import Run, RunEvent
from satlab.settings import get_settings

from .conftest import Tokens, make_experiment, needs_testbed, scenario_yaml, upload_fade
from .runhelpers import ME, agents_of, get_run, going, run_ids, submit_runs, wait_for


def _kill_srv1_agent_once_running(rid: int, timeout_s: float = 30) -> None:
    """SIGKILL the srv1 agent of the run's testbed once its flows are going."""
    r = wait_for("the run getting going", lambda: going(rid), timeout_s)
    assert r.testbed_id
    os.kill(agents_of(r.testbed_id)["srv1"], signal.SIGKILL)


@needs_testbed
def test_procrastinate_worker_runs_every_queued_run(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "heartbeat_period_s", 0.5)  # several beats per 2 s run
    upload_fade(client, tokens)
    text_ = scenario_yaml("w1", 2) + "capture: {snaplen_bytes: 96, max_bytes_per_host: 100000}\n"
    sc = client.post("/api/scenarios", json={"yaml": text_}, headers=tokens.h("submitter")).json()
    exp = client.post(
        "/api/experiments", json={"scenario_id": sc["id"]}, headers=tokens.h("submitter")
    ).json()["experiment"]
    worker.app.run_worker(
        queues=["runs"],
        concurrency=1,
        wait=False,
        install_signal_handlers=False,
        delete_jobs="successful",
    )
    full = client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).json()
    assert full["state"] == "succeeded", [r["error"] for r in full["runs"]]
    assert all(r["state"] == "succeeded" and r["attempt"] == 1 for r in full["runs"])
    with db.get_engine().connect() as c:
        assert c.execute(text("SELECT count(*) FROM procrastinate_jobs")).scalar() == 0
    run = full["runs"][0]
    # 2 s at a 500 ms RTT is slow start only: a few hundred kbit/s.
    assert run["summary"]["goodput_bps"] > 5e4 and run["summary"]["retransmissions"] >= 0
    doc = client.get(f"/api/runs/{run['id']}/result", headers=tokens.h("viewer")).json()
    assert doc["schema"] == "satlab.run/1" and "timeseries" not in doc
    series = client.get(f"/api/runs/{run['id']}/series", headers=tokens.h("viewer")).json()
    names = {s["name"] for s in series}
    assert "link.forward.modcod" in names
    assert any(n.startswith("tcp.srv1:") and n.endswith(".cwnd") for n in names), names
    ds = client.get(
        f"/api/runs/{run['id']}/series/link.forward.attenuation_db?buckets=3",
        headers=tokens.h("viewer"),
    ).json()
    # 2 s of 100 ms telemetry; the fade trace (0 dB rising to 3 dB over 10 s) shows in them.
    assert ds["points"] >= 15 and len(ds["buckets"]) == 3
    assert ds["buckets"][0]["mean"] < ds["buckets"][-1]["mean"] < 3
    arts = client.get(f"/api/runs/{run['id']}/artifacts", headers=tokens.h("viewer")).json()
    assert {a["name"] for a in arts} == {"pcap.srv1", "pcap.cli1"}
    assert all(0 < a["size_bytes"] <= 100_000 + 24 for a in arts)
    pcap = client.get(f"/api/runs/{run['id']}/artifacts/pcap.srv1", headers=tokens.h("viewer"))
    assert pcap.content.startswith(b"\xd4\xc3\xb2\xa1")
    # Aggregation, comparison, export.
    agg = client.get(f"/api/experiments/{exp['id']}/results", headers=tokens.h("viewer")).json()
    row = next(r for r in agg["rows"] if r["configuration"] == "bbr")
    g = row["metrics"]["goodput_bps"]
    assert g["n"] == 2 and g["mean"] > 5e4 and g["half_width"] is not None
    cmp = client.get(
        f"/api/experiments/{exp['id']}/comparison?baseline=cubic&metric=goodput_bps",
        headers=tokens.h("viewer"),
    ).json()
    bbr = next(c for c in cmp["points"][0]["configurations"] if c["configuration"] == "bbr")
    m = bbr["metrics"]["goodput_bps"]
    assert m["ratio"] == pytest.approx(
        g["mean"]
        / next(r for r in agg["rows"] if r["configuration"] == "cubic")["metrics"]["goodput_bps"][
            "mean"
        ]
    )
    csv = client.get(f"/api/experiments/{exp['id']}/export?format=csv", headers=tokens.h("viewer"))
    assert (
        csv.text.splitlines()[0].startswith("run_id,configuration")
        and len(csv.text.splitlines()) == 5
    )
    ev = client.get(f"/api/experiments/{exp['id']}/events?follow=false", headers=tokens.h("viewer"))
    assert ev.headers["content-type"].startswith("text/event-stream")
    states = [line for line in ev.text.splitlines() if line.startswith('data: {"id"')]
    assert any('"state": "succeeded"' in s for s in states) and ev.text.rstrip().endswith(
        "data: {}"
    )
    # Heartbeats of a running run carry the newest TCP_INFO of the sender's connection.
    live = [
        json.loads(line[len("data: ") :])["metrics"]
        for line in states
        if '"state": "running"' in line and '"tcp"' in line
    ]
    assert live, "no heartbeat carried TCP_INFO"
    conn = live[-1]["tcp"][0]
    assert conn["host"] == "srv1" and conn["dport"] == 5001 and conn["cc"] in ("cubic", "bbr")
    assert conn["cwnd"] >= 1 and conn["srtt_us"] > 400_000 and "forward" in live[-1]
    metrics = client.get("/api/metrics", headers=tokens.h("viewer")).text
    assert 'satlab_runs{state="succeeded"} 4' in metrics and "satlab_queue_depth 0" in metrics


@needs_testbed
def test_failed_run_is_recorded_and_retried(client: TestClient, tokens: Tokens) -> None:
    exp = submit_runs(client, tokens, "w2", duration_s=6)
    (rid,) = run_ids(exp["id"])
    killer = threading.Thread(target=_kill_srv1_agent_once_running, args=(rid,))
    killer.start()
    assert worker.execute_run(rid, ME) == "failed"
    killer.join()
    bad = get_run(rid)
    assert bad.state == "failed" and "agent srv1 died" in (bad.error or "")
    full = client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).json()
    assert full["state"] == "failed"
    client.post(f"/api/experiments/{exp['id']}/retry", headers=tokens.h("submitter"))
    assert worker.execute_run(rid, ME) == "succeeded"
    assert get_run(rid).attempt == 2
    assert (
        client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).json()["state"]
        == "succeeded"
    )


def test_a_run_is_claimed_once(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, "w3", reps=1)["experiment"]
    rid = run_ids(exp["id"])[0]
    other = runs.WorkerIdentity("other-host", 1)
    with db.new_session() as s:
        assert runs.claim(s, rid, ME) is not None
    with db.new_session() as s:
        assert runs.claim(s, rid, other) is None
    # Only the holder may heartbeat or finish it.
    with db.new_session() as s:
        assert runs.heartbeat(s, rid, other, 0.5, "x") is False
        assert runs.heartbeat(s, rid, ME, 0.5, "halfway", {"modcod": 3}) is True
        assert runs.finish(s, rid, other, None, "nope") is None
    assert get_run(rid).state == "running" and get_run(rid).progress == 0.5
    # A cancelled run is not executed.
    rid2 = run_ids(exp["id"])[1]
    client.post(f"/api/experiments/{exp['id']}/cancel", headers=tokens.h("submitter"))
    assert worker.execute_run(rid2, ME) is None
    assert get_run(rid).cancel_requested is True
    with db.new_session() as s:
        assert runs.finish(s, rid, ME, None, None) == "cancelled"


def test_janitor_retries_then_fails_stale_runs(client: TestClient, tokens: Tokens) -> None:
    exp = make_experiment(client, tokens, "w4", reps=1)["experiment"]
    rid = run_ids(exp["id"])[0]
    dead = runs.WorkerIdentity("elsewhere", 999_999)
    swept: list[str] = []

    def sweep() -> list[str]:
        swept.append("x")
        return ["ab12"]

    with db.new_session() as s:
        runs.claim(s, rid, dead)
    stale = get_settings().stale_after_s + 5
    with db.get_engine().begin() as c:
        c.execute(
            text("UPDATE runs SET heartbeat_at = now() - make_interval(secs => :s) WHERE id = :id"),
            {"s": stale, "id": rid},
        )
    with db.new_session() as s:
        acts = runs.janitor(s, ME, sweep)
    assert acts == [{"run_id": rid, "state": "queued", "reason": acts[0]["reason"]}]
    assert "stopped heartbeating" in acts[0]["reason"] and swept == []  # another machine's run
    r = get_run(rid)
    assert r.state == "queued" and r.attempt == 1 and r.job_id is not None
    # Second attempt dies on this machine: its testbed is swept and, attempts used up, it fails.
    local_dead = runs.WorkerIdentity(ME.host, 999_999)
    with db.new_session() as s:
        runs.claim(s, rid, local_dead)
    with db.new_session() as s:
        acts = runs.janitor(s, ME, sweep)  # no wait: the local worker process is gone
    assert [a["state"] for a in acts] == ["failed"] and swept == ["x"]
    r = get_run(rid)
    assert r.state == "failed" and "attempt 2 of 2" in (r.error or "")
    with db.new_session() as s:
        msgs = list(s.scalars(select(RunEvent.message).where(RunEvent.run_id == rid)))
    assert any("now failed" in m for m in msgs)


def test_live_control_goes_through_the_runs_worker(client: TestClient, tokens: Tokens) -> None:

    from satlab.service import control

    exp = make_experiment(client, tokens, "w6", reps=1)["experiment"]
    rid = run_ids(exp["id"])[0]
    body = {"direction": "forward", "attenuation_db": 6.0}
    r = client.post(f"/api/runs/{rid}/control", json=body, headers=tokens.h("submitter"))
    assert r.status_code == 409  # not running
    with db.new_session() as s:
        runs.claim(s, rid, ME)
    assert (
        client.post(f"/api/runs/{rid}/control", json=body, headers=tokens.h("viewer")).status_code
        == 403
    )
    assert (
        client.post(
            f"/api/runs/{rid}/control", json=body, headers=tokens.h("other_submitter")
        ).status_code
        == 403
    )
    r = client.post(
        f"/api/runs/{rid}/control", json={"direction": "both"}, headers=tokens.h("submitter")
    )
    assert r.status_code == 422
    r = client.post(f"/api/runs/{rid}/control", json={"ber": 2}, headers=tokens.h("submitter"))
    assert r.status_code == 422 and r.json()["errors"][0].startswith("ber:")
    # The worker side: serve the pending request (no testbed up yet, so the emulator's answer
    # is a 503 carried back to the caller).
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            control.serve_pending(rid, None)
            time.sleep(0.1)

    t = threading.Thread(target=serve)
    t.start()
    try:
        r = client.post(f"/api/runs/{rid}/control", json=body, headers=tokens.h("admin"))
    finally:
        stop.set()
        t.join()
    assert r.status_code == 200, r.text
    assert r.json()["status_code"] == 503 and "not up yet" in r.json()["response"]["error"]


def test_heartbeat_thread_beats(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "heartbeat_period_s", 0.2)
    exp = make_experiment(client, tokens, "w7", reps=1, configurations=["cubic"])["experiment"]
    rid = run_ids(exp["id"])[0]
    with db.new_session() as s:
        runs.claim(s, rid, ME)
    with db.get_engine().begin() as c:
        c.execute(
            update(Run).where(Run.id == rid).values(heartbeat_at=text("now() - interval '1 hour'"))
        )
    hb = worker.Heartbeat(rid, ME)
    hb.update(0.25, "1 flow(s) running")
    hb.start()
    time.sleep(1.2)
    hb.stop()
    r = get_run(rid)
    assert r.progress == 0.25
    with db.get_engine().connect() as c:
        age = c.execute(
            text("SELECT extract(epoch FROM now() - heartbeat_at) FROM runs WHERE id = :i"),
            {"i": rid},
        ).scalar()
    assert age is not None and age < 5
