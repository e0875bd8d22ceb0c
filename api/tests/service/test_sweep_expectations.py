"""A two-dimensional sweep over traffic and host fields through the service and real testbed
runs, and the scenario's expectations judged by GET /api/experiments/{id}/expectations."""

from __future__ import annotations

from fastapi.testclient import TestClient

from satlab import worker

from .conftest import Tokens, needs_testbed, scenario_yaml, upload_fade

SWEEP_AND_CLAIMS = """\
sweep:
  - {path: traffic.0.start_s, values: [0, 0.5]}
  - {path: hosts.settings.rack, values: [false]}
expectations:
  - id: bbr-comparable
    claim: "BBR's goodput is within a factor of 100 of CUBIC's"
    source: {paper: product}
    measure: "ratio(goodput_bps, bbr/cubic)"
    band: [0.01, 100]
    direction: ">"
  - id: cubic-fast
    claim: "CUBIC reaches 10 Gbit/s in slow start on a GEO path"
    source: {paper: product, section: "none"}
    measure: "mean(goodput_bps, cubic)"
    at: {traffic.0.start_s: 0.5}
    band: [10.0e9, 20.0e9]
    linux_note: "a claim that cannot hold: the verdict must say so"
"""


def test_errors_in_sweeps_and_expectations_are_422_naming_the_field(
    client: TestClient, tokens: Tokens
) -> None:
    upload_fade(client, tokens)
    bad = scenario_yaml("sx", 1) + SWEEP_AND_CLAIMS.replace("values: [false]", "values: [3]")
    r = client.post("/api/scenarios", json={"yaml": bad}, headers=tokens.h("submitter"))
    assert r.status_code == 422
    assert "sweep.1.values.0: hosts.settings.rack: Input should be a valid boolean" in r.text
    bad = scenario_yaml("sx", 1) + SWEEP_AND_CLAIMS.replace("bbr/cubic", "bbr/reno")
    r = client.post("/api/scenarios", json={"yaml": bad}, headers=tokens.h("submitter"))
    assert (
        r.status_code == 422 and "expectations.0.measure: 'reno' is not a configuration" in r.text
    )


@needs_testbed
def test_two_dimensional_sweep_runs_and_its_expectations(
    client: TestClient, tokens: Tokens
) -> None:
    upload_fade(client, tokens)
    text = scenario_yaml("sx", 1) + SWEEP_AND_CLAIMS
    sc = client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))
    assert sc.status_code == 201, sc.text
    exp = client.post(
        "/api/experiments", json={"scenario_id": sc.json()["id"]}, headers=tokens.h("submitter")
    ).json()["experiment"]
    url = f"/api/experiments/{exp['id']}"
    before = client.get(f"{url}/expectations", headers=tokens.h("viewer")).json()
    assert [v["verdict"] for v in before] == ["no-data", "no-data"]
    worker.app.run_worker(queues=["runs"], concurrency=1, wait=False, install_signal_handlers=False)
    full = client.get(url, headers=tokens.h("viewer")).json()
    assert full["state"] == "succeeded", [r["error"] for r in full["runs"]]
    assert sorted((r["configuration"], tuple(r["sweep_value"])) for r in full["runs"]) == [
        ("bbr", (0, False)),
        ("bbr", (0.5, False)),
        ("cubic", (0, False)),
        ("cubic", (0.5, False)),
    ]
    for run in full["runs"]:
        doc = client.get(f"/api/runs/{run['id']}/result", headers=tokens.h("viewer")).json()
        start, rack = run["sweep_value"]
        assert doc["sweep"] == {
            "paths": ["traffic.0.start_s", "hosts.settings.rack"],
            "value": [start, rack],
        }
        assert doc["inputs"]["scenario"]["hosts"]["settings"]["rack"] is rack
        # The swept start time reached the sender on the testbed.
        assert abs(doc["flows"][0]["start_s"] - start) < 0.2, doc["flows"][0]
    cmp = client.get(f"{url}/comparison", headers=tokens.h("viewer")).json()
    assert sorted(p["sweep_value"][0] for p in cmp["points"]) == [0, 0.5]
    got = {v["id"]: v for v in client.get(f"{url}/expectations", headers=tokens.h("viewer")).json()}
    comparable, fast = got["bbr-comparable"], got["cubic-fast"]
    assert comparable["verdict"] == "holds" and comparable["n"] == 1
    assert comparable["ci"] is None  # one repetition: no interval
    assert "start_s=0, rack=false" in comparable["note"]
    assert fast["verdict"] == "fails" and 0 < fast["mean"] < 10e9
    assert fast["at"] == {"traffic.0.start_s": 0.5} and "start_s=0.5" in fast["note"]
    assert fast["linux_note"].startswith("a claim that cannot hold")


def test_overrides_keep_the_expectations_that_still_apply(
    client: TestClient, tokens: Tokens
) -> None:
    """A sweep override or a configuration subset leaves out the expectations naming what the
    experiment does not run, instead of refusing the submission."""
    upload_fade(client, tokens)
    text = scenario_yaml("so", 1) + SWEEP_AND_CLAIMS
    sc = client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter")).json()
    override = {"path": "traffic.0.start_s", "values": [0.25]}
    for body in ({"sweep": override}, {"configurations": ["cubic"]}):
        r = client.post(
            "/api/experiments",
            json={"scenario_id": sc["id"], **body},
            headers=tokens.h("submitter"),
        )
        assert r.status_code == 201, r.text
        url = f"/api/experiments/{r.json()['experiment']['id']}/expectations"
        got = client.get(url, headers=tokens.h("viewer")).json()
        # at traffic.0.start_s 0.5 is not run; bbr is not run
        want = ["bbr-comparable"] if "sweep" in body else ["cubic-fast"]
        assert [v["id"] for v in got] == want
        assert all(v["verdict"] == "no-data" for v in got)
    r = client.post(
        "/api/experiments/plan",
        json={
            "scenario_id": sc["id"],
            "sweep": [override, {"path": "duration_s", "values": [1, 2]}],
        },
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 200, r.text
    assert [x["sweep_value"] for x in r.json()["runs"]][::2] == [[0.25, 1], [0.25, 2]]
