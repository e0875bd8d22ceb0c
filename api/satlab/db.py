"""Database engine and sessions (SQLAlchemy 2, psycopg 3) and the declarative base of the models."""

from collections.abc import Iterator
from functools import lru_cache

from sqlalchemy import Engine, MetaData, create_engine, text
from sqlalchemy.orm import DeclarativeBase, Session

from satlab.settings import get_settings

# Stable constraint names, so Alembic migrations can refer to them.
NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


# FastAPI runs the (synchronous) routes, and each request's dependencies (the token lookup), in a
# pool of 40 threads per process. The connection pool may not be smaller than that: a request
# holding a connection between its dependency and its route, while every thread waits for a
# connection, deadlocked until the 30 s pool timeout (make bench-api with 20). Of those 40, 20 are
# kept once opened: with 10 kept, a connection given back while 10 were idle was closed, so under
# load most requests opened a new one (a new PostgreSQL backend each). Two API processes stay
# within PostgreSQL's default max_connections of 100 with room for workers.
@lru_cache
def get_engine() -> Engine:
    return create_engine(
        get_settings().database_url, pool_pre_ping=True, pool_size=20, max_overflow=20
    )


def new_session() -> Session:
    return Session(get_engine(), expire_on_commit=False)


def get_session() -> Iterator[Session]:
    """FastAPI dependency: one session per request, committed by the route's logic."""
    with new_session() as session:
        yield session


def reset() -> None:
    """Forget the engine and settings (tests switch databases with this)."""
    get_settings.cache_clear()
    get_engine.cache_clear()


def server_version() -> str:
    """The connected server's version string; raises if the database cannot be reached."""
    with get_engine().connect() as conn:
        return str(conn.execute(text("show server_version")).scalar_one())
