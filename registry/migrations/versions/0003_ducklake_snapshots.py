"""warehouse on DuckLake: a store's snapshot is one DuckLake version; snapshot pins

The Delta warehouse's snapshots (table -> Delta version) and the sync cursors that
described its contents mean nothing to the new warehouse, which starts empty: both are
dropped, so every store's next sync is a full one.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 19:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("DELETE FROM warehouse_snapshots")
    op.execute("DELETE FROM sync_cursors")
    with op.batch_alter_table("warehouse_snapshots", schema=None) as batch_op:
        batch_op.drop_column("versions")
        batch_op.add_column(sa.Column("version", sa.BigInteger(), nullable=False))
    op.create_table(
        "snapshot_pins",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("holder", sa.String(length=255), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("snapshot_pins", schema=None) as batch_op:
        batch_op.create_index("ix_snapshot_pins_holder", ["holder"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("snapshot_pins", schema=None) as batch_op:
        batch_op.drop_index("ix_snapshot_pins_holder")
    op.drop_table("snapshot_pins")
    op.execute("DELETE FROM warehouse_snapshots")
    with op.batch_alter_table("warehouse_snapshots", schema=None) as batch_op:
        batch_op.drop_column("version")
        batch_op.add_column(sa.Column("versions", sa.JSON(), nullable=False))
