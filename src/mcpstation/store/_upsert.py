"""`INSERT ... ON CONFLICT` for both databases: the statement of the engine's own dialect.

SQLite and PostgreSQL spell the conflict clause alike, and SQLAlchemy gives each its own `Insert`
with `on_conflict_do_nothing` / `on_conflict_do_update`; `insert(dialect, table)` picks the one
the engine speaks, so a write that can race is idempotent on either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeAlias

import sqlalchemy as sa
from sqlalchemy.dialects import sqlite

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql

# PostgreSQL's dialect (every driver's module) is imported only by a store that speaks it.
Insert: TypeAlias = "postgresql.Insert | sqlite.Insert"


def insert(dialect: str, table: sa.Table) -> Insert:
    """An `INSERT` into `table` that can carry an `ON CONFLICT` clause on `dialect` ("sqlite" or "postgresql")."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    if dialect == "sqlite":
        return sqlite.insert(table)
    raise ValueError(f"the store speaks SQLite and PostgreSQL, not {dialect!r}")
