"""Who can reach the project's PostgreSQL cluster (scripts/pg.sh; issue 24): no other local user,
no trust authentication, and a service role that is no superuser and owns only its schema."""

from __future__ import annotations

import os
import subprocess

import psycopg
import pytest

from satlab.settings import get_settings

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="switches OS users: needs root")


def socket_dir() -> str:
    return get_settings().libpq_url.rsplit("host=", 1)[1]


def psql_as(os_user: str, role: str, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["runuser", "-u", os_user, "--", "psql", "-X", "-h", socket_dir(), "-U", role,
         "-d", "satlab", "-tAc", sql],
        capture_output=True, text=True, cwd="/", timeout=30, check=False,
    )  # fmt: skip


def test_another_local_user_cannot_reach_the_database() -> None:
    for role in ("satlab", "postgres"):
        r = psql_as("nobody", role, "SELECT 1")
        assert r.returncode != 0
        assert "Permission denied" in r.stderr, r.stderr


def test_the_service_user_reaches_it_as_satlab_only() -> None:
    r = psql_as("satlab", "satlab", "SELECT current_user")
    assert r.returncode == 0 and r.stdout.strip() == "satlab", r.stderr
    r = psql_as("satlab", "postgres", "SELECT 1")
    assert r.returncode != 0 and "Peer authentication failed" in r.stderr


def test_no_rule_trusts_a_connection() -> None:
    r = psql_as(
        "postgres", "postgres", "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method = 'trust'"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0"


def test_the_service_role_is_no_superuser_and_owns_only_its_schema() -> None:
    with psycopg.connect(get_settings().libpq_url, autocommit=True) as c:
        attrs = c.execute(
            "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls"
            " FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert attrs == (False, False, False, False, False)
        owned = c.execute(
            "SELECT nspname FROM pg_namespace WHERE nspowner = "
            "(SELECT oid FROM pg_roles WHERE rolname = current_user)"
        ).fetchall()
        assert owned == [("public",)]
        for sql in ("CREATE SCHEMA elsewhere", "CREATE DATABASE elsewhere", "CREATE ROLE other"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
