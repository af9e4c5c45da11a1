"""The change log may say a user's grant of a user-oauth server was revoked (`user_grant_revoked`),
so every station on the store closes that user's connection to it.

Revision ID: 0009_user_grant_revoked_change
Revises: 0008_seams_store_down_outcome
Create Date: 2026-12-04
"""

from __future__ import annotations

from alembic import op

revision = "0009_user_grant_revoked_change"
down_revision: str | None = "0008_seams_store_down_outcome"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of `mcpstation.store.records.ChangeKind`'s values before and at this revision.
_BEFORE = (
    "server_added", "server_removed", "server_updated", "server_enabled", "server_disabled", "server_approved",
    "server_suspended", "server_reloaded", "token_created", "token_revoked", "pin_approved",
)  # fmt: skip
_KINDS = (*_BEFORE, "user_grant_revoked")


def _in(values: tuple[str, ...]) -> str:
    return "kind IN (" + ", ".join(f"'{value}'" for value in values) + ")"


def _check(values: tuple[str, ...]) -> None:
    with op.batch_alter_table("change_log") as batch:
        batch.drop_constraint(op.f("ck_change_log_kind"), type_="check")
        batch.create_check_constraint(op.f("ck_change_log_kind"), _in(values))


def upgrade() -> None:
    _check(_KINDS)


def downgrade() -> None:
    op.execute("DELETE FROM change_log WHERE kind = 'user_grant_revoked'")  # nothing before this revision reads them
    _check(_BEFORE)
