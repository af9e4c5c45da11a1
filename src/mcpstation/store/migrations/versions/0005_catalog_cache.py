"""The catalog cache: each server's last listing (tools, prompts, resources, templates), keyed by
the hash of its entry, with its cache hint, so a lazy server's catalog is known before it runs.

Revision ID: 0005
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision: str | None = "0004"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the types in `mcpstation.store._schema` as they were at this revision.
_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_NAME = sa.String(200)
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "catalog_cache",
        sa.Column("server", _NAME, nullable=False),
        sa.Column("spec_hash", sa.String(64), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("listing", _JSON, nullable=False),
        sa.Column("session", _JSON, nullable=False),
        sa.Column("ttl_ms", sa.BigInteger(), nullable=True),
        sa.Column("listed_at", _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("server", name=op.f("pk_catalog_cache")),
    )


def downgrade() -> None:
    op.drop_table("catalog_cache")
