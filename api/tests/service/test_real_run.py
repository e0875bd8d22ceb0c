"""A real short run through the API, the worker and the testbed (root and the emulator binary
needed; skipped otherwise): stored, compared, reported, and live control reaching the running
emulator."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient

from satlab import db, worker
from satlab.service.models import Run

from .conftest import Tokens, needs_testbed

pytestmark = needs_testbed

SHORT = """\
version: 1
name: real-short
description: "a <b>short</b> run & its report"
seed: 3
duration_s: 4
link:
  forward: {delay_ms: 250, kind: fixed, rate_bps: 10.0e6}
  return: {delay_ms: 250, kind: fixed, rate_bps: 2.0e6}
traffic:
  - kind: bulk_tcp
    duration_s: 4
configurations:
  - name: cubic
    transport: {congestion_control: cubic}
"""


def test_real_run_with_live_control(
    client: TestClient, tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(worker, "RUNNER", worker._default_runner)
    sc = client.post("/api/scenarios", json={"yaml": SHORT}, headers=tokens.h("submitter")).json()
    exp = client.post(
        "/api/experiments", json={"scenario_id": sc["id"]}, headers=tokens.h("submitter")
    ).json()["experiment"]
    run_id = client.get(f"/api/experiments/{exp['id']}", headers=tokens.h("viewer")).json()["runs"][
        0
    ]["id"]
    answer: dict[str, Any] = {}

    def operator() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with db.new_session() as s:
                r = s.get(Run, run_id)
                if r is not None and r.testbed_id and r.progress > 0.1:
                    break
            time.sleep(0.2)
        resp = client.post(
            f"/api/runs/{run_id}/control",
            json={"direction": "forward", "delay_ms": 300},
            headers=tokens.h("submitter"),
        )
        answer["status"], answer["body"] = resp.status_code, resp.json()

    t = threading.Thread(target=operator)
    t.start()
    state = worker.execute_run(run_id)
    t.join(10)
    run = client.get(f"/api/runs/{run_id}", headers=tokens.h("viewer")).json()
    assert state == "succeeded", run["error"]
    assert run["summary"]["goodput_bps"] > 1e5  # slow start over a 500 ms RTT
    assert answer["status"] == 200, answer
    assert answer["body"]["status_code"] == 200, answer
    series = client.get(f"/api/runs/{run_id}/series", headers=tokens.h("viewer")).json()
    assert any(s["name"].startswith("link.forward.") for s in series)
    assert any(s["name"].endswith(".cwnd") for s in series)

    # The experiment's report: one HTML file with every section, charts inline, nothing fetched.
    rep = client.get(f"/api/experiments/{exp['id']}/report", headers=tokens.h("viewer"))
    assert rep.status_code == 200 and rep.headers["content-type"].startswith("text/html")
    assert 'filename="satlab-experiment-' in rep.headers["content-disposition"]
    page = rep.text
    for section in ("Link", "Configurations", "Comparison with cubic", "Expectations", "Over time"):
        assert f"<h2>{section}</h2>" in page, section
    assert "a &lt;b&gt;short&lt;/b&gt; run &amp; its report" in page  # escaped, never markup
    assert "<script" not in page and "src=" not in page and "href=" not in page
    assert "cwnd (packets)" in page and page.count("<polyline") >= 2  # link and sender charts
    assert f"<td>{run_id}</td><td>cubic</td>" in page and "succeeded" in page
