"""Scenario revisions pin the content of the files their links name (issue 24, ownership).

`scenario_revisions.files` maps each file name any expanded link of the revision references to
the sha256 of the upload it was validated with; experiments of the revision use exactly that
content, whatever was uploaded under the name later. Revisions stored before have no pins (NULL)
and keep the old rule: the newest upload of each name at submission.

Revision ID: 0003
Revises: 0002
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("scenario_revisions", sa.Column("files", JSONB, nullable=True))


def downgrade() -> None:
    op.drop_column("scenario_revisions", "files")
