"""initial registry

Revision ID: 0001
Revises:
Create Date: 2026-11-22 03:07:49.646616
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "accounts",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("subscription_id", sa.String(length=60), nullable=False),
        sa.Column("api_enabled", sa.Boolean(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("prefix", sa.String(length=32), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("store_ids", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("digest"),
    )
    op.create_table(
        "export_configs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("entity_type", sa.String(length=32), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("runnable_via_api", sa.Boolean(), nullable=False),
        sa.Column("definition", sa.JSON(), nullable=False),
        sa.Column("destination_kind", sa.String(length=32), nullable=False),
        sa.Column("credentials_secret", sa.Text(), nullable=True),
        sa.Column("schedule_cron", sa.String(length=120), nullable=True),
        sa.Column("schedule_timezone", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("account_id", "name", name="uq_export_configs_name"),
    )
    op.create_table(
        "stores",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("domain", sa.String(length=255), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("last_synced_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("platform", sa.String(length=32), nullable=False),
        sa.Column("connection_secret", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.create_index("ix_stores_account", ["account_id"], unique=False)

    op.create_table(
        "export_jobs",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("config_id", sa.String(length=40), nullable=False),
        sa.Column("account_id", sa.String(length=40), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("dagster_run_id", sa.String(length=64), nullable=True),
        sa.Column("file_path", sa.Text(), nullable=True),
        sa.Column("file_name", sa.String(length=255), nullable=True),
        sa.Column("file_removed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("api_key_id", sa.String(length=40), nullable=True),
        sa.Column("store_ids", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(["account_id"], ["accounts.id"], ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["config_id"], ["export_configs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.create_index("ix_export_jobs_config", ["config_id"], unique=False)
        batch_op.create_index("ix_export_jobs_status", ["status"], unique=False)

    op.create_table(
        "sync_cursors",
        sa.Column("store_id", sa.String(length=40), nullable=False),
        sa.Column("dataset", sa.String(length=64), nullable=False),
        sa.Column("cursor", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("store_id", "dataset"),
    )
    op.create_table(
        "warehouse_snapshots",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("store_id", sa.String(length=40), nullable=False),
        sa.Column("versions", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["store_id"], ["stores.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("warehouse_snapshots", schema=None) as batch_op:
        batch_op.create_index("ix_warehouse_snapshots_store", ["store_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("warehouse_snapshots", schema=None) as batch_op:
        batch_op.drop_index("ix_warehouse_snapshots_store")

    op.drop_table("warehouse_snapshots")
    op.drop_table("sync_cursors")
    with op.batch_alter_table("export_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_export_jobs_status")
        batch_op.drop_index("ix_export_jobs_config")

    op.drop_table("export_jobs")
    with op.batch_alter_table("stores", schema=None) as batch_op:
        batch_op.drop_index("ix_stores_account")

    op.drop_table("stores")
    op.drop_table("export_configs")
    op.drop_table("api_keys")
    op.drop_table("accounts")
