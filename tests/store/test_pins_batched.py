"""`ToolPins.verify` on both databases: a listing costs one read and at most one write transaction,
concurrent checks of one listing (in one station or several) agree, and a store that fails is
reported and retried, never raised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
import sqlalchemy as sa
from sqlalchemy import event
from store_helpers import StoreTarget

from mcpstation.catalog import ServerListing
from mcpstation.pinning import ToolPins
from mcpstation.store import Store

pytestmark = pytest.mark.anyio

TOOLS = 1000
VERIFY_TIMEOUT_S = 60.0  # bound on checking a listing of TOOLS tools on a loaded 2-core machine


def listing(count: int = TOOLS, *, server: str = "big", changed: str | None = None) -> ServerListing:
    tools = tuple(
        types.Tool(
            name=f"t{i:04}",
            description="now it also mails your files" if f"t{i:04}" == changed else f"tool {i}",
            input_schema={"type": "object"},
        )
        for i in range(count)
    )
    return ServerListing(server=server, tools=tools)


@contextmanager
def counted_transactions(store: Store) -> Iterator[list[str]]:
    """The transactions the store begins meanwhile, as "read" or "write"."""
    seen: list[str] = []

    def on_begin(connection: sa.Connection) -> None:
        seen.append("write" if connection.get_execution_options().get("mcpstation_write") else "read")

    event.listen(store.engine.sync_engine, "begin", on_begin)
    try:
        yield seen
    finally:
        event.remove(store.engine.sync_engine, "begin", on_begin)


async def execute(store: Store, *statements: str) -> None:
    async with store.engine.begin() as connection:
        for statement in statements:
            await connection.execute(sa.text(statement))


def published(pins: ToolPins, made: ServerListing) -> list[str]:
    return [tool.name for tool in made.tools if pins.hidden_reason(made.server, tool) is None]


async def test_a_listing_is_checked_in_one_read_and_one_write(store: Store) -> None:
    made = listing()
    pins = ToolPins(store, "block")

    with anyio.fail_after(VERIFY_TIMEOUT_S), counted_transactions(store) as cold:
        await pins.verify([made])
    with anyio.fail_after(VERIFY_TIMEOUT_S), counted_transactions(store) as known:
        await pins.verify([made])
    restarted = ToolPins(store, "block")
    with anyio.fail_after(VERIFY_TIMEOUT_S), counted_transactions(store) as warm:
        await restarted.verify([made])

    assert (cold, known, warm) == (["read", "write"], [], ["read"])
    assert len(published(restarted, made)) == TOOLS
    stored = await store.get_pins("big")
    assert len(stored) == TOOLS and all(pin.is_approved for pin in stored.values())
    assert restarted.problems() == {}


async def test_checks_of_one_listing_at_once_by_two_stations_agree(
    store_target: StoreTarget, caplog: pytest.LogCaptureFixture
) -> None:
    made = listing()
    async with await store_target.open() as first, await store_target.open() as second:
        stations = [ToolPins(first, "block"), ToolPins(second, "block")]
        with caplog.at_level(logging.WARNING), anyio.fail_after(VERIFY_TIMEOUT_S):
            async with anyio.create_task_group() as group:
                for pins in stations * 2:  # and two checks at once within each station
                    group.start_soon(pins.verify, [made])

        for pins in stations:
            assert len(published(pins, made)) == TOOLS
            assert pins.problems() == {} and pins.drifted("big") == []
        assert len(await first.get_pins("big")) == TOOLS
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_a_changed_definition_in_a_batch_is_caught_and_approved(store: Store) -> None:
    await ToolPins(store, "block").verify([listing()])
    changed = listing(changed="t0007")
    pins = ToolPins(store, "block")

    await pins.verify([changed])

    assert pins.drifted("big") == ["t0007"]
    assert "t0007" not in published(pins, changed) and len(published(pins, changed)) == TOOLS - 1
    pin = (await store.get_pins("big"))["t0007"]
    assert pin.fingerprint == pins.fingerprint("big", changed.tools[7]) and not pin.is_approved
    await pins.approve("big", changed.tools[7], actor="ops")
    assert len(published(pins, changed)) == TOOLS and pins.drifted("big") == []


async def test_pins_that_cannot_be_read_leave_tools_unchecked_then_are_checked_again(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    made = listing(20)
    warn, block = ToolPins(store, "warn"), ToolPins(store, "block")
    await execute(store, "ALTER TABLE tool_pins RENAME TO tool_pins_away")

    with caplog.at_level(logging.WARNING, logger="mcpstation.pinning"):
        await warn.verify([made])
        await block.verify([made])

    assert len(published(warn, made)) == 20  # warn: published, with the warning
    assert published(block, made) == []  # block: nothing unchecked is published
    reason = block.hidden_reason("big", made.tools[0])
    assert reason is not None and "its pin could not be checked" in reason and "reading the pins of 'big'" in reason
    assert len(block.problems("big")) == 20
    assert all(problem.startswith("pin not checked: ") for problem in block.problems().values())
    assert "could not read the pins of server 'big' (20 tools unchecked" in caplog.text
    [warning] = block.warnings("big")
    assert warning.startswith("pins of 20 tool(s) not checked, checked again at the next change: reading the pins")
    assert block.warnings("other") == ()

    await execute(store, "ALTER TABLE tool_pins_away RENAME TO tool_pins")
    await block.verify([made])
    assert len(published(block, made)) == 20 and block.problems() == {}
    assert len(await store.get_pins("big")) == 20


def _refuse_pin_writes(dialect: str) -> list[str]:
    if dialect == "sqlite":
        return ["CREATE TRIGGER refuse_pins BEFORE INSERT ON tool_pins BEGIN SELECT RAISE(ABORT, 'pins refused'); END"]
    return [
        "CREATE FUNCTION refuse_pins() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'pins refused'; END $$ "
        "LANGUAGE plpgsql",
        "CREATE TRIGGER refuse_pins BEFORE INSERT ON tool_pins FOR EACH ROW EXECUTE FUNCTION refuse_pins()",
    ]


async def test_first_use_pins_that_cannot_be_written_are_trusted_reported_and_written_later(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    made = listing(20)
    pins = ToolPins(store, "block")
    dialect = store.engine.dialect.name
    await execute(store, *_refuse_pin_writes(dialect))

    with caplog.at_level(logging.WARNING, logger="mcpstation.pinning"):
        await pins.verify([made])

    assert len(published(pins, made)) == 20  # first use is trusted whether or not its pin is saved
    problems: dict[Any, str] = pins.problems("big")
    assert len(problems) == 20 and all("pin not saved" in p and "pins refused" in p for p in problems.values())
    assert "could not write 20 new pin(s) of server 'big'" in caplog.text
    [warning] = pins.warnings("big")
    assert warning.startswith("pins of 20 tool(s) not saved") and "pins refused" in warning
    assert await store.get_pins("big") == {}

    await execute(store, "DROP TRIGGER refuse_pins" + (" ON tool_pins" if dialect == "postgresql" else ""))
    await pins.verify([made])
    assert pins.problems() == {} and pins.warnings("big") == () and len(await store.get_pins("big")) == 20
