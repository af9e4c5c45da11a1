"""What an audited request becomes in `call_audit`: its column values, made once per record.

`call_values` is the one rule (the arguments' size and SHA-256 of canonical JSON, the arguments
themselves only when the store keeps them, texts cut to their columns). `record_calls` builds a
`CallRecord` from it and inserts through SQLAlchemy on every database. The audit trail's batches on
a SQLite file (`write_calls`) skip the record object and the parameter dictionary per row: the
values go to the driver as multi-row INSERTs (`sqlite_inserts`), the few that the driver cannot
take as they are (the time, kept arguments) converted by the SQLite dialect's own bind
processors, so such a row reads back exactly as one written through SQLAlchemy.

A multi-row INSERT rather than `executemany`: the driver releases the GIL for every statement it
steps, and takes it back for the next row's values, so a row-per-step batch hands the GIL to and
fro with the event loop once per row while the loop is answering calls.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
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

ROWS_PER_INSERT = 999 // len(CALL_COLUMNS)  # SQLite before 3.32 binds at most 999 values per statement
_INSERT_HEAD = f"INSERT INTO call_audit ({', '.join(CALL_COLUMNS)}) VALUES "
_ROW_MARKS = "(" + ", ".join("?" * len(CALL_COLUMNS)) + ")"


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


def _sqlite_time(value: datetime) -> str:
    """An aware UTC time as SQLite's dialect stores it (`2026-03-01 11:00:00.000005`), without its
    general-purpose formatter: the one value of every row that needs converting."""
    return value.replace(tzinfo=None).isoformat(" ", "microseconds")


def _sqlite_processors() -> tuple[tuple[int, Callable[[Any], Any], Any], ...]:
    """(position, processor, what it makes of None) of each column whose value SQLite's dialect
    converts before binding (None is converted once here: a JSON column stores it as `null`)."""
    dialect = sqlite.dialect()
    found = []
    for position, name in enumerate(CALL_COLUMNS):
        if name == "at":  # always aware UTC here (`call_values`); read back by the dialect
            found.append((position, _sqlite_time, None))
            continue
        process = call_audit.c[name].type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            found.append((position, process, process(None)))
    return tuple(found)


_SQLITE_PROCESSORS = _sqlite_processors()


def sqlite_inserts(entries: Sequence[CallEntry], *, keep_arguments: bool) -> list[tuple[str, list[Any]]]:
    """The rows of `entries` as multi-row INSERTs for the SQLite driver (qmark parameters): each
    statement with its values in order, at most `ROWS_PER_INSERT` rows each.

    Raises:
        UsageError: an entry's outcome is not a `CallOutcome`.
    """
    inserts = []
    for start in range(0, len(entries), ROWS_PER_INSERT):
        chunk = entries[start : start + ROWS_PER_INSERT]
        values: list[Any] = []
        for entry in chunk:
            row = list(call_values(entry, keep_arguments=keep_arguments))
            for position, process, none in _SQLITE_PROCESSORS:
                value = row[position]
                row[position] = none if value is None else process(value)
            values.extend(row)
        inserts.append((_INSERT_HEAD + ", ".join([_ROW_MARKS] * len(chunk)), values))
    return inserts
