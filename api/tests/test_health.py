import pytest
from fastapi.testclient import TestClient

from satlab import db
from satlab.app import create_app
from satlab.settings import get_settings


def test_health_reports_the_real_database() -> None:
    client = TestClient(create_app())
    body = client.get("/api/health").json()
    assert body["status"] == "ok"
    assert body["database"] == "ok"
    assert body["postgres"].startswith(db.server_version().split()[0])


def test_health_says_when_the_database_is_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    # A socket directory where no server listens: the real driver fails to connect.
    monkeypatch.setenv("DATABASE_URL", "postgresql+psycopg://satlab@/satlab?host=/nonexistent")
    get_settings.cache_clear()
    db.get_engine.cache_clear()
    try:
        resp = TestClient(create_app()).get("/api/health")
        assert resp.status_code == 503
        assert resp.json()["database"] == "unreachable"
    finally:
        get_settings.cache_clear()
        db.get_engine.cache_clear()
