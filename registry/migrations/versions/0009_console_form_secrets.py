"""console_form_secrets: secrets typed into a console form, kept sealed for a short time
while the form comes back (api/console/kept_secrets)

Revision ID: 0009_console_form_secrets
Revises: 0008_console_sessions
Create Date: 2026-11-28 04:00:00.000000
"""

import sqlalchemy as sa
from alembic import op

revision = "0009_console_form_secrets"
down_revision = "0008_console_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "console_form_secrets",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["console_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("console_form_secrets", schema=None) as batch_op:
        batch_op.create_index("ix_console_form_secrets_session", ["session_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("console_form_secrets", schema=None) as batch_op:
        batch_op.drop_index("ix_console_form_secrets_session")
    op.drop_table("console_form_secrets")
