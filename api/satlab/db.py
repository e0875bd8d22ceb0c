"""Database engine and sessions (SQLAlchemy 2, psycopg 3)."""

from functools import lru_cache

from sqlalchemy import Engine, create_engine, text

from satlab.settings import get_settings


@lru_cache
def get_engine() -> Engine:
    return create_engine(get_settings().database_url, pool_pre_ping=True)


def server_version() -> str:
    """The connected server's version string; raises if the database cannot be reached."""
    with get_engine().connect() as conn:
        return str(conn.execute(text("show server_version")).scalar_one())
