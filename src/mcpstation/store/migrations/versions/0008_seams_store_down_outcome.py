"""Audited requests may end `store_down`: not sent, because the store that must record the answer
first could not be reached.

Revision ID: 0008_seams_store_down_outcome
Revises: 0007_codemode_via
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0008_seams_store_down_outcome"
down_revision: str | None = "0007_codemode_via"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of `mcpstation.outcomes.Outcome`'s values before and at this revision.
_BEFORE = (
    "ok", "tool_error", "refused", "not_found", "unavailable", "timeout", "connection_lost", "remote_error",
    "too_large", "invalid_result", "cancelled",
)  # fmt: skip
_OUTCOMES = (*_BEFORE, "store_down")


def _in(values: tuple[str, ...]) -> str:
    return "outcome IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def _check(values: tuple[str, ...]) -> None:
    with op.batch_alter_table("call_audit") as batch:
        batch.drop_constraint(op.f("ck_call_audit_outcome"), type_="check")
        batch.create_check_constraint(op.f("ck_call_audit_outcome"), _in(values))


def upgrade() -> None:
    _check(_OUTCOMES)


def downgrade() -> None:
    op.execute("UPDATE call_audit SET outcome = 'unavailable' WHERE outcome = 'store_down'")
    _check(_BEFORE)
