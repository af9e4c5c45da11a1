"""Audited requests: every outcome of the typed `Outcome` enum, and the request's kind.

Rows written before this revision keep their meaning where it is known: `ok`, `refused` and
`timeout` stay; `error` (any other failure, classified from message text then) becomes
`tool_error`. Their kind is `tools/call`, the only kind audited then.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the values at this revision (mcpstation.outcomes.Outcome, pipeline RequestKind).
_OUTCOMES = (
    "ok", "tool_error", "refused", "not_found", "unavailable", "timeout", "connection_lost", "remote_error",
    "too_large", "invalid_result", "cancelled",
)  # fmt: skip
_OLD_OUTCOMES = ("ok", "error", "refused", "timeout")


def _in(values: tuple[str, ...]) -> str:
    return "outcome IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def upgrade() -> None:
    with op.batch_alter_table("call_audit") as batch:
        batch.drop_constraint(op.f("ck_call_audit_outcome"), type_="check")
        batch.add_column(sa.Column("kind", sa.String(32), nullable=False, server_default="tools/call"))
    op.execute("UPDATE call_audit SET outcome = 'tool_error' WHERE outcome = 'error'")
    with op.batch_alter_table("call_audit") as batch:
        batch.create_check_constraint(op.f("ck_call_audit_outcome"), _in(_OUTCOMES))


def downgrade() -> None:
    op.execute("UPDATE call_audit SET outcome = 'error' WHERE outcome NOT IN ('ok', 'refused', 'timeout')")
    with op.batch_alter_table("call_audit") as batch:
        batch.drop_constraint(op.f("ck_call_audit_outcome"), type_="check")
        batch.drop_column("kind")
        batch.create_check_constraint(op.f("ck_call_audit_outcome"), _in(_OLD_OUTCOMES))
