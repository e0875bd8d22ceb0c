"""The scenario library (service/library.py): the repository's scenarios imported at start, owned
by the system identity, idempotent, revised when a file changes, not writable by users."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from satlab import db
from satlab.service import library
from satlab.service.models import ApiToken, ScenarioRevision, UploadedFile
from satlab.settings import REPO_ROOT

from .conftest import Tokens


def sync(root: Path) -> dict[str, str]:
    with db.new_session() as s:
        return {
            o.name: o.action + (f": {o.detail}" if o.detail else "") for o in library.sync(s, root)
        }


def counts() -> tuple[int, int]:
    with db.new_session() as s:
        revs = s.scalar(select(func.count()).select_from(ScenarioRevision)) or 0
        ups = s.scalar(select(func.count()).select_from(UploadedFile)) or 0
    return revs, ups


def small_library(tmp_path: Path) -> Path:
    """A repository with the quickstart (and its trace) and one reproduction without files."""
    (tmp_path / "scenarios" / "traces").mkdir(parents=True)
    (tmp_path / "scenarios" / "reproductions").mkdir()
    for rel in ("quickstart.yaml", "traces/quickstart-fade.txt"):
        shutil.copy(REPO_ROOT / "scenarios" / rel, tmp_path / "scenarios" / rel)
    text = (REPO_ROOT / "scenarios" / "quickstart.yaml").read_text()
    repro = text.replace("name: quickstart", "name: repro-one").replace(
        "attenuation: {type: file, file: traces/quickstart-fade.txt}",
        "attenuation: {type: constant, value_db: 3}",
    )
    assert "traces/" not in repro.split("link:")[1]
    (tmp_path / "scenarios" / "reproductions" / "repro-one.yaml").write_text(repro)
    return tmp_path


def test_the_repository_scenarios_are_in_the_library_once(
    client: TestClient, tokens: Tokens
) -> None:
    first = sync(REPO_ROOT)
    expected = {p.stem for p in library.library_files(REPO_ROOT)}
    assert {"quickstart", "geo-rain-comparison"} <= set(first)
    assert len(first) == len(expected), first
    assert all(a == "created" for a in first.values()), first
    listed = client.get("/api/scenarios", params={"limit": 200}, headers=tokens.h("viewer"))
    assert {s["name"] for s in listed.json()["items"]} >= set(first)
    before = counts()
    again = sync(REPO_ROOT)
    assert set(again.values()) == {"unchanged"}, again
    assert counts() == before  # no revision, no file version


def test_a_changed_file_makes_a_revision(tmp_path: Path, tokens: Tokens) -> None:
    root = small_library(tmp_path)
    assert sync(root) == {"quickstart": "created", "repro-one": "created"}
    trace = root / "scenarios" / "traces" / "quickstart-fade.txt"
    trace.write_text(trace.read_text() + "200 0\n")
    assert sync(root) == {"quickstart": "revised", "repro-one": "unchanged"}
    repro = root / "scenarios" / "reproductions" / "repro-one.yaml"
    repro.write_text(repro.read_text().replace("seed: 7", "seed: 8"))
    assert sync(root) == {"quickstart": "unchanged", "repro-one": "revised"}
    assert sync(root) == {"quickstart": "unchanged", "repro-one": "unchanged"}
    with db.new_session() as s:
        numbers = s.scalars(select(ScenarioRevision.number).order_by(ScenarioRevision.id)).all()
    assert sorted(numbers) == [1, 1, 2, 2]


def test_a_user_cannot_overwrite_a_library_scenario_but_can_copy_it(
    tmp_path: Path, client: TestClient, tokens: Tokens
) -> None:
    root = small_library(tmp_path)
    sync(root)
    sc = client.get("/api/scenarios", params={"name": "quickstart"}, headers=tokens.h("viewer"))
    quick = sc.json()["items"][0]
    text = (root / "scenarios" / "quickstart.yaml").read_text()
    h = tokens.h("submitter")
    changed = text.replace("seed: 7", "seed: 99")
    r = client.post(f"/api/scenarios/{quick['id']}/revisions", json={"yaml": changed}, headers=h)
    assert r.status_code == 403, r.text
    r = client.post(
        "/api/scenarios/import",
        content=changed,
        headers={**h, "Content-Type": "application/yaml"},
    )
    assert r.status_code == 403, r.text
    assert client.delete(f"/api/scenarios/{quick['id']}", headers=h).status_code == 403
    r = client.post(
        "/api/files",
        params={"name": "traces/quickstart-fade.txt", "kind": "attenuation"},
        content=b"0 0\n10 30\n",
        headers=h,
    )
    assert r.status_code == 403, r.text
    # A copy under another name is the user's own, and names the library's trace.
    copy = client.post(
        "/api/scenarios",
        json={"yaml": changed.replace("name: quickstart", "name: my-quick")},
        headers=h,
    )
    assert copy.status_code == 201, copy.text
    assert copy.json()["created_by"] != quick["created_by"]
    assert sync(root)["quickstart"] == "unchanged"


def test_the_system_identity_is_one_revoked_admin_token(tokens: Tokens) -> None:
    with db.new_session() as s:
        who = library.system_principal(s)
    with db.new_session() as s:
        again = library.system_principal(s)
        rows = s.scalars(select(ApiToken).where(ApiToken.name == library.SYSTEM_NAME)).all()
    assert again.id == who.id and who.role == "admin"
    assert len(rows) == 1 and rows[0].revoked_at is not None  # no one can sign in with it


def test_a_users_scenario_of_a_library_name_is_kept(
    tmp_path: Path, client: TestClient, tokens: Tokens
) -> None:
    root = small_library(tmp_path)
    text = (root / "scenarios" / "quickstart.yaml").read_text()
    r = client.post(
        "/api/files",
        params={"name": "traces/quickstart-fade.txt", "kind": "attenuation"},
        content=(root / "scenarios" / "traces" / "quickstart-fade.txt").read_bytes(),
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 201, r.text
    assert (
        client.post(
            "/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter")
        ).status_code
        == 201
    )
    out = sync(root)
    assert out["quickstart"].startswith("kept"), out
    assert out["repro-one"] == "created"


def test_an_invalid_library_scenario_is_reported_and_the_rest_go_in(
    tmp_path: Path, tokens: Tokens
) -> None:
    root = small_library(tmp_path)
    (root / "scenarios" / "broken.yaml").write_text("version: 1\nname: broken\nduration_s: -1\n")
    text = (root / "scenarios" / "quickstart.yaml").read_text()
    outside = text.replace("name: quickstart", "name: outside").replace(
        "traces/quickstart-fade.txt", "../../etc/hostname"
    )
    (root / "scenarios" / "outside.yaml").write_text(outside)
    out = sync(root)
    assert out["broken"].startswith("failed: "), out
    assert (
        out["outside"].startswith("failed: ") and "outside the scenarios folder" in out["outside"]
    )
    assert out["quickstart"] == "created"


def test_the_command_reports_each_scenario_and_fails_on_a_bad_one(
    tmp_path: Path, tokens: Tokens
) -> None:
    root = small_library(tmp_path)
    cmd = [sys.executable, "-m", "satlab.cli", "library", "sync", "--root", str(root)]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert "created   quickstart (scenarios/quickstart.yaml)" in first.stdout
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert "unchanged quickstart" in again.stdout and "created" not in again.stdout
    (root / "scenarios" / "broken.yaml").write_text("version: 1\nname: broken\n")
    bad = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "failed    broken (scenarios/broken.yaml)" in bad.stdout
