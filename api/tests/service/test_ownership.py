"""Ownership (issue 24): submitters write only their own scenarios and uploads, admins all; a
revision pins the content of the files it names, so nobody's later upload changes what its
experiments run on."""

from __future__ import annotations

from fastapi.testclient import TestClient

from .conftest import FADE, Tokens, make_scenario, scenario_yaml, upload_fade

OTHER_FADE = b"0 0\n10 9\n20 0\n"


def upload(client: TestClient, tokens: Tokens, role: str, content: bytes) -> object:
    return client.post(
        "/api/files",
        params={"name": "traces/fade.txt", "kind": "attenuation"},
        content=content,
        headers=tokens.h(role),
    )


def test_only_the_owner_or_an_admin_revises_a_scenario(client: TestClient, tokens: Tokens) -> None:
    upload_fade(client, tokens)
    sc = make_scenario(client, tokens, "mine")
    text = scenario_yaml("mine").replace("seed: 7", "seed: 8")
    url = f"/api/scenarios/{sc['id']}/revisions"
    r = client.post(url, json={"yaml": text}, headers=tokens.h("other_submitter"))
    assert r.status_code == 403, r.text
    h = {**tokens.h("other_submitter"), "Content-Type": "application/yaml"}
    assert client.post("/api/scenarios/import", content=text, headers=h).status_code == 403
    assert client.post(url, json={"yaml": text}, headers=tokens.h("submitter")).status_code == 201
    text3 = text.replace("seed: 8", "seed: 9")
    assert client.post(url, json={"yaml": text3}, headers=tokens.h("admin")).status_code == 201


def test_only_the_owner_or_an_admin_adds_a_version_of_an_upload(
    client: TestClient, tokens: Tokens
) -> None:
    assert upload(client, tokens, "submitter", FADE).status_code == 201  # type: ignore[attr-defined]
    r = upload(client, tokens, "other_submitter", OTHER_FADE)
    assert r.status_code == 403, r.text  # type: ignore[attr-defined]
    assert "traces/fade.txt" in r.text  # type: ignore[attr-defined]
    assert upload(client, tokens, "submitter", OTHER_FADE).status_code == 201  # type: ignore[attr-defined]
    assert upload(client, tokens, "admin", FADE + b"30 1\n").status_code == 201  # type: ignore[attr-defined]


def test_a_revision_pins_its_files_by_content(client: TestClient, tokens: Tokens) -> None:
    first = upload(client, tokens, "submitter", FADE).json()  # type: ignore[attr-defined]
    sc = make_scenario(client, tokens, "pinned")
    rev = client.get(f"/api/scenarios/{sc['id']}/revisions/1", headers=tokens.h("viewer")).json()
    assert rev["files"] == {"traces/fade.txt": first["sha256"]}
    # A newer upload of the name does not change what revision 1's experiments use...
    newer = upload(client, tokens, "submitter", OTHER_FADE).json()  # type: ignore[attr-defined]
    body = {"scenario_id": sc["id"], "revision": 1}
    r = client.post("/api/experiments", json=body, headers=tokens.h("submitter"))
    assert r.status_code == 201, r.text
    assert r.json()["experiment"]["files"] == {"traces/fade.txt": first["id"]}
    # ...and revising with the same text takes it up as revision 2.
    r = client.post(
        f"/api/scenarios/{sc['id']}/revisions",
        json={"yaml": scenario_yaml("pinned")},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 201 and r.json()["number"] == 2, r.text
    assert r.json()["files"] == {"traces/fade.txt": newer["sha256"]}
