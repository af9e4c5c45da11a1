"""OAuth credentials per server: tokens, their expiry and the registered client.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-20
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the types in `mcpstation.store._schema` as they were at this revision.
_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_NAME = sa.String(200)
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "oauth_credentials",
        sa.Column("server", _NAME, nullable=False),
        sa.Column("server_url", sa.Text(), nullable=False),
        sa.Column("tokens", _JSON, nullable=True),
        sa.Column("token_expires_at", _TIMESTAMP, nullable=True),
        sa.Column("client_info", _JSON, nullable=True),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_oauth_credentials")),
    )


def downgrade() -> None:
    op.drop_table("oauth_credentials")
