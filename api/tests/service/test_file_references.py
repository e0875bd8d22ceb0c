"""Every file reference of every link a request can produce (the base link, sweep values, an
experiment's sweep override, a revision, an import) must name an upload, before anything reads a
file; no error message carries the content of a file the caller did not upload."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from satlab.service import files
from satlab.service.errors import Invalid

from .conftest import Tokens, make_scenario, scenario_yaml, upload_fade

SECRET = "SECRET-first-line-of-a-root-only-file"
FILE_FIELD = "forward.downlink.attenuation.file"


@pytest.fixture
def secret_file(tmp_path: Path) -> Iterator[str]:
    """A root-only file whose first line the emulator's trace parser would quote in its error."""
    p = tmp_path / "secret.txt"
    p.write_text(f"{SECRET}\n")
    p.chmod(0o600)
    yield str(p)


def with_sweep(name: str, values: list[str]) -> str:
    quoted = ", ".join(f'"{v}"' for v in values)
    return scenario_yaml(name) + f"sweep: {{path: {FILE_FIELD}, values: [{quoted}]}}\n"


def assert_refused_without_content(r: object, path: str) -> None:
    assert r.status_code == 422, r.text  # type: ignore[attr-defined]
    assert SECRET not in r.text  # type: ignore[attr-defined]
    assert f"no uploaded file named {path!r}" in r.text  # type: ignore[attr-defined]


def test_sweep_value_naming_a_path_outside_uploads_is_refused(
    client: TestClient, tokens: Tokens, secret_file: str
) -> None:
    upload_fade(client, tokens)
    for value in (secret_file, "../../../../" + secret_file.lstrip("/")):
        r = client.post(
            "/api/scenarios",
            json={"yaml": with_sweep("swept", ["traces/fade.txt", value])},
            headers=tokens.h("submitter"),
        )
        assert_refused_without_content(r, value)
    assert client.get("/api/scenarios", headers=tokens.h("viewer")).json()["total"] == 0


def test_revision_and_import_naming_a_path_outside_uploads_are_refused(
    client: TestClient, tokens: Tokens, secret_file: str
) -> None:
    upload_fade(client, tokens)
    sc = make_scenario(client, tokens, "rev")
    bad = with_sweep("rev", ["traces/fade.txt", secret_file])
    r = client.post(
        f"/api/scenarios/{sc['id']}/revisions", json={"yaml": bad}, headers=tokens.h("submitter")
    )
    assert_refused_without_content(r, secret_file)
    h = {**tokens.h("submitter"), "Content-Type": "application/yaml"}
    assert_refused_without_content(
        client.post("/api/scenarios/import", content=bad, headers=h), secret_file
    )
    revs = client.get(f"/api/scenarios/{sc['id']}/revisions", headers=tokens.h("viewer")).json()
    assert [x["number"] for x in revs] == [1]  # nothing stored by the refused requests


def test_sweep_override_naming_a_path_outside_uploads_is_refused(
    client: TestClient, tokens: Tokens, secret_file: str
) -> None:
    upload_fade(client, tokens)
    sc_id = make_scenario(client, tokens, "ovr")["id"]
    body = {"scenario_id": sc_id, "sweep": {"path": FILE_FIELD, "values": [secret_file]}}
    for url in ("/api/experiments/plan", "/api/experiments"):
        assert_refused_without_content(
            client.post(url, json=body, headers=tokens.h("submitter")), secret_file
        )
    assert client.get("/api/experiments", headers=tokens.h("viewer")).json()["total"] == 0


def test_sweep_override_is_checked_by_the_emulator_before_queueing(
    client: TestClient, tokens: Tokens
) -> None:
    upload_fade(client, tokens)
    sc = make_scenario(client, tokens, "ovc")
    body = {"scenario_id": sc["id"], "sweep": {"path": "forward.delay_ms", "values": [-5]}}
    r = client.post("/api/experiments", json=body, headers=tokens.h("submitter"))
    assert r.status_code == 422, r.text
    assert "delay_ms" in r.text


def test_sweep_path_through_a_scalar_is_a_422_on_creation(
    client: TestClient, tokens: Tokens
) -> None:
    upload_fade(client, tokens)
    text = scenario_yaml("scalar") + "sweep: {path: forward.delay_ms.x, values: [1]}\n"
    r = client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0].startswith("sweep.path:")


def test_the_worker_refuses_a_link_naming_a_file_it_was_not_given(secret_file: str) -> None:
    link = {"forward": {"downlink": {"attenuation": {"type": "file", "file": secret_file}}}}
    with pytest.raises(Invalid) as err:
        files.rewrite_paths(link, {"traces/fade.txt": "/tmp/x/traces/fade.txt"})
    assert err.value.errors == [
        f"link.{FILE_FIELD}: {secret_file!r} is not one of the experiment's uploaded files"
    ]
