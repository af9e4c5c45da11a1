"""Every hostile-server fault of issue 14, through the raw SDK `Client` over our stdio transport.

Each test shows a bounded time, a typed outcome (an MCP error code, a `TransportStats` counter or
close reason), bounded memory where memory is the subject, and no process left behind. The servers
are the chaos server's byte-level modes (`rogue_server_params`), real subprocesses.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from _processes import alive, peak_rss, processes_left_checked
from mcp import StdioServerParameters
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

from mcpstation.connection._lanes import MAX_DEFERRED_KEYS
from mcpstation.connection._stdio import stdio_transport
from mcpstation.connection._tool_budget import DropReason
from mcpstation.connection.limits import (
    DEFAULT_MAX_MESSAGE_BYTES,
    DEFAULT_MAX_QUEUED_NOTIFICATIONS,
    DEFAULT_NOTIFICATION_BURST,
    DEFAULT_NOTIFICATIONS_PER_S,
    DEFAULT_SERVER_REQUEST_BURST,
    DEFAULT_SERVER_REQUESTS_PER_S,
    MESSAGE_TOO_LARGE,
    MESSAGE_UNREADABLE,
)
from mcpstation.connection.stats import CloseReason, TransportStats
from mcpstation.testing import rogue_server_params
from mcpstation.testing._rogue import INJECTED

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT_S = 30.0  # spawn + handshake on a loaded machine
ANSWER_WITHIN_S = 2.0  # an answer sent during a flood (the issue asks for 1 s; margin for a shared machine)
FAULT_NOTICED_WITHIN_S = 5.0  # a dead leader, an oversized or endless line: failed this fast, not at a timeout
MEMORY_SLACK_BYTES = 32 * 1024 * 1024  # the bound: peak RSS for a huge line <= cap + 32 MiB
LISTING_PEAK_BYTES = 64 * 1024 * 1024  # holding the schema-bomb listing (the issue measured 444 MB)
MIB = 1024 * 1024


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    with processes_left_checked():
        yield


@asynccontextmanager
async def rogue(mode: str, *args: str, stats: TransportStats, **options: Any) -> AsyncIterator[Client]:
    """A raw SDK `Client` over our transport to a rogue server, connected within `CONNECT_TIMEOUT_S`."""
    params: StdioServerParameters = rogue_server_params(mode, *args)
    with anyio.CancelScope(deadline=anyio.current_time() + CONNECT_TIMEOUT_S) as connecting:
        async with Client(stdio_transport(params, server=mode, stats=stats), mode="legacy", **options) as client:
            connecting.deadline = math.inf
            yield client
    if connecting.cancelled_caught:
        raise TimeoutError(f"{mode} did not connect within {CONNECT_TIMEOUT_S} s")


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def _echo_within(client: Client, message: str, bound_s: float = ANSWER_WITHIN_S) -> float:
    started = anyio.current_time()
    with anyio.fail_after(bound_s):
        assert _text(await client.call_tool("echo", {"message": message})) == message
    return anyio.current_time() - started


async def test_answers_arrive_promptly_during_a_notification_flood() -> None:
    stats = TransportStats()
    delivered: list[object] = []

    async def on_message(message: object) -> None:
        delivered.append(message)

    async with rogue("notification-flood", stats=stats, message_handler=on_message) as client:
        await client.list_tools()
        started = anyio.current_time()
        assert _text(await client.call_tool("flood", {})) == "flooding 200000"
        during = 0
        for i in range(20):
            before = stats.notifications_dropped
            await _echo_within(client, f"m{i}")
            during += stats.notifications_dropped > before  # the flood was arriving while this call waited
        with anyio.fail_after(CONNECT_TIMEOUT_S):
            while _text(await client.call_tool("flood_done", {})) != "True":
                await _echo_within(client, "while it lasts")
        elapsed = anyio.current_time() - started
    assert during > 0
    # Every notification is accounted for: delivered within budget, or dropped or coalesced and counted;
    # what was still queued or held back for budget when the session ended is neither.
    accounted = stats.notifications_delivered + stats.notifications_dropped + stats.notifications_coalesced
    assert 200_000 - DEFAULT_MAX_QUEUED_NOTIFICATIONS - MAX_DEFERRED_KEYS <= accounted <= 200_000
    budget = DEFAULT_NOTIFICATION_BURST + DEFAULT_NOTIFICATIONS_PER_S * (elapsed + 1)
    assert len(delivered) <= stats.notifications_delivered <= budget


async def test_answers_arrive_promptly_during_a_list_changed_storm_and_refreshes_coalesce() -> None:
    stats = TransportStats()
    changes: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changes.append(message)

    async with rogue("list-changed-storm", stats=stats, message_handler=on_message) as client:
        started = anyio.current_time()
        names: set[str] = set()
        for i in range(10):
            await _echo_within(client, f"m{i}")
            with anyio.fail_after(ANSWER_WITHIN_S):
                names.update(t.name for t in (await client.list_tools()).tools)
        elapsed = anyio.current_time() - started
    assert len({n for n in names if n.startswith("gen_")}) == 10  # a different list each time
    assert stats.notifications_coalesced > 1000
    assert len(changes) <= stats.notifications_delivered
    assert stats.notifications_delivered <= DEFAULT_NOTIFICATION_BURST + DEFAULT_NOTIFICATIONS_PER_S * (elapsed + 1)


async def test_a_leader_exiting_while_a_grandchild_holds_stdout_fails_the_call_and_ends_its_group(
    tmp_path: Path,
) -> None:
    stats = TransportStats()
    pidfile = tmp_path / "grandchild.pid"
    async with rogue("exit-with-grandchild", "--pidfile", str(pidfile), stats=stats) as client:
        await client.list_tools()
        grandchild = int(pidfile.read_text())
        assert alive(grandchild)
        with anyio.fail_after(FAULT_NOTICED_WITHIN_S), pytest.raises(MCPError) as caught:
            await client.call_tool("exit_now", {})
    assert caught.value.error.code == types.CONNECTION_CLOSED
    assert stats.closed is CloseReason.PROCESS_EXITED and stats.exit_code == 5
    assert not alive(grandchild)


async def test_pre_emptive_duplicate_and_wrongly_typed_answers_never_reach_the_caller() -> None:
    stats = TransportStats()
    async with rogue("lying-answers", stats=stats) as client:
        listed = await client.list_tools()
        texts = [_text(await client.call_tool("echo", {"message": f"m{i}"})) for i in range(5)]
        relisted = await client.list_tools()
    assert [t.name for t in listed.tools] == [t.name for t in relisted.tools] == ["echo"]
    assert texts == [f"m{i}" for i in range(5)]
    assert INJECTED not in json.dumps([listed.model_dump(), relisted.model_dump(), texts])
    # Four lies around each of seven answers; the last answer's duplicate may still be in the pipe at close.
    assert stats.unexpected_responses >= 4 * 7 - 1


async def test_a_server_that_pre_answers_every_id_and_answers_twice_never_reaches_the_caller() -> None:
    stats = TransportStats()
    async with rogue("pre-answers", stats=stats) as client:
        listed = await client.list_tools()
        texts = [_text(await client.call_tool("echo", {"message": f"m{i}"})) for i in range(5)]
        server = client.server_info
    assert [t.name for t in listed.tools] == ["echo"]
    assert texts == [f"m{i}" for i in range(5)]
    assert server is not None and server.name == "rogue"
    assert INJECTED not in json.dumps([listed.model_dump(), texts])
    # 1,001 forged answers before each of the seven real ones (initialize, list, five calls), and
    # a second answer after each; the last ones may still be in the pipe at close.
    assert stats.unexpected_responses >= 1001 * 7


@pytest.mark.parametrize("id_last", [False, True], ids=["id-first", "id-last"])
async def test_a_50_mib_line_fails_its_call_at_once_in_bounded_memory_and_the_session_continues(
    id_last: bool,
) -> None:
    stats = TransportStats()
    async with rogue("big-line", stats=stats) as client:
        await client.list_tools()
        with peak_rss() as grown, anyio.fail_after(FAULT_NOTICED_WITHIN_S), pytest.raises(MCPError) as caught:
            await client.call_tool("big_line", {"mb": 50, "id_last": id_last})
        peak = grown()
        await _echo_within(client, "still here")
    error = caught.value.error
    assert error.code == MESSAGE_TOO_LARGE
    assert "message too large" in error.message and "'big-line'" in error.message
    assert peak <= DEFAULT_MAX_MESSAGE_BYTES + MEMORY_SLACK_BYTES, f"peak RSS grew {peak / MIB:.0f} MiB"
    assert stats.oversized == 1


async def test_an_endless_line_fails_what_is_in_flight_without_growing_memory() -> None:
    stats = TransportStats()
    async with rogue("endless-line", stats=stats) as client:
        await client.list_tools()
        assert _text(await client.call_tool("endless", {})) == "ok"
        with peak_rss() as grown, anyio.fail_after(FAULT_NOTICED_WITHIN_S), pytest.raises(MCPError) as caught:
            await client.call_tool("echo", {"message": "behind the endless line"})
        peak = grown()
        with anyio.fail_after(FAULT_NOTICED_WITHIN_S), pytest.raises(MCPError) as after:
            await client.call_tool("echo", {"message": "after"})
    # In flight when the line gave out: "too large"; sent after the session ended: "closed".
    assert caught.value.error.code in (MESSAGE_TOO_LARGE, types.CONNECTION_CLOSED)
    assert after.value.error.code == types.CONNECTION_CLOSED
    assert stats.closed is CloseReason.ENDLESS_LINE
    assert peak <= DEFAULT_MAX_MESSAGE_BYTES + MEMORY_SLACK_BYTES, f"peak RSS grew {peak / MIB:.0f} MiB"


async def test_ten_thousand_server_requests_are_refused_beyond_budget_and_never_delay_answers() -> None:
    stats = TransportStats()
    host_calls: list[str] = []

    async def sampling(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        host_calls.append("sampling")
        return types.CreateMessageResult(
            role="assistant", model="none", content=types.TextContent(type="text", text="no")
        )

    async def elicitation(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        host_calls.append("elicitation")
        return types.ElicitResult(action="decline")

    async def roots(ctx: ClientRequestContext) -> types.ListRootsResult:
        host_calls.append("roots")
        return types.ListRootsResult(roots=[])

    callbacks: dict[str, Any] = {
        "sampling_callback": sampling,
        "elicitation_callback": elicitation,
        "list_roots_callback": roots,
    }
    async with rogue("request-flood", stats=stats, **callbacks) as client:
        await client.list_tools()
        started = anyio.current_time()
        assert _text(await client.call_tool("request_flood", {})) == "requesting 10000"
        for i in range(20):
            await _echo_within(client, f"m{i}")
        elapsed = anyio.current_time() - started
        with anyio.fail_after(CONNECT_TIMEOUT_S):
            while True:  # every request gets exactly one answer, from the host or from the transport
                seen = json.loads(_text(await client.call_tool("answers_seen", {})))
                if sum(seen.values()) + stats.refusals_unsent >= 10_000:
                    break
    assert sum(seen.values()) + stats.refusals_unsent == 10_000
    assert len(host_calls) <= DEFAULT_SERVER_REQUEST_BURST + DEFAULT_SERVER_REQUESTS_PER_S * (elapsed + 1)
    assert stats.server_requests_refused >= 10_000 - DEFAULT_SERVER_REQUEST_BURST - DEFAULT_SERVER_REQUESTS_PER_S * (
        elapsed + 1
    )


async def test_schema_bombs_are_dropped_unparsed_and_reported() -> None:
    stats = TransportStats()
    async with rogue("schema-bombs", stats=stats) as client:
        with peak_rss() as grown, anyio.fail_after(CONNECT_TIMEOUT_S):
            listed = await client.list_tools()
        peak = grown()
        await _echo_within(client, "fine")
    assert [t.name for t in listed.tools] == ["echo", "tree"]
    assert {d.name: d.reason for d in stats.take_dropped_tools()} == {
        "enum_bomb": DropReason.TOO_LARGE,
        "description_bomb": DropReason.TOO_LARGE,
        "properties_bomb": DropReason.TOO_LARGE,
        "ref_cycle": DropReason.CYCLIC_REF,
        "remote_ref": DropReason.REMOTE_REF,
        "deep": DropReason.TOO_DEEP,
    }
    assert peak <= LISTING_PEAK_BYTES, f"peak RSS grew {peak / MIB:.0f} MiB"


async def test_a_listing_too_deep_to_parse_fails_at_once_with_a_reason() -> None:
    stats = TransportStats()
    async with rogue("too-deep-listing", stats=stats) as client:
        with anyio.fail_after(FAULT_NOTICED_WITHIN_S), pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert caught.value.error.code == MESSAGE_UNREADABLE
    assert "nested too deep" in caught.value.error.message


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("initialize-error", MCPError), ("unsupported-version", RuntimeError)],
)
async def test_a_server_that_fails_its_handshake_fails_to_start_promptly(mode: str, expected: type) -> None:
    stats = TransportStats()
    with anyio.fail_after(CONNECT_TIMEOUT_S), pytest.raises(BaseException) as caught:
        async with Client(stdio_transport(rogue_server_params(mode), server=mode, stats=stats), mode="legacy"):
            pytest.fail("the handshake succeeded")
    assert any(isinstance(leaf, expected) for leaf in _leaves(caught.value)), caught.value


async def test_a_dripping_handshake_is_bounded_by_the_callers_budget() -> None:
    stats = TransportStats()
    with anyio.move_on_after(1.0) as budget:
        async with Client(stdio_transport(rogue_server_params("drip-handshake"), server="drip", stats=stats)):
            pytest.fail("a handshake dripping at 10 bytes/s finished")
    assert budget.cancelled_caught and stats.pid is not None and not alive(stats.pid)
