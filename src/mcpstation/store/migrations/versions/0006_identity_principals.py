"""Identity: who signed in for each audited request (issuer, subject, client id, token id) and the
upstream it reached, and each user's own OAuth credentials for per-user upstreams, sealed.

Revision ID: 0006_identity_principals
Revises: 0005
Create Date: 2026-12-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_identity_principals"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the types in `mcpstation.store._schema` as they were at this revision.
_NAME = sa.String(200)
_URL = sa.String(1000)
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("call_audit") as table:
        table.add_column(sa.Column("issuer", _URL, nullable=True))
        table.add_column(sa.Column("subject", _NAME, nullable=True))
        table.add_column(sa.Column("client_id", _NAME, nullable=True))
        table.add_column(sa.Column("token_id", _NAME, nullable=True))
        table.add_column(sa.Column("upstream", _URL, nullable=True))
    op.create_table(
        "user_oauth",
        sa.Column("user_issuer", _URL, nullable=False),
        sa.Column("user_subject", _NAME, nullable=False),
        sa.Column("server", _NAME, nullable=False),
        sa.Column("server_url", _URL, nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("token_expires_at", _TIMESTAMP, nullable=True),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("user_issuer", "user_subject", "server", name=op.f("pk_user_oauth")),
    )


def downgrade() -> None:
    op.drop_table("user_oauth")
    with op.batch_alter_table("call_audit") as table:
        for column in ("upstream", "token_id", "client_id", "subject", "issuer"):
            table.drop_column(column)
