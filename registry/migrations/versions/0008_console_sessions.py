"""console_sessions: sign-ins of the web console (api/console), revocable server-side

Revision ID: 0008_console_sessions
Revises: 0007_file_removed_reason
Create Date: 2026-11-27 04:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0008_console_sessions"
down_revision = "0007_file_removed_reason"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("api_key_id", sa.String(length=40), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["api_key_id"], ["api_keys.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_console_sessions_key", ["api_key_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_console_sessions_key")
    op.drop_table("console_sessions")
