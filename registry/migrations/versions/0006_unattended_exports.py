"""unattended exports (issue 30): a paused schedule per configuration, a manifest per
job, the per-store start snapshots of changed-rows configurations, grouped alert state

Revision ID: 0006_unattended_exports
Revises: 0005_metric_series
Create Date: 2026-11-27 00:40:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0006_unattended_exports"
down_revision = "0005_metric_series"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("export_configs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column(
                "schedule_paused", sa.Boolean(), nullable=False, server_default=sa.text("false")
            )
        )
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("manifest", sa.JSON(), nullable=True))
    op.create_table(
        "export_change_starts",
        sa.Column("config_id", sa.String(length=40), nullable=False),
        sa.Column("store_id", sa.String(length=40), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("job_id", sa.String(length=40), nullable=False),
        sa.Column("recorded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["config_id"], ["export_configs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("config_id", "store_id"),
    )
    op.create_table(
        "alert_states",
        sa.Column("subject", sa.String(length=80), nullable=False),
        sa.Column("failing_since", sa.DateTime(timezone=True), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("unreported", sa.Integer(), nullable=False),
        sa.Column("last_sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("subject"),
    )


def downgrade() -> None:
    op.drop_table("alert_states")
    op.drop_table("export_change_starts")
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.drop_column("manifest")
    with op.batch_alter_table("export_configs", schema=None) as batch_op:
        batch_op.drop_column("schedule_paused")
