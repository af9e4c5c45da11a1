"""Code mode: how an audited request came in when not directly (`via = "code"`) and the run it belongs to.

Revision ID: 0007_codemode_via
Revises: 0006_identity_principals
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_codemode_via"
down_revision: str | None = "0006_identity_principals"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of the types in `mcpstation.store._schema` as they were at this revision.
_NAME = sa.String(200)
_VIA = sa.String(16)


def upgrade() -> None:
    with op.batch_alter_table("call_audit") as table:
        table.add_column(sa.Column("via", _VIA, nullable=True))
        table.add_column(sa.Column("run_id", _NAME, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("call_audit") as table:
        for column in ("run_id", "via"):
            table.drop_column(column)
