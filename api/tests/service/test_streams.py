"""Live event streams (SSE) over a real HTTP server: an open stream holds no database
connection, and a stream whose token is revoked ends (issue 24, class 6)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx
import psycopg
from fastapi.testclient import TestClient

from satlab.settings import get_settings

from .conftest import Tokens, make_experiment

STREAMS = 5


def until(lines: Iterator[str], prefix: str) -> str:
    """The first line starting with prefix (the server's keepalives come every 15 s)."""
    for line in lines:
        if line.startswith(prefix):
            return line
    raise AssertionError(f"the stream ended before a line starting with {prefix!r}")


def sessions_in_transaction() -> int:
    """Connections of this database held inside a transaction while idle."""
    with psycopg.connect(get_settings().libpq_url) as c:
        row = c.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND state = 'idle in transaction' AND pid <> pg_backend_pid()"
        ).fetchone()
        assert row is not None
        return int(row[0])


def test_open_streams_hold_no_connection_and_end_on_revocation(
    server: str, client: TestClient, tokens: Tokens
) -> None:
    exp = make_experiment(client, tokens, "sse", reps=1)["experiment"]  # queued: no worker here
    viewer = client.get("/api/whoami", headers=tokens.h("viewer")).json()
    url = f"{server}/api/experiments/{exp['id']}/events"  # type: ignore[index]
    with httpx.Client(timeout=10) as http, contextlib.ExitStack() as open_streams:
        lines = []
        for _ in range(STREAMS):
            r = open_streams.enter_context(http.stream("GET", url, headers=tokens.h("viewer")))
            assert r.status_code == 200
            lines.append(r.iter_lines())
            until(lines[-1], "event: run")  # the submission's events: the stream is live
        # Before: each stream's request session stayed in its transaction for the stream's life.
        # Now at most a poll in flight can be between two of its statements at this instant.
        assert sessions_in_transaction() <= 1
        r = client.delete(f"/api/tokens/{viewer['id']}", headers=tokens.h("admin"))
        assert r.status_code == 200, r.text
        for stream in lines:
            until(stream, "event: end")
            assert "revoked" in until(stream, "data:")
