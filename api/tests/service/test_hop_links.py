"""A scenario's terrestrial hops (path.terrestrial) are emulator links: the service pins their
file references to uploads and has the emulator check each, as for `link`, naming the hop."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from satlab.service import files
from satlab.service.errors import Invalid
from satlab.settings import EMULATOR_BIN

from .conftest import Tokens, scenario_yaml, upload_fade

SECRET = "SECRET-first-line-of-a-root-only-file"


def with_hop(name: str, hop: str) -> str:
    return scenario_yaml(name) + f"path:\n  terrestrial:\n    - {hop}\n"


def post(client: TestClient, tokens: Tokens, text: str) -> object:
    return client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))


def test_a_hop_naming_a_file_outside_uploads_is_refused_naming_the_hop(
    client: TestClient, tokens: Tokens, tmp_path: Path
) -> None:
    upload_fade(client, tokens)
    secret = tmp_path / "secret.txt"
    secret.write_text(f"{SECRET}\n")
    secret.chmod(0o600)
    hop = (
        f"{{delay_ms: 10, rate_bps: 1.0e7, bit_errors: {{model: pattern, pattern_file: {secret}}}}}"
    )
    r = post(client, tokens, with_hop("hopfile", hop))
    assert r.status_code == 422, r.text  # type: ignore[attr-defined]
    assert SECRET not in r.text  # type: ignore[attr-defined]
    assert (
        f"path.terrestrial.0.forward.bit_errors.pattern_file: no uploaded file named '{secret}'"
        in r.text  # type: ignore[attr-defined]
    )


@pytest.mark.skipif(not EMULATOR_BIN.is_file(), reason="needs the emulator binary")
def test_the_emulator_checks_every_hop_and_the_error_names_it(
    client: TestClient, tokens: Tokens
) -> None:
    upload_fade(client, tokens)
    good = "{delay_ms: 10, rate_bps: 1.0e7}"
    bad = "{delay_ms: 10, rate_bps: 1.0e7, bit_errors: {model: uniform, ber: 0.9}}"
    r = post(client, tokens, with_hop("hopbad", good) + f"    - {bad}\n")
    assert r.status_code == 422, r.text  # type: ignore[attr-defined]
    detail = r.json()["detail"]  # type: ignore[attr-defined]
    text = " ".join(detail) if isinstance(detail, list) else str(detail)
    assert "path.terrestrial.1: " in text and "ber" in text and "0.5" in text, text
    r = post(client, tokens, with_hop("hopgood", good))
    assert r.status_code == 201, r.text  # type: ignore[attr-defined]


def test_the_worker_refuses_a_hop_naming_a_file_it_was_not_given() -> None:
    path = {"terrestrial": [{"bit_errors": {"model": "pattern", "pattern_file": "/etc/shadow"}}]}
    with pytest.raises(Invalid) as err:
        files.rewrite_paths(path, {"e.txt": "/tmp/x/e.txt"}, "path")
    assert err.value.errors == [
        "path.terrestrial.0.bit_errors.pattern_file: '/etc/shadow' is not one of the "
        "experiment's uploaded files"
    ]
