"""Scenarios CRUD, immutable revisions, YAML import/export, uploaded files, validation errors."""

from __future__ import annotations

from fastapi.testclient import TestClient

from .conftest import FADE, Tokens, scenario_yaml, upload_fade


def test_create_read_revise_export_delete(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    text = scenario_yaml("crud")
    r = client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))
    assert r.status_code == 201, r.text
    sc = r.json()
    assert sc["name"] == "crud" and sc["revisions"] == 1
    assert sc["latest"]["spec"]["link"]["forward"]["delay_ms"] == 250
    # The YAML comes back verbatim, comments and all.
    y = client.get(f"/api/scenarios/{sc['id']}/yaml", headers=tokens.h("viewer"))
    assert y.status_code == 200 and y.text == text
    # Revising adds revision 2; revision 1 is unchanged.
    text2 = text.replace("seed: 7", "seed: 8")
    r = client.post(
        f"/api/scenarios/{sc['id']}/revisions", json={"yaml": text2}, headers=tokens.h("submitter")
    )
    assert r.status_code == 201 and r.json()["number"] == 2
    r1 = client.get(f"/api/scenarios/{sc['id']}/revisions/1", headers=tokens.h("viewer")).json()
    assert r1["spec"]["seed"] == 7
    y1 = client.get(f"/api/scenarios/{sc['id']}/yaml?revision=1", headers=tokens.h("viewer"))
    assert y1.text == text
    revs = client.get(f"/api/scenarios/{sc['id']}/revisions", headers=tokens.h("viewer")).json()
    assert [x["number"] for x in revs] == [1, 2]
    # Same name again: conflict; listing finds it.
    r = client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))
    assert r.status_code == 409 and r.json()["detail"].startswith("name:")
    page = client.get("/api/scenarios?name=cru", headers=tokens.h("viewer")).json()
    assert page["total"] == 1 and page["items"][0]["revisions"] == 2
    # Another submitter may not delete it; its owner may.
    assert (
        client.delete(f"/api/scenarios/{sc['id']}", headers=tokens.h("other_submitter")).status_code
        == 403
    )
    assert (
        client.delete(f"/api/scenarios/{sc['id']}", headers=tokens.h("submitter")).status_code
        == 204
    )
    assert client.get(f"/api/scenarios/{sc['id']}", headers=tokens.h("viewer")).status_code == 404


def test_import_creates_then_revises(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    h = {**tokens.h("submitter"), "Content-Type": "application/yaml"}
    r = client.post("/api/scenarios/import", content=scenario_yaml("imp"), headers=h)
    assert r.status_code == 201, r.text
    r = client.post("/api/scenarios/import", content=scenario_yaml("imp"), headers=h)
    assert r.status_code == 200 and r.json()["revisions"] == 1  # unchanged text: no new revision
    r = client.post(
        "/api/scenarios/import",
        content=scenario_yaml("imp").replace("seed: 7", "seed: 9"),
        headers=h,
    )
    assert r.status_code == 200 and r.json()["revisions"] == 2


def test_validation_errors_name_the_field(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    bad = scenario_yaml("bad").replace("duration_s: 2\nrep", "duration_s: -1\nrep")
    r = client.post("/api/scenarios", json={"yaml": bad}, headers=tokens.h("submitter"))
    assert r.status_code == 422
    assert any(e.startswith("duration_s:") for e in r.json()["errors"]), r.json()
    r = client.post(
        "/api/scenarios",
        json={"yaml": scenario_yaml("bad").replace("kind: bulk_tcp", "kind: nope")},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("traffic.0")
    r = client.post(
        "/api/scenarios", json={"yaml": "name: [unclosed"}, headers=tokens.h("submitter")
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("line ")
    # A file reference that was never uploaded names the field.
    r = client.post(
        "/api/scenarios",
        json={"yaml": scenario_yaml("bad").replace("traces/fade.txt", "traces/missing.txt")},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 422
    assert r.json()["errors"][0].startswith("link.forward.downlink.attenuation.file:")
    # Request-body errors have the same form.
    r = client.post("/api/scenarios", json={"yml": "x"}, headers=tokens.h("submitter"))
    assert r.status_code == 422 and any(e.startswith("yaml:") for e in r.json()["errors"])


def test_schema_endpoint(client: TestClient, tokens: Tokens) -> None:
    r = client.get("/api/scenario-schema", headers=tokens.h("viewer"))
    assert r.status_code == 200 and "duration_s" in r.json()["properties"]
    # the link is described by the emulator's own schema, bounds included
    schema = r.json()
    forward = schema["properties"]["link"]["properties"]["forward"]["$ref"].split("/")[-1]
    acm = schema["$defs"][forward]["properties"]["acm"]["$ref"].split("/")[-1]
    assert schema["$defs"][acm]["properties"]["margin_db"]["maximum"] == 20.0


def test_file_upload_validation_gives_the_line(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("submitter")
    cases = [
        ("attenuation", b"0 0\n10 x\n", 'line 2: attenuation dB "x" is not a valid number'),
        (
            "attenuation",
            b"# c\n0 0\n\n5 1\n5 2\n",
            "line 5: tick 5 is not after the previous tick 5",
        ),
        ("attenuation", b"0 0 0\n", "line 1: expected 2 fields"),
        ("attenuation", b"-1 0\n", 'line 1: tick "-1" is not an unsigned integer'),
        ("attenuation", b"0 200\n", "line 1: attenuation dB 200 is outside [-50, 100]"),
        ("delay", b"0 250\n1 20000\n", "line 2: delay ms 20000 is outside [0, 10000]"),
        ("modcod", b"nb_fmt = 1\n1 QPSK 1/4 0.49\n", "line 2: expected 5 fields"),
        ("modcod", b"1 QPSK 5/4 0.49 -2.35\n", 'line 1: code rate "5/4"'),
        ("per", b"modcod_id,esn0_db,per\n1,2.0,0.5\n1,2.0,0.1\n", "line 3: MODCOD 1 has two rows"),
        ("attenuation", b"", "no data lines"),
    ]
    for kind, body, want in cases:
        r = client.post(
            "/api/files", params={"name": "f.txt", "kind": kind}, content=body, headers=h
        )
        assert r.status_code == 422, (kind, body, r.text)
        assert want in r.json()["detail"], (want, r.json())
    r = client.post(
        "/api/files", params={"name": "f.txt", "kind": "bogus"}, content=FADE, headers=h
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("kind:")
    r = client.post(
        "/api/files", params={"name": "../etc/x", "kind": "attenuation"}, content=FADE, headers=h
    )
    assert r.status_code == 422 and r.json()["errors"][0].startswith("name:")
    big = b"0 0\n" * ((5 << 20) // 4)
    r = client.post(
        "/api/files", params={"name": "big.txt", "kind": "attenuation"}, content=big, headers=h
    )
    assert r.status_code == 413
    good = [
        ("modcod", b"nb_fmt = 2\n1 QPSK 1/4 0.490243 -2.35\n2 8PSK 3/5 1.779991 5.50\n"),
        ("per", b"modcod_id,esn0_db,per\n1,-3,0.5\n1,-2,1e-7\n"),
        ("delay", b"0 250\n100 260\n"),
    ]
    for kind, body in good:
        r = client.post(
            "/api/files", params={"name": f"{kind}.txt", "kind": kind}, content=body, headers=h
        )
        assert r.status_code == 201, r.text
    # Same name and content: the same row; other content: a new version.
    a = client.post(
        "/api/files", params={"name": "v.txt", "kind": "delay"}, content=b"0 1\n", headers=h
    )
    b = client.post(
        "/api/files", params={"name": "v.txt", "kind": "delay"}, content=b"0 1\n", headers=h
    )
    c = client.post(
        "/api/files", params={"name": "v.txt", "kind": "delay"}, content=b"0 2\n", headers=h
    )
    assert a.json()["id"] == b.json()["id"] != c.json()["id"]
    got = client.get(f"/api/files/{c.json()['id']}/content", headers=tokens.h("viewer"))
    assert got.content == b"0 2\n"
    assert client.get("/api/files?name=v.txt", headers=tokens.h("viewer")).json()["total"] == 2


def test_scenario_in_use_cannot_be_deleted(client: TestClient, tokens: Tokens) -> None:
    from .conftest import make_experiment

    make_experiment(client, tokens, "used", reps=1)
    sc = client.get("/api/scenarios?name=used", headers=tokens.h("viewer")).json()["items"][0]
    r = client.delete(f"/api/scenarios/{sc['id']}", headers=tokens.h("admin"))
    assert r.status_code == 409


def test_the_emulator_refuses_a_bad_link_at_submission(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    bad = scenario_yaml("badlink").replace(
        "delay_ms: 250\n", "delay_ms: 250\n    symbol_rate: 5\n", 1
    )
    r = client.post("/api/scenarios", json={"yaml": bad}, headers=tokens.h("submitter"))
    assert r.status_code == 422, r.text
    (err,) = r.json()["errors"]
    assert err.startswith("link: ") and "unknown field `symbol_rate`" in err
    swept = scenario_yaml("badsweep") + "sweep: {path: forward.queue.limit_packets, values: [0]}\n"
    r = client.post("/api/scenarios", json={"yaml": swept}, headers=tokens.h("submitter"))
    assert r.status_code == 422 and "forward.queue.limit_packets" in r.json()["errors"][0], r.text
