"""Alembic migrations up and down, on an empty and on a populated database."""

from __future__ import annotations

import psycopg
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, inspect

from satlab import db

from .conftest import Tokens, alembic_config, create_scratch, drop_scratch, make_experiment


def _tables(url: str) -> set[str]:
    eng = create_engine(url)
    try:
        return set(inspect(eng).get_table_names())
    finally:
        eng.dispose()


def test_up_down_up_on_empty_database() -> None:
    scratch = create_scratch("mig")
    try:
        _with_url(scratch.url, "upgrade", "head")
        assert {"runs", "experiments", "procrastinate_jobs", "api_tokens"} <= _tables(scratch.url)
        _with_url(scratch.url, "downgrade", "base")
        assert _tables(scratch.url) == {"alembic_version"}
        with psycopg.connect(scratch.url.replace("+psycopg", "")) as c:
            left = c.execute(
                "SELECT count(*) FROM pg_proc WHERE proname LIKE 'procrastinate%'"
            ).fetchone()
            assert left == (0,)
        _with_url(scratch.url, "upgrade", "head")
        assert "procrastinate_jobs" in _tables(scratch.url)
    finally:
        drop_scratch(scratch)


def _with_url(url: str, action: str, target: str) -> None:
    cfg = alembic_config()
    cfg.cmd_opts = type("Opts", (), {"x": [f"url={url}"]})()  # what `alembic -x url=...` sets
    getattr(command, action)(cfg, target)


def test_down_and_up_on_a_populated_database(client: TestClient, tokens: Tokens) -> None:
    make_experiment(client, tokens, "pop", reps=1)
    url = db.get_settings().database_url
    db.get_engine().dispose()
    _with_url(url, "downgrade", "0001")  # the queue's schema goes, the service's data stays
    assert "procrastinate_jobs" not in _tables(url) and "runs" in _tables(url)
    _with_url(url, "downgrade", "base")
    assert _tables(url) == {"alembic_version"}
    _with_url(url, "upgrade", "head")
    assert {"runs", "procrastinate_jobs"} <= _tables(url)
