"""Tool pins in SQL: a server's pins read in one query, a listing's pins written as one batch.

Every write is one `INSERT ... ON CONFLICT` per row, so two writers pinning the same tool at once
(two stations, or two checks in one) both succeed and agree: the first fingerprint in wins, the
same fingerprint again changes nothing, and a different one starts over unapproved. Rows go in
tool order, so two batches over the same tools take their row locks in the same order and
cannot deadlock on PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Row
from sqlalchemy.ext.asyncio import AsyncSession

from mcpstation.store._schema import tool_pins
from mcpstation.store._times import maybe_utc, utc
from mcpstation.store._upsert import insert
from mcpstation.store.records import PinCheck, ToolPin

_KEY = [tool_pins.c.server, tool_pins.c.tool]


async def read_pins(session: AsyncSession, server: str) -> dict[str, ToolPin]:
    """Every pin of `server`, by tool."""
    query = sa.select(tool_pins.c.tool, tool_pins.c.fingerprint, tool_pins.c.first_seen, tool_pins.c.approved_at)
    rows = (await session.execute(query.where(tool_pins.c.server == server))).all()
    # Unpacked by position: attribute access on 10,000 rows is most of what reading them costs.
    return {
        tool: ToolPin(server, tool, fingerprint, utc(first_seen), None if approved_at is None else utc(approved_at))
        for tool, fingerprint, first_seen, approved_at in rows
    }


async def read_pins_of(session: AsyncSession, servers: Sequence[str]) -> dict[str, dict[str, PinCheck]]:
    """What a check needs of every pin of each of `servers`, by server then tool (empty for a
    server without pins). No timestamp is read: converting 10,000 of them was most of the cost."""
    approved = tool_pins.c.approved_at.is_not(None)
    query = sa.select(tool_pins.c.server, tool_pins.c.tool, tool_pins.c.fingerprint, approved)
    found: dict[str, dict[str, PinCheck]] = {server: {} for server in servers}
    rows = (await session.execute(query.where(tool_pins.c.server.in_(list(servers))))).all()
    for server, tool, fingerprint, is_approved in rows:
        found[server][tool] = PinCheck(fingerprint, bool(is_approved))
    return found


async def read_pin(session: AsyncSession, server: str, tool: str) -> ToolPin | None:
    query = sa.select(tool_pins).where(tool_pins.c.server == server, tool_pins.c.tool == tool)
    row = (await session.execute(query)).first()
    return None if row is None else pin_record(row)


async def write_pins(
    session: AsyncSession,
    dialect: str,
    server: str,
    fingerprints: Mapping[str, str],
    *,
    now: datetime,
    approve_new: bool,
) -> None:
    """Pin each tool's fingerprint: a tool without a pin gets one (approved when `approve_new`), a
    different fingerprint replaces the pin unapproved with `first_seen` now, the same changes nothing."""
    statement = insert(dialect, tool_pins)
    excluded = statement.excluded
    statement = statement.on_conflict_do_update(
        index_elements=_KEY,
        set_={"fingerprint": excluded.fingerprint, "first_seen": excluded.first_seen, "approved_at": sa.null()},
        where=tool_pins.c.fingerprint != excluded.fingerprint,
    )
    approved_at = now if approve_new else None
    rows = [
        {"server": server, "tool": tool, "fingerprint": fingerprint, "first_seen": now, "approved_at": approved_at}
        for tool, fingerprint in sorted(fingerprints.items())
    ]
    if rows:
        # executemany: the statement is compiled once; the drivers batch the rows themselves.
        await session.execute(statement, rows)


async def write_pin(session: AsyncSession, dialect: str, pin: ToolPin, *, keep_approval: bool) -> ToolPin:
    """Upsert one pin and return the row as stored.

    The same fingerprint keeps its `first_seen`; it keeps its approval too when `keep_approval`
    (and `pin` is unapproved), else takes `pin.approved_at`. A different fingerprint is `pin`.
    """
    statement = insert(dialect, tool_pins).values(**_values(pin))
    excluded = statement.excluded
    same = tool_pins.c.fingerprint == excluded.fingerprint
    approved_at: Any = excluded.approved_at
    if keep_approval:
        approved_at = sa.case((same & tool_pins.c.approved_at.is_not(None), tool_pins.c.approved_at), else_=approved_at)
    statement = statement.on_conflict_do_update(
        index_elements=_KEY,
        set_={
            "fingerprint": excluded.fingerprint,
            "first_seen": sa.case((same, tool_pins.c.first_seen), else_=excluded.first_seen),
            "approved_at": approved_at,
        },
    )
    row = (await session.execute(statement.returning(*tool_pins.c))).one()
    return pin_record(row)


async def approve_stored_pin(session: AsyncSession, server: str, tool: str, *, now: datetime) -> ToolPin | None:
    """Approve the pin as stored; None when the tool has no pin."""
    update = (
        sa.update(tool_pins)
        .where(tool_pins.c.server == server, tool_pins.c.tool == tool)
        .values(approved_at=now)
        .returning(*tool_pins.c)
    )
    row = (await session.execute(update)).first()
    return None if row is None else pin_record(row)


def pin_record(row: Row[Any]) -> ToolPin:
    return ToolPin(
        server=row.server,
        tool=row.tool,
        fingerprint=row.fingerprint,
        first_seen=utc(row.first_seen),
        approved_at=maybe_utc(row.approved_at),
    )


def _values(pin: ToolPin) -> dict[str, Any]:
    return {
        "server": pin.server,
        "tool": pin.tool,
        "fingerprint": pin.fingerprint,
        "first_seen": pin.first_seen,
        "approved_at": pin.approved_at,
    }
