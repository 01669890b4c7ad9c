"""metric series: counters of syncs, exports and the lake's write lock, added to by every
process and read by the API's /metrics (quarry.measures)

Revision ID: 0005_metric_series
Revises: 0004
Create Date: 2026-11-27 01:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0005_metric_series"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "metric_series",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("labels", sa.String(length=500), nullable=False),
        sa.Column("value", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", "labels"),
    )


def downgrade() -> None:
    op.drop_table("metric_series")
