"""export_jobs.file_removed_reason: why a job's file was removed (retention, the store
re-synced, the store removed), so its download's 404 says which

Revision ID: 0007_file_removed_reason
Revises: 0006_unattended_exports
Create Date: 2026-11-27 01:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0007_file_removed_reason"
down_revision = "0006_unattended_exports"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("export_jobs") as batch:
        batch.add_column(sa.Column("file_removed_reason", sa.String(length=32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("export_jobs") as batch:
        batch.drop_column("file_removed_reason")
