"""The first schema: dynamic servers, call and management audit, API tokens, tool pins.

Revision ID: 0001
Revises:
Create Date: 2026-11-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

# Names are final (`op.f`), whatever naming convention the metadata has later.
# Frozen copies of the types in `mcpstation.store._schema` as they were at this revision.
_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_NAME = sa.String(200)
_TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "dynamic_servers",
        sa.Column("name", _NAME, nullable=False),
        sa.Column("spec", _JSON, nullable=False),
        sa.Column("transport", sa.String(32), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("added_by", _NAME, nullable=False),
        sa.Column("added_at", _TIMESTAMP, nullable=False),
        sa.Column("updated_at", _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_dynamic_servers")),
        sa.CheckConstraint("status IN ('active', 'pending_approval')", name=op.f("ck_dynamic_servers_status")),
    )
    op.create_table(
        "call_audit",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("at", _TIMESTAMP, nullable=False),
        sa.Column("server", _NAME, nullable=False),
        sa.Column("tool", _NAME, nullable=False),
        sa.Column("caller", _NAME, nullable=True),
        sa.Column("argument_bytes", sa.Integer(), nullable=False),
        sa.Column("argument_sha256", sa.String(64), nullable=False),
        sa.Column("arguments", _JSON, nullable=True),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_call_audit")),
        sa.CheckConstraint("outcome IN ('ok', 'error', 'refused', 'timeout')", name=op.f("ck_call_audit_outcome")),
    )
    op.create_index(op.f("ix_call_audit_at"), "call_audit", ["at"])
    op.create_index(op.f("ix_call_audit_server_at"), "call_audit", ["server", "at"])
    op.create_table(
        "management_audit",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("at", _TIMESTAMP, nullable=False),
        sa.Column("actor", _NAME, nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("server", _NAME, nullable=True),
        sa.Column("detail", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_management_audit")),
    )
    op.create_index(op.f("ix_management_audit_at"), "management_audit", ["at"])
    op.create_index(op.f("ix_management_audit_server_at"), "management_audit", ["server", "at"])
    op.create_table(
        "api_tokens",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("name", _NAME, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("token_sha256", sa.String(64), nullable=False),
        sa.Column("created_at", _TIMESTAMP, nullable=False),
        sa.Column("last_used_at", _TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_tokens")),
        sa.UniqueConstraint("name", name=op.f("uq_api_tokens_name")),
        sa.UniqueConstraint("token_sha256", name=op.f("uq_api_tokens_token_sha256")),
        sa.CheckConstraint("role IN ('admin', 'user')", name=op.f("ck_api_tokens_role")),
    )
    op.create_table(
        "tool_pins",
        sa.Column("server", _NAME, nullable=False),
        sa.Column("tool", _NAME, nullable=False),
        sa.Column("fingerprint", sa.String(128), nullable=False),
        sa.Column("first_seen", _TIMESTAMP, nullable=False),
        sa.Column("approved_at", _TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("server", "tool", name=op.f("pk_tool_pins")),
    )


def downgrade() -> None:
    op.drop_table("tool_pins")
    op.drop_table("api_tokens")
    op.drop_index(op.f("ix_management_audit_server_at"), table_name="management_audit")
    op.drop_index(op.f("ix_management_audit_at"), table_name="management_audit")
    op.drop_table("management_audit")
    op.drop_index(op.f("ix_call_audit_server_at"), table_name="call_audit")
    op.drop_index(op.f("ix_call_audit_at"), table_name="call_audit")
    op.drop_table("call_audit")
    op.drop_table("dynamic_servers")
