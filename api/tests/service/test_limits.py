"""Bounded work per request and 422s (not 500s) on bad input (issue 24, classes 3 and 4).

- a request body over max_request_bytes: 413 before authentication, without reading the rest
  (against the conftest's real uvicorn server, raw HTTP on a socket);
- request YAML: no anchors or aliases, nesting at most 64 deep, each refusal naming the line;
- the emulator's check (the real binary): killed after check_timeout_s, capped in address space;
- failed authentications per client address: 429 with Retry-After;
- upload and scenario names: a grammar; no upload name both a file and a directory.
"""

from __future__ import annotations

import http.client
import json
import os
import select
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from satlab.app import create_app
from satlab.linkcheck import LinkConfigError, check_link
from satlab.service import auth
from satlab.settings import EMULATOR_BIN, get_check_limits, get_settings

from .conftest import FADE, Tokens, scenario_yaml, upload_fade

# --- request bodies ------------------------------------------------------------------------------


def connect(server: str) -> socket.socket:
    """A raw connection to the conftest's real uvicorn server (http://127.0.0.1:PORT)."""
    host, port = server.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def read_response(s: socket.socket) -> tuple[int, dict[str, Any]]:
    resp = http.client.HTTPResponse(s)
    resp.begin()
    return resp.status, json.loads(resp.read())


def assert_body_limit(status: int, body: dict[str, Any]) -> None:
    limit = get_settings().max_request_bytes
    assert status == 413, body
    assert f"over the {limit}-byte limit" in body["detail"]
    assert body["errors"] == [f"(body): over the {limit}-byte limit (max_request_bytes)"]


def test_declared_oversize_body_is_refused_before_it_is_sent(server: str) -> None:
    with connect(server) as s:
        s.sendall(
            b"POST /api/scenarios HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Content-Length: 104857600\r\n\r\n"
        )
        # Not one byte of the 100 MB body is sent: the answer comes from the header alone.
        assert_body_limit(*read_response(s))


def test_chunked_oversize_body_is_refused_while_it_is_read(server: str) -> None:
    total = 64 << 20
    chunk = b"x" * 65536
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    sent = 0
    with connect(server) as s:
        s.sendall(
            b"POST /api/scenarios HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        while sent < total:  # stop sending as soon as the server has answered
            if select.select([s], [], [], 0)[0]:
                break
            try:
                s.sendall(frame)
            except OSError:
                break
            sent += len(chunk)
        assert_body_limit(*read_response(s))
    # What was sent includes what the kernel's socket buffers took (a few MiB on loopback).
    assert sent < total // 2, f"{sent} bytes sent before the refusal"


def test_oversize_json_is_413_before_authentication(client: TestClient) -> None:
    big = "x" * get_settings().max_request_bytes
    assert_body_limit(*_status_json(client.post("/api/scenarios", json={"yaml": big})))


def test_uploads_pass_the_body_limit_to_their_own(client: TestClient, tokens: Tokens) -> None:
    upload_limit = get_settings().max_upload_bytes
    assert get_settings().max_request_bytes > upload_limit
    r = client.post(
        "/api/files",
        params={"name": "big.txt", "kind": "delay"},
        content=b"0 1\n" * (upload_limit // 4 + 1),
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 413 and f"over the {upload_limit}-byte limit" in r.json()["detail"]


def _status_json(r: Any) -> tuple[int, dict[str, Any]]:
    return r.status_code, r.json()


# --- YAML ----------------------------------------------------------------------------------------


def post_scenario(client: TestClient, tokens: Tokens, text: str) -> Any:
    upload_fade(client, tokens)
    return client.post("/api/scenarios", json={"yaml": text}, headers=tokens.h("submitter"))


def test_yaml_aliases_are_refused_with_their_line(client: TestClient, tokens: Tokens) -> None:
    text = scenario_yaml("al").replace("  return: {", "  return: &ret {")
    line = text.splitlines().index("  return: &ret {delay_ms: 250, kind: fixed, rate_bps: 5.0e6}")
    r = post_scenario(client, tokens, text + "description: *ret\n")
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0].startswith(f"line {line + 1}: ")
    assert "aliases and anchors" in r.json()["errors"][0]


def test_yaml_alias_bomb_is_refused_at_once(client: TestClient, tokens: Tokens) -> None:
    # About 1 KB naming one scalar a million times.
    bomb = "l0: &l0 x\n" + "".join(
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]\n" for i in range(1, 7)
    )
    start = time.monotonic()
    r = post_scenario(client, tokens, scenario_yaml("bomb") + bomb)
    assert r.status_code == 422 and "aliases and anchors" in r.json()["detail"], r.text
    assert time.monotonic() - start < 2


def test_deeply_nested_yaml_is_422_naming_the_line(client: TestClient, tokens: Tokens) -> None:
    text = scenario_yaml("deep") + "description: " + "[" * 500 + "]" * 500 + "\n"
    r = post_scenario(client, tokens, text)
    assert r.status_code == 422, r.text
    last = len(text.splitlines())
    assert r.json()["errors"] == [f"line {last}: not valid YAML: nested more than 64 levels deep"]


# --- the emulator's check ------------------------------------------------------------------------

needs_emulator = pytest.mark.skipif(not EMULATOR_BIN.is_file(), reason="needs the emulator binary")


def link_reading(path: Path) -> dict[str, Any]:
    """A link whose forward downlink attenuation trace is the file at path."""
    trace = {"type": "file", "file": str(path)}
    return {
        "forward": {"delay_ms": 250, "downlink": {"attenuation": trace}},
        "return": {"delay_ms": 250, "kind": "fixed", "rate_bps": 5.0e6},
    }


@needs_emulator
def test_check_that_hangs_is_stopped_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifo = tmp_path / "fade.txt"
    os.mkfifo(fifo)  # no writer ever: opening it for reading blocks for good
    monkeypatch.setattr(get_check_limits(), "check_timeout_s", 1.0)
    start = time.monotonic()
    with pytest.raises(LinkConfigError, match=r"^the emulator's check did not finish in 1 s$"):
        check_link(link_reading(fifo))
    assert time.monotonic() - start < 5


@needs_emulator
def test_check_runs_with_an_address_space_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = tmp_path / "fade.txt"
    trace.write_bytes(FADE)
    check_link(link_reading(trace))  # fine under the default cap (1 GiB)
    monkeypatch.setattr(get_check_limits(), "check_memory_bytes", 1 << 20)
    with pytest.raises(LinkConfigError):  # the loader cannot even map the binary into 1 MiB
        check_link(link_reading(trace))


# --- failed authentication -----------------------------------------------------------------------


def test_failed_authentications_per_address_are_limited(
    tokens: Tokens, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(get_settings(), "auth_failures_per_min", 5)
    app = create_app()
    with (
        TestClient(app, client=("198.51.100.7", 4000)) as bad,
        TestClient(app, client=("198.51.100.8", 4000)) as good,
    ):
        for _ in range(3):  # successes take nothing from the failure budget
            assert bad.get("/api/whoami", headers=tokens.h("viewer")).status_code == 200
        for h in ({}, {"Authorization": "Bearer sl_wrong"}) * 2 + ({},):
            assert bad.get("/api/whoami", headers=h).status_code == 401
        for h in ({}, tokens.h("viewer")):  # then every request, a valid token or not
            r = bad.get("/api/whoami", headers=h)
            assert r.status_code == 429, r.text
            assert "more than 5 failed authentications per minute" in r.json()["detail"]
            assert 1 <= int(r.headers["retry-after"]) <= 13
        assert good.get("/api/whoami", headers=tokens.h("viewer")).status_code == 200
    auth.buckets.reset()


# --- names ---------------------------------------------------------------------------------------

BAD_NAMES = [".", "..", "-rf", "CON", "con.txt", "a//b", ".hidden", "a/../b", "x/LPT1/y", "x/"]


def upload(client: TestClient, tokens: Tokens, name: str) -> Any:
    return client.post(
        "/api/files",
        params={"name": name, "kind": "attenuation"},
        content=FADE,
        headers=tokens.h("submitter"),
    )


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_upload_names_are_422(client: TestClient, tokens: Tokens, name: str) -> None:
    r = upload(client, tokens, name)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0].startswith(f"name: {name!r} is not a valid file name: ")


def test_a_name_cannot_be_a_file_and_a_directory(client: TestClient, tokens: Tokens) -> None:
    assert upload(client, tokens, "t/a/b.txt").status_code == 201
    for name in ("t", "t/a"):  # directories of an upload
        r = upload(client, tokens, name)
        assert r.status_code == 422 and "clashes with the uploaded file 't/a/b.txt'" in r.text
    assert upload(client, tokens, "u").status_code == 201
    r = upload(client, tokens, "u/v.txt")  # under an upload
    assert r.status_code == 422 and "clashes with the uploaded file 'u'" in r.text
    # '_' is a LIKE wildcard: `w_x` is not a directory of `wax/y`.
    assert upload(client, tokens, "wax/y").status_code == 201
    assert upload(client, tokens, "w_x").status_code == 201
    assert upload(client, tokens, "t/a/c.txt").status_code == 201  # siblings are fine


@pytest.mark.parametrize("name", [".", "..", "-rf", "CON", "nul.yaml", "a//b", ".hidden", "a/b"])
def test_bad_scenario_names_are_422(client: TestClient, tokens: Tokens, name: str) -> None:
    r = post_scenario(client, tokens, scenario_yaml(f"'{name}'"))
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0].startswith(f"name: Value error, {name!r} is not a valid name: ")
