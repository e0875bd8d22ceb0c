"""The service tests run against the project's real PostgreSQL: a scratch database per test
session, brought to the schema by the Alembic migrations, emptied between tests."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from graphlib import TopologicalSorter
from typing import Any

import pytest
import uvicorn
from alembic import command
from alembic.config import Config
from fastapi.testclient import TestClient
from sqlalchemy import Connection, text

from satlab import db
from satlab.app import create_app
from satlab.service import auth, doccache
from satlab.settings import EMULATOR_BIN, REPO_ROOT, get_settings

ALEMBIC_INI = str(REPO_ROOT / "api" / "alembic.ini")
TABLES = (
    "control_requests, run_events, artifacts, series, results, runs, experiments, "
    "scenario_revisions, scenarios, files, workers, api_tokens, procrastinate_jobs, "
    "procrastinate_events, procrastinate_workers, procrastinate_periodic_defers, boxes"
)


def alembic_config() -> Config:
    return Config(ALEMBIC_INI)


PG_SH = str(REPO_ROOT / "scripts" / "pg.sh")


@dataclass
class ScratchDb:
    name: str
    url: str


def create_scratch(suffix: str) -> ScratchDb:
    """A project database made the way scripts/pg.sh makes `satlab` (owned by the superuser; the
    non-superuser role satlab connects and owns its public schema), so the migrations run here
    with exactly the rights they have in production."""
    name = f"satlab_test_{os.getpid()}_{suffix}"
    subprocess.run([PG_SH, "drop-db", name], check=True, capture_output=True)
    subprocess.run([PG_SH, "create-db", name], check=True, capture_output=True)
    base = get_settings().database_url
    path, _, query = base.partition("?")
    url = path.rsplit("/", 1)[0] + "/" + name + (f"?{query}" if query else "")
    return ScratchDb(name, url)


def drop_scratch(scratch: ScratchDb) -> None:
    subprocess.run([PG_SH, "drop-db", scratch.name], check=True, capture_output=True)


@pytest.fixture(scope="session")
def database() -> Iterator[ScratchDb]:
    original = os.environ["DATABASE_URL"]
    # The tests drive the janitor by hand; the API's own (service/janitor.py) would race them.
    os.environ["SATLAB_API_JANITOR_PERIOD_S"] = "0"
    scratch = create_scratch("svc")
    os.environ["DATABASE_URL"] = scratch.url
    db.reset()
    command.upgrade(alembic_config(), "head")
    try:
        yield scratch
    finally:
        db.get_engine().dispose()
        os.environ["DATABASE_URL"] = original
        db.reset()
        drop_scratch(scratch)


@dataclass
class Tokens:
    admin: str
    submitter: str
    viewer: str
    other_submitter: str

    def h(self, role: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {getattr(self, role)}"}


def emptying_statements(conn: Connection) -> str:
    """What `TRUNCATE {TABLES} RESTART IDENTITY CASCADE` does, as DELETEs: every row of TABLES and
    of the tables referencing them (children first), then every sequence those tables own
    restarted. On tables of a few rows this takes ~0.01 s where TRUNCATE, which replaces each
    table's and index's files, takes 0.09-0.16 s (measured here, 5 times each): once per test.
    Read from the catalog, so a table a migration adds is emptied too."""
    fks = conn.execute(
        text(
            "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text FROM pg_constraint c"
            " WHERE c.contype = 'f' AND c.conrelid <> c.confrelid"
        )
    ).all()
    tables = {t.strip() for t in TABLES.split(",")}
    while extra := {child for child, parent in fks if parent in tables} - tables:
        tables |= extra  # what CASCADE reaches
    children: dict[str, set[str]] = {t: set() for t in tables}
    for child, parent in fks:
        if child in tables and parent in tables:
            children[parent].add(child)
    order = list(TopologicalSorter(children).static_order())  # a table after its children
    owned = conn.execute(
        text(
            "SELECT s.oid::regclass::text, t.oid::regclass::text FROM pg_class s"
            " JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i')"
            " JOIN pg_class t ON t.oid = d.refobjid WHERE s.relkind = 'S'"
        )
    ).all()
    sequences = sorted(seq for seq, table in owned if table in tables)
    return "; ".join(
        [f"DELETE FROM {t}" for t in order] + [f"ALTER SEQUENCE {s} RESTART" for s in sequences]
    )


@pytest.fixture
def clean(database: ScratchDb) -> Iterator[None]:
    with db.get_engine().begin() as conn:
        conn.execute(text(emptying_statements(conn)))
    auth.buckets.reset()
    auth.tokens.reset()
    doccache.documents.reset()  # ids restart with the tables: cached documents would be stale
    yield


def make_tokens() -> Tokens:
    """A token of each role in the current database."""
    with db.new_session() as s:
        made = {
            role: auth.create_token(s, role, role.split("_")[-1])[1]
            for role in ("admin", "submitter", "viewer")
        }
        made["other_submitter"] = auth.create_token(s, "other", "submitter")[1]
        s.commit()
    return Tokens(**made)


@pytest.fixture
def tokens(clean: None) -> Tokens:
    return make_tokens()


@pytest.fixture
def server(tokens: Tokens) -> Iterator[str]:
    """The app served by a real uvicorn on a free port (in this process, a thread)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = uvicorn.Server(
        uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning")
    )
    t = threading.Thread(target=srv.run, daemon=True)
    t.start()
    while not srv.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    t.join(10)


@pytest.fixture
def client(tokens: Tokens) -> Iterator[TestClient]:
    with TestClient(create_app()) as c:
        yield c


SCENARIO = """\
# a comment kept verbatim
version: 1
name: {name}
seed: 7
duration_s: 2
repetitions: {reps}
link:
  forward:
    delay_ms: 250
    downlink:
      attenuation: {{type: file, file: traces/fade.txt}}
  return: {{delay_ms: 250, kind: fixed, rate_bps: 5.0e6}}
traffic:
  - kind: bulk_tcp
    duration_s: 2
configurations:
  - name: cubic
    transport: {{congestion_control: cubic}}
  - name: bbr
    transport: {{congestion_control: bbr}}
"""

FADE = b"# tick dB\n0 0\n10 3\n20 0\n"


# Tests that run real testbeds (network namespaces and the emulator). CI is root and builds the
# emulator, so there they always run.
needs_testbed = pytest.mark.skipif(
    os.geteuid() != 0 or not EMULATOR_BIN.is_file(), reason="needs root and the emulator binary"
)


def scenario_yaml(name: str = "t1", reps: int = 2) -> str:
    return SCENARIO.format(name=name, reps=reps)


def upload_fade(client: TestClient, tokens: Tokens) -> None:
    r = client.post(
        "/api/files",
        params={"name": "traces/fade.txt", "kind": "attenuation"},
        content=FADE,
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 201, r.text


def make_scenario(
    client: TestClient, tokens: Tokens, name: str = "t1", reps: int = 2
) -> dict[str, Any]:
    """The submitter's scenario `name` (the trace it names must be uploaded)."""
    r = client.post(
        "/api/scenarios", json={"yaml": scenario_yaml(name, reps)}, headers=tokens.h("submitter")
    )
    assert r.status_code == 201, r.text
    return dict(r.json())


def make_experiment(
    client: TestClient, tokens: Tokens, name: str = "t1", reps: int = 2, **body: object
) -> dict[str, object]:
    upload_fade(client, tokens)
    sc = make_scenario(client, tokens, name, reps)
    r = client.post(
        "/api/experiments",
        json={"scenario_id": sc["id"], **body},
        headers=tokens.h("submitter"),
    )
    assert r.status_code == 201, r.text
    return dict(r.json())
