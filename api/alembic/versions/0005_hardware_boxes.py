"""Hardware boxes: the registered machines of the hardware testbed (issue 19, hardware), served by
/api/boxes; a run leases its boxes with advisory locks (satlab.testbed.hardware), not rows.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "boxes",
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("address", sa.String(300), nullable=False),
        sa.Column("interfaces", JSONB, nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.CheckConstraint(
            "role IN ('server', 'client', 'gw', 'emu', 'st')", name=op.f("ck_boxes_role")
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_boxes")),
    )


def downgrade() -> None:
    op.drop_table("boxes")
