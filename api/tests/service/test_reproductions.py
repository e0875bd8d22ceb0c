"""POST /api/reproductions and GET /api/reproductions/latest against the real database: the
repository's reproduction scenarios (here a folder of the test's own, the module's SCENARIOS_DIR)
become experiments once per commit, and the report is assembled from them."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from satlab import cli, db
from satlab.reproduce import command, selection
from satlab.reproduce.version import commit
from satlab.rest_client import Client
from satlab.service import library
from satlab.service.models import Experiment, Run, Scenario, UploadedFile
from satlab.settings import get_settings

from .conftest import FADE, Tokens

REPRODUCTION = """\
# a reproduction scenario as the repository holds them
version: 1
name: {name}
seed: 3
duration_s: 10
repetitions: 3
link:
  forward:
    delay_ms: 250
    downlink:
      attenuation: {{type: file, file: traces/fade.txt}}
  return: {{delay_ms: 250, kind: fixed, rate_bps: 5.0e6}}
traffic:
  - {{kind: bulk_tcp, duration_s: 10}}
configurations:
  - {{name: cubic, transport: {{congestion_control: cubic}}}}
  - {{name: bbr, transport: {{congestion_control: bbr}}}}
sweep: {{path: forward.delay_ms, values: [250, 300]}}
expectations:
  - id: bbr-like-cubic
    claim: "BBR's goodput is within 0.8-1.5x CUBIC's"
    source: {{paper: "product"}}
    measure: "ratio(goodput_bps, bbr/cubic)"
    at: {{forward.delay_ms: 300}}
    band: [0.8, 1.5]
    direction: ">"
reproduction:
  paper: {paper}
{ci}"""
CI = "  ci: {duration_s: 4, repetitions: 2, sweep_values: {forward.delay_ms: [300]}}\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "reproductions" / "traces").mkdir(parents=True)
    (tmp_path / "reproductions" / "traces" / "fade.txt").write_bytes(FADE)
    for name, paper, ci in (("rep-a", "eten", CI), ("rep-b", "yang", "")):
        text = REPRODUCTION.format(name=name, paper=paper, ci=ci)
        (tmp_path / "reproductions" / f"{name}.yaml").write_text(text)
    monkeypatch.setattr(selection, "SCENARIOS_DIR", tmp_path)
    return tmp_path


def count(model: type) -> int:
    with db.new_session() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def test_ci_subset_is_submitted_once_per_commit(
    client: TestClient, tokens: Tokens, repo: Path
) -> None:
    r = client.post("/api/reproductions", json={"subset": "ci"}, headers=tokens.h("viewer"))
    assert r.status_code == 403, r.text
    r = client.post("/api/reproductions", json={"subset": "ci"}, headers=tokens.h("submitter"))
    assert r.status_code == 201, r.text
    first = r.json()
    assert first["commit"] == commit() and first["subset"] == "ci"
    [exp] = first["experiments"]  # rep-b has no reproduction.ci
    assert exp["scenario"] == "rep-a-ci" and exp["created"] and exp["runs"] == 2 * 1 * 2
    assert first["estimate_s"] == exp["estimate_s"] > 0
    with db.new_session() as s:
        e = s.get(Experiment, exp["experiment_id"])
        assert e is not None and e.idempotency_key == f"reproduce-{commit()}-ci-rep-a"
        assert e.scenario_spec["duration_s"] == 4 and e.matrix["repetitions"] == 2
    assert count(UploadedFile) == 1  # the trace, from beside the scenario
    with db.new_session() as s:  # the scenario and its file are the library's, not the caller's
        owner = library.system_principal(s).id
        sc = s.scalar(select(Scenario).where(Scenario.name == "rep-a-ci"))
        assert sc is not None and sc.created_by == owner
        assert s.scalar(select(UploadedFile.created_by)) == owner
    # Again, by the same token and by another: found, nothing new.
    for who in ("submitter", "other_submitter"):
        r = client.post("/api/reproductions", json={"subset": "ci"}, headers=tokens.h(who))
        assert r.status_code == 200, r.text
        again = r.json()["experiments"]
        assert [(x["experiment_id"], x["created"]) for x in again] == [
            (exp["experiment_id"], False)
        ]
    assert count(Experiment) == 1 and count(Run) == 4 and count(Scenario) == 1
    # The full subset of one paper is a part of its own; rep-a (full) is imported verbatim.
    r = client.post(
        "/api/reproductions", json={"subset": "full", "paper": "yang"}, headers=tokens.h("admin")
    )
    assert r.status_code == 201, r.text
    assert [x["scenario"] for x in r.json()["experiments"]] == ["rep-b"]
    yaml_text = client.get("/api/scenarios?name=rep-b", headers=tokens.h("viewer")).json()
    sid = yaml_text["items"][0]["id"]
    exported = client.get(f"/api/scenarios/{sid}/yaml", headers=tokens.h("viewer")).text
    assert exported == (repo / "reproductions" / "rep-b.yaml").read_text()


def test_bad_selections_name_the_field(client: TestClient, tokens: Tokens, repo: Path) -> None:
    h = tokens.h("submitter")
    r = client.post("/api/reproductions", json={"subset": "ci", "paper": "nope"}, headers=h)
    assert r.status_code == 422 and "paper" in r.text
    r = client.post("/api/reproductions", json={"subset": "ci", "claim": "no-such"}, headers=h)
    assert r.status_code == 422 and "claim: no reproduction scenario" in r.json()["detail"]
    r = client.post("/api/reproductions", json={"subset": "ci", "claim": "../x"}, headers=h)
    assert r.status_code == 422 and "claim" in r.text
    r = client.post("/api/reproductions", json={"path": "/etc/passwd"}, headers=h)
    assert r.status_code == 422 and "path" in r.text
    assert count(Experiment) == 0


def test_plan_limits_apply_to_the_whole_selection(
    client: TestClient, tokens: Tokens, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "max_pending_runs_per_token", 10)
    r = client.post("/api/reproductions", json={"subset": "full"}, headers=tokens.h("submitter"))
    assert r.status_code == 422, r.text
    assert "24 runs with the 0 this token has queued or running exceed its limit of 10" in r.text
    assert count(Experiment) == 0 and count(Scenario) == 0


def test_latest_report_gathers_the_commits_experiments(
    client: TestClient, tokens: Tokens, repo: Path
) -> None:
    r = client.get("/api/reproductions/latest", headers=tokens.h("viewer"))
    assert r.status_code == 404 and "no reproduction experiments" in r.text
    r = client.post("/api/reproductions", json={"subset": "ci"}, headers=tokens.h("submitter"))
    exp_id = r.json()["experiments"][0]["experiment_id"]
    rep = client.get("/api/reproductions/latest", headers=tokens.h("viewer")).json()
    assert rep["commit"] == commit()
    assert rep["summary"] == {"holds": 0, "direction": 0, "fails": 0, "no-data": 1, "total": 1}
    # The runs end as a worker ends them (state and headline metrics): BBR at 1.2x CUBIC.
    with db.new_session() as s:
        for run in s.scalars(select(Run).where(Run.experiment_id == exp_id)):
            g = (12e5 if run.configuration == "bbr" else 10e5) + 1e4 * run.repetition
            run.state, run.summary = "succeeded", {"goodput_bps": g}
        s.get(Experiment, exp_id).state = "succeeded"  # type: ignore[union-attr]
        s.commit()
    rep = client.get("/api/reproductions/latest", headers=tokens.h("viewer")).json()
    [claim] = rep["claims"]
    assert claim["verdict"] == "holds" and claim["n"] == 2
    assert claim["mean"] == pytest.approx(12.05e5 / 10.05e5)
    assert claim["experiment_id"] == exp_id and claim["scenario"] == "rep-a"
    assert claim["seeds"] == [3, 4] and claim["subset"] == "ci"
    assert claim["versions"]["commit"] == commit()
    [part] = rep["parts"]
    assert part["state"] == "succeeded" and part["commit"] == commit() and part["at"]
    other = client.get(
        "/api/reproductions/latest", params={"commit": "0000000"}, headers=tokens.h("viewer")
    )
    assert other.status_code == 404 and "for commit 0000000" in other.text


def test_cli_submissions_and_the_api_share_keys_and_the_report(
    server: str, tokens: Tokens, repo: Path, tmp_path: Path
) -> None:
    """`satlab reproduce --service`: the CLI's submission is the one POST /api/reproductions finds
    (same key), and --report-only writes the commit's report from GET /api/reproductions/latest."""
    entries = selection.select(selection.load_entries(repo), "ci")
    client = Client(server, tokens.submitter)
    [first] = command.submit_service(client, entries, "ci", commit())
    assert command.submit_service(client, entries, "ci", commit()) == [first]
    with httpx.Client(base_url=server, headers={"Authorization": f"Bearer {tokens.admin}"}) as h:
        r = h.post("/api/reproductions", json={"subset": "ci"})
    assert r.status_code == 200 and r.json()["experiments"][0]["experiment_id"] == first
    out, docs = tmp_path / "report", tmp_path / "reproductions.md"
    argv = ["reproduce", "--service", server, "--token", tokens.viewer, "--report-only"]
    with pytest.raises(SystemExit) as done:
        cli.main([*argv, "--out", str(out), "--docs", str(docs)])
    assert done.value.code == 1  # the runs are still queued: the report says so, and no data
    rep = json.loads((out / "report.json").read_text())
    assert rep["commit"] == commit() and rep["summary"]["no-data"] == 1
    assert rep["parts"][0]["experiment_id"] == first and rep["parts"][0]["state"] == "queued"
    assert "<svg" in (out / "report.html").read_text()
    assert f"Commit `{commit()}`" in docs.read_text()


def test_the_repositorys_ci_subset_goes_in(client: TestClient, tokens: Tokens) -> None:
    """The real reproduction scenarios of the repository: every one of the CI subset imports (its
    files uploaded, its links checked by the emulator) and becomes one experiment."""
    want = [e.name for e in selection.select(selection.load_entries(), "ci")]
    r = client.post("/api/reproductions", json={"subset": "ci"}, headers=tokens.h("submitter"))
    assert r.status_code == 201, r.text
    got = r.json()["experiments"]
    assert [x["scenario"] for x in got] == [f"{n}-ci" for n in want]
    assert all(x["created"] and x["runs"] > 0 for x in got)
