"""POST /api/opensand/import: an uploaded OpenSAND 8 configuration (zip or tar) -> the link and
the not-mapped list, or a created scenario with its files uploaded; hostile archives and XML are
a 422 naming the problem, roles and scopes as for any scenario."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

from fastapi.testclient import TestClient

from satlab import db
from satlab.service import auth
from satlab.settings import REPO_ROOT

from .conftest import Tokens

FIXTURE = REPO_ROOT / "tests" / "fixtures" / "opensand" / "cli-ethernet"
URL = "/api/opensand/import"


def zip_of(root: Path, replace: dict[str, bytes] | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for p in sorted(root.rglob("*")):
            if p.is_file():
                rel = p.relative_to(root).as_posix()
                zf.writestr(f"{root.name}/{rel}", (replace or {}).get(rel, p.read_bytes()))
    return buf.getvalue()


def test_import_returns_link_and_not_mapped(client: TestClient, tokens: Tokens) -> None:
    r = client.post(URL, content=zip_of(FIXTURE), headers=tokens.h("submitter"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["link"]["forward"]["symbol_rate_baud"] == 40e6
    assert body["link"]["forward"]["downlink"]["attenuation"]["file"] == "attenuation.csv"
    assert body["files"] == [{"name": "attenuation.csv", "kind": "attenuation", "size_bytes":
                              (FIXTURE / "st/attenuation.csv").stat().st_size}]  # fmt: skip
    gate = [n for n in body["not_mapped"] if n["setting"].endswith("error_insertion_type")]
    assert {n["file"] for n in gate} == {"gw/profile.xml", "st/profile.xml"}
    assert body["scenario"] is None and body["uploads"] == []
    assert client.get("/api/files", headers=tokens.h("viewer")).json()["total"] == 0


def test_import_creates_the_scenario(client: TestClient, tokens: Tokens) -> None:
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w:gz") as tf:
        tf.add(FIXTURE, arcname="cfg")
    r = client.post(
        URL, params={"name": "from-opensand", "create": "true"}, content=tar.getvalue(),
        headers=tokens.h("submitter"),
    )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["scenario"]["name"] == "from-opensand"
    assert [u["name"] for u in body["uploads"]] == ["opensand/from-opensand/attenuation.csv"]
    y = client.get(f"/api/scenarios/{body['scenario']['id']}/yaml", headers=tokens.h("viewer"))
    assert "file: opensand/from-opensand/attenuation.csv" in y.text
    assert "# Imported from an uploaded OpenSAND 8 configuration. Not mapped:" in y.text
    again = client.post(URL, params={"name": "from-opensand", "create": "true"},
                        content=tar.getvalue(), headers=tokens.h("submitter"))  # fmt: skip
    assert again.status_code == 409, again.text


def test_hostile_uploads_are_refused(client: TestClient, tokens: Tokens) -> None:
    h = tokens.h("submitter")
    laughs = (REPO_ROOT / "api/tests/test_opensand.py").read_text()
    bomb = laughs.split('BILLION_LAUGHS = b"""', 1)[1].split('"""', 1)[0].encode()
    r = client.post(URL, content=zip_of(FIXTURE, {"gw/topology.xml": bomb}), headers=h)
    assert r.status_code == 422 and "gw/topology.xml: refused: DTDForbidden" in r.text, r.text
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("../../etc/cron.d/x", b"* * * * * root true\n")
    r = client.post(URL, content=buf.getvalue(), headers=h)
    assert r.status_code == 422 and "outside the archive" in r.text, r.text
    r = client.post(URL, content=b"\0" * (5 << 20), headers=h)
    assert r.status_code == 413, r.text
    r = client.post(URL, content=b"not an archive at all", headers=h)
    assert r.status_code == 422 and "not a valid zip or tar" in r.text


def test_roles_and_scopes(client: TestClient, tokens: Tokens) -> None:
    data = zip_of(FIXTURE)
    assert client.post(URL, content=data, headers=tokens.h("viewer")).status_code == 403
    assert client.post(URL, content=data).status_code == 401
    with db.new_session() as s:
        _, tok = auth.create_token(s, "ci", "submitter", scope=["ci-*"])
        s.commit()
    h = {"Authorization": f"Bearer {tok}"}
    assert client.post(URL, params={"name": "other"}, content=data, headers=h).status_code == 403
    assert client.post(URL, params={"name": "ci-os"}, content=data, headers=h).status_code == 200
