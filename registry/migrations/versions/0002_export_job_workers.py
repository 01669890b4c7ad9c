"""export job workers: heartbeat and worker of a running export, idempotency look-up

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-23 10:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column("worker", sa.String(length=255), nullable=True))
        batch_op.create_index(
            "ix_export_jobs_idempotency", ["config_id", "idempotency_key"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_export_jobs_idempotency")
        batch_op.drop_column("worker")
        batch_op.drop_column("heartbeat_at")
