"""Hardware boxes of role `hop`: the machine that builds a run's terrestrial hops
(satlab.testbed.hardware, satlab.agent.hopbox).

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint(op.f("ck_boxes_role"), "boxes", type_="check")
    op.create_check_constraint(
        op.f("ck_boxes_role"), "boxes", "role IN ('server', 'client', 'gw', 'emu', 'st', 'hop')"
    )


def downgrade() -> None:
    op.execute("DELETE FROM boxes WHERE role = 'hop'")
    op.drop_constraint(op.f("ck_boxes_role"), "boxes", type_="check")
    op.create_check_constraint(
        op.f("ck_boxes_role"), "boxes", "role IN ('server', 'client', 'gw', 'emu', 'st')"
    )
