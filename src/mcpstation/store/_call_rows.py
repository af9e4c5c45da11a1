"""What an audited request becomes in `call_audit`: its column values, made once per record.

`call_values` is the one rule (the arguments' size and SHA-256 of canonical JSON, the arguments
themselves only when the store keeps them, texts cut to their columns). `record_calls` builds a
`CallRecord` from it and inserts through SQLAlchemy on every database. The audit trail's batches on
a SQLite file (`write_calls`) skip the record object and the parameter dictionary per row: the
values go to the driver as plain tuples in one `executemany` (`CALL_INSERT_SQL`), the few that
the driver cannot take as they are (the time, kept arguments) converted by the SQLite dialect's
own bind processors, so such a row reads back exactly as one written through SQLAlchemy.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.dialects import sqlite

from mcpstation.errors import UsageError
from mcpstation.outcomes import Outcome
from mcpstation.store._schema import NAME_LENGTH, URL_LENGTH, call_audit
from mcpstation.store._times import now, utc
from mcpstation.store.records import CALL_OUTCOMES, CallEntry

MAX_ERROR_CHARS = 4000  # error text kept per audited call; the rest is cut

CALL_COLUMNS = tuple(column.name for column in call_audit.columns if column.name != "id")
"""`call_audit`'s columns but the id the database assigns, in table order (`CallRecord`'s field order)."""

CALL_INSERT_SQL = f"INSERT INTO call_audit ({', '.join(CALL_COLUMNS)}) VALUES ({', '.join('?' * len(CALL_COLUMNS))})"
"""The SQLite driver's insert of one row of `sqlite_row` values (qmark parameters)."""


def canonical_json(arguments: Mapping[str, Any]) -> bytes:
    # Sorted keys and no spaces: equal arguments hash equal whatever order the LLM wrote them in.
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    return text.encode("utf-8")


def call_values(entry: CallEntry, *, keep_arguments: bool) -> tuple[Any, ...]:
    """The row `entry` becomes, in `CALL_COLUMNS` order.

    Raises:
        UsageError: the entry's outcome is not a `CallOutcome`.
    """
    if entry.outcome not in CALL_OUTCOMES:
        raise UsageError(f"outcome must be one of {', '.join(CALL_OUTCOMES)}, not {entry.outcome!r}.")
    canonical = b"" if entry.arguments is None else canonical_json(entry.arguments)
    who = entry.principal
    return (
        now() if entry.at is None else utc(entry.at),
        entry.server,
        entry.tool,
        entry.caller,
        len(canonical),
        hashlib.sha256(canonical).hexdigest(),
        json.loads(canonical) if keep_arguments and entry.arguments is not None else None,
        Outcome(entry.outcome),
        None if entry.error is None else entry.error[:MAX_ERROR_CHARS],
        float(entry.duration_s),
        entry.kind,
        None if who is None else who.issuer[:URL_LENGTH],
        None if who is None else who.subject[:NAME_LENGTH],
        None if who is None or who.client_id is None else who.client_id[:NAME_LENGTH],
        None if who is None or who.token_id is None else who.token_id[:NAME_LENGTH],
        None if entry.upstream is None else entry.upstream[:URL_LENGTH],
        entry.via,
        None if entry.run_id is None else entry.run_id[:NAME_LENGTH],
    )


def _sqlite_processors() -> tuple[tuple[int, Callable[[Any], Any], Any], ...]:
    """(position, processor, what it makes of None) of each column whose value SQLite's dialect
    converts before binding (None is converted once here: a JSON column stores it as `null`)."""
    dialect = sqlite.dialect()
    found = []
    for position, name in enumerate(CALL_COLUMNS):
        process = call_audit.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            found.append((position, process, process(None)))
    return tuple(found)


_SQLITE_PROCESSORS = _sqlite_processors()


def sqlite_row(entry: CallEntry, *, keep_arguments: bool) -> tuple[Any, ...]:
    """`call_values` in the SQLite driver's terms, for `CALL_INSERT_SQL`.

    Raises:
        UsageError: the entry's outcome is not a `CallOutcome`.
    """
    values = list(call_values(entry, keep_arguments=keep_arguments))
    for position, process, none in _SQLITE_PROCESSORS:
        value = values[position]
        values[position] = none if value is None else process(value)
    return tuple(values)
