"""The job queue's own schema (procrastinate), applied from the installed procrastinate package.

procrastinate ships its schema (procrastinate_jobs, its functions, triggers and types) and its own
version-to-version SQL migrations (procrastinate.schema.SchemaManager.get_migrations_path()); a
procrastinate upgrade that changes the schema gets a new revision here applying those files.

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from procrastinate.schema import SchemaManager

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # The schema text holds dollar-quoted function bodies with semicolons: run it as one
    # simple-protocol statement batch through the driver connection.
    conn = op.get_bind().connection.driver_connection
    assert conn is not None
    conn.execute(SchemaManager.get_schema())  # type: ignore[union-attr]


def downgrade() -> None:
    bind = op.get_bind()
    for (name,) in bind.execute(
        sa.text("SELECT tablename FROM pg_tables WHERE tablename LIKE 'procrastinate%'")
    ):
        op.execute(f'DROP TABLE IF EXISTS "{name}" CASCADE')
    for (sig,) in bind.execute(
        sa.text(
            "SELECT p.oid::regprocedure::text FROM pg_proc p "
            "JOIN pg_namespace n ON n.oid = p.pronamespace "
            "WHERE p.proname LIKE 'procrastinate%' AND n.nspname = current_schema()"
        )
    ):
        op.execute(f"DROP FUNCTION IF EXISTS {sig} CASCADE")
    for (name,) in bind.execute(
        sa.text(
            "SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace "
            "WHERE t.typname LIKE 'procrastinate%' AND t.typtype IN ('e', 'c') "
            "AND n.nspname = current_schema()"
        )
    ):
        op.execute(f'DROP TYPE IF EXISTS "{name}" CASCADE')
