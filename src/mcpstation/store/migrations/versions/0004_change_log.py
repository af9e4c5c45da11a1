"""The change log: one numbered row per durable change, for every running station to follow.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision: str | None = "0003"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the types and values at this revision (mcpstation.store.records.ChangeKind).
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_NAME = sa.String(200)
_TIMESTAMP = sa.DateTime(timezone=True)
_KINDS = (
    "server_added", "server_removed", "server_updated", "server_enabled", "server_disabled", "server_approved",
    "server_suspended", "server_reloaded", "token_created", "token_revoked", "pin_approved",
)  # fmt: skip


def _in(values: tuple[str, ...]) -> str:
    return "kind IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def upgrade() -> None:
    op.create_table(
        "change_log",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("at", _TIMESTAMP, nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("subject", _NAME, nullable=True),
        sa.Column("tool", _NAME, nullable=True),
        sa.Column("origin", _NAME, nullable=False),
        sa.CheckConstraint(
            "kind IN (" + ", ".join(f"'{kind}'" for kind in _KINDS) + ")", name=op.f("ck_change_log_kind")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_log")),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("change_log")
