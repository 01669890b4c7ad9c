"""pending syncs: webhook-triggered syncs kept in the registry until the housekeeper
submits them, so an API restart inside a debounce window loses none

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26 10:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pending_syncs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("store_id", sa.String(length=40), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("due_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("run_id", sa.String(length=64), nullable=True),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("pending_syncs", schema=None) as batch_op:
        batch_op.create_index(
            "uq_pending_syncs_open",
            ["store_id"],
            unique=True,
            postgresql_where=sa.text("run_id IS NULL"),
            sqlite_where=sa.text("run_id IS NULL"),
        )
        batch_op.create_index("ix_pending_syncs_due", ["run_id", "due_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("pending_syncs", schema=None) as batch_op:
        batch_op.drop_index("ix_pending_syncs_due")
        batch_op.drop_index("uq_pending_syncs_open")
    op.drop_table("pending_syncs")
