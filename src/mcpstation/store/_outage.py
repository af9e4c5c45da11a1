"""When the database cannot be reached: which failures say so, and the outage they open.

A failure is an outage when trying again later may work without anyone changing the data: a
connection refused, reset or ended by the server (PostgreSQL's connection class `08`, an
administrator ending the session, a server shutting down or starting), or an SQLite file that
cannot be opened, is locked past the wait, or sits on a full or read-only disk. Every other
failure (a constraint, a missing table) is the store refusing the change, and stays one.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import DBAPIError

# SQLite's primary result codes that mean "not now" rather than "not this": busy, locked,
# read-only, I/O error, full, cannot open.
_SQLITE_UNREACHABLE = frozenset({5, 6, 8, 10, 13, 14})
# PostgreSQL: admin_shutdown, crash_shutdown, cannot_connect_now; class 08 is connection exceptions.
_PG_UNREACHABLE = frozenset({"57P01", "57P02", "57P03"})


@dataclass(frozen=True, slots=True)
class StoreOutage:
    """The store could not be reached since `since`; `reason` is the driver's last word on why."""

    since: datetime
    reason: str


def is_unreachable(exc: BaseException) -> bool:
    """Whether `exc` (a driver or SQLAlchemy error, or an `OSError`) means the database cannot be reached."""
    if isinstance(exc, OSError):
        return True
    if isinstance(exc, sqlite3.Error):  # the SQLite writer's own connection (`_sqlite_writer.py`)
        return _driver_unreachable(exc)
    if isinstance(exc, DBAPIError):
        if exc.connection_invalidated:
            return True
        if exc.orig is not None:
            return _driver_unreachable(exc.orig)
    return False


def _driver_unreachable(orig: BaseException) -> bool:
    if isinstance(orig, sqlite3.Error):
        code = getattr(orig, "sqlite_errorcode", None)
        return isinstance(code, int) and code & 0xFF in _SQLITE_UNREACHABLE
    sqlstate = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if isinstance(sqlstate, str):
        return sqlstate.startswith("08") or sqlstate in _PG_UNREACHABLE
    # asyncpg's own connection errors (a connection closed under a query) carry no state.
    cause = orig.__cause__
    if isinstance(cause, OSError):
        return True
    name = type(cause).__name__ if cause is not None else type(orig).__name__
    return name in {"ConnectionDoesNotExistError", "InterfaceError", "ConnectionFailureError"}
