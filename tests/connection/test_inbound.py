"""Sorting what a server sends: the in-flight id filter, flood control, refusals and tolerant decoding.

`Inbound` is transport-agnostic, so these tests feed it messages directly; the stdio and WebSocket
tests show the same rules through real pipes and sockets.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from mcpstation.connection._framing import Oversized
from mcpstation.connection._inbound import Inbound
from mcpstation.connection._tool_budget import DropReason, ToolBudget
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, MESSAGE_UNREADABLE, SERVER_REQUEST_REFUSED, InboundLimits
from mcpstation.connection.stats import CloseReason, TransportStats

pytestmark = pytest.mark.anyio

WAIT_S = 10.0  # bound on the one test that waits for the budget to refill


class Harness:
    def __init__(self, limits: InboundLimits | None = None) -> None:
        self.stats = TransportStats()
        self.replies: list[dict[str, Any]] = []
        self.inbound = Inbound("srv", limits or InboundLimits(), self.stats, self._reply)
        self.sent: dict[int | str, types.JSONRPCMessage] = {}

    def _reply(self, data: bytes) -> bool:
        self.replies.append(json.loads(data))
        return True

    def ask(self, request_id: int | str, method: str = "tools/call", params: dict[str, Any] | None = None) -> None:
        request = types.JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params)
        self.sent[request_id] = self.inbound.outbound(request)

    def on_wire(self, request_id: int | str) -> int:
        """The id our request `request_id` went out under (what an honest server answers to)."""
        wire = self.sent[request_id]
        assert isinstance(wire, types.JSONRPCRequest) and isinstance(wire.id, int)
        return wire.id

    def feed(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.inbound.feed(data)

    def drain(self) -> list[types.JSONRPCMessage]:
        out: list[types.JSONRPCMessage] = []
        while True:
            try:
                item = self.inbound.stream.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream):
                return out
            assert isinstance(item, SessionMessage)
            out.append(item.message)


def _result(request_id: Any, text: str = "ok") -> dict[str, Any]:
    return {"id": request_id, "result": {"content": [{"type": "text", "text": text}]}}


def _texts(messages: list[types.JSONRPCMessage]) -> list[str]:
    return [m.result["content"][0]["text"] for m in messages if isinstance(m, types.JSONRPCResponse)]


async def test_only_an_answer_to_a_request_in_flight_gets_through_and_the_first_wins() -> None:
    h = Harness()
    h.ask(1)
    h.feed(_result(1, "guessed"))  # the session's own id is not what went on the wire
    h.ask(2)
    one, two = h.on_wire(1), h.on_wire(2)
    h.feed(_result(str(one), "wrong type"))  # "7" is not 7
    h.feed(_result(one, "real"))
    h.feed(_result(one, "duplicate"))
    h.feed(_result(99, "unknown"))
    h.feed({"id": True, "result": {}})
    h.feed(_result(two, "real two"))
    delivered = h.drain()
    assert _texts(delivered) == ["real", "real two"]
    assert [m.id for m in delivered] == [1, 2]  # type: ignore[union-attr]  # back under the session's ids
    assert h.stats.unexpected_responses == 5


async def test_our_requests_go_out_under_random_ids_a_server_cannot_guess() -> None:
    first, second = Harness(), Harness()
    for h in (first, second):
        for i in range(100):
            h.ask(i)
    ids = [h.on_wire(i) for h in (first, second) for i in range(100)]
    assert len(set(ids)) == len(ids)  # never the same twice, within a connection or across two
    assert all(2**32 <= wire < 2**53 for wire in ids)  # above any counter, exact in JavaScript
    assert sorted(ids[:100]) != ids[:100]  # not a sequence either


async def test_a_progress_token_and_a_cancellation_name_the_wire_id() -> None:
    h = Harness()
    h.ask(3, params={"name": "slow", "_meta": {"progressToken": 3}})
    sent = h.sent[3]
    wire = h.on_wire(3)
    assert isinstance(sent, types.JSONRPCRequest) and sent.params is not None
    assert sent.params["_meta"]["progressToken"] == wire and sent.params["name"] == "slow"
    h.feed({"method": "notifications/progress", "params": {"progressToken": wire, "progress": 1}})
    (progress,) = h.drain()
    assert progress.params["progressToken"] == 3  # type: ignore[union-attr, index]
    cancel = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3})
    out = h.inbound.outbound(cancel)
    assert isinstance(out, types.JSONRPCNotification) and out.params == {"requestId": wire}


async def test_an_answer_after_we_cancelled_counts_as_late_not_forged() -> None:
    h = Harness()
    h.ask(5)
    h.inbound.outbound(
        types.JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 5})
    )
    h.feed(_result(h.on_wire(5)))
    assert h.drain() == []
    assert (h.stats.late_responses, h.stats.unexpected_responses) == (1, 0)


async def test_responses_are_delivered_before_queued_notifications() -> None:
    h = Harness()
    h.ask(1)
    for i in range(50):
        h.feed({"method": "notifications/message", "params": {"level": "info", "data": i}})
    h.feed(_result(h.on_wire(1)))
    first = h.drain()[0]
    assert isinstance(first, types.JSONRPCResponse) and first.id == 1


async def test_a_list_changed_storm_is_one_pending_refresh() -> None:
    h = Harness()
    for _ in range(1000):
        h.feed({"method": "notifications/tools/list_changed"})
    h.feed({"method": "notifications/prompts/list_changed"})
    assert [m.method for m in h.drain()] == [  # type: ignore[union-attr]
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
    ]
    assert h.stats.notifications_coalesced == 999


async def test_every_progress_report_within_budget_reaches_the_session() -> None:
    h = Harness()
    h.ask(3)
    for step in range(5):
        h.feed({"method": "notifications/progress", "params": {"progressToken": h.on_wire(3), "progress": step}})
    h.feed(_result(h.on_wire(3)))
    delivered = h.drain()
    assert [getattr(m, "params", {"answer": True}).get("progress", "answer") for m in delivered] == [
        0,
        1,
        2,
        3,
        4,
        "answer",
    ]  # type: ignore[union-attr]
    assert h.stats.notifications_coalesced == 0


async def test_progress_over_budget_keeps_the_latest_per_request_and_drops_unknown_tokens() -> None:
    h = Harness(InboundLimits(notifications_per_s=0.001, notification_burst=1))
    h.ask(3)
    for step in range(10):
        h.feed({"method": "notifications/progress", "params": {"progressToken": h.on_wire(3), "progress": step}})
    h.feed({"method": "notifications/progress", "params": {"progressToken": "t-unknown", "progress": 1}})
    delivered = h.drain()
    assert [m.params["progress"] for m in delivered] == [9]  # type: ignore[union-attr, index]
    assert h.stats.notifications_coalesced == 9 and h.stats.notifications_dropped == 1


async def test_resource_updates_coalesce_per_uri() -> None:
    h = Harness()
    for i in range(100):
        h.feed({"method": "notifications/resources/updated", "params": {"uri": f"r://{i % 2}"}})
    assert sorted(m.params["uri"] for m in h.drain()) == ["r://0", "r://1"]  # type: ignore[union-attr, index]


async def test_notifications_over_budget_are_dropped_and_counted() -> None:
    h = Harness(InboundLimits(notifications_per_s=0.001, notification_burst=10))
    for i in range(1000):
        h.feed({"method": "notifications/message", "params": {"level": "info", "data": i}})
    assert len(h.drain()) == 10
    assert h.stats.notifications_dropped == 990


async def test_a_keyed_notification_over_budget_waits_for_the_budget_instead_of_being_lost() -> None:
    h = Harness(InboundLimits(notifications_per_s=20, notification_burst=1))
    h.feed({"method": "notifications/message", "params": {"level": "info", "data": "takes the only token"}})
    h.feed({"method": "notifications/tools/list_changed"})
    assert len(h.drain()) == 1  # the log; list_changed is held back
    with anyio.fail_after(WAIT_S):
        held = await h.inbound.stream.receive()
    assert isinstance(held, SessionMessage) and held.message.method == "notifications/tools/list_changed"  # type: ignore[union-attr]


async def test_a_listen_stream_ack_goes_with_the_answers_and_its_events_are_held_not_dropped() -> None:
    h = Harness(InboundLimits(notifications_per_s=20, notification_burst=1))
    h.ask("listen-1", "subscriptions/listen")
    h.feed({"method": "notifications/message", "params": {"level": "info", "data": "spends the budget"}})
    stamp = {"_meta": {"io.modelcontextprotocol/subscriptionId": h.on_wire("listen-1")}}
    h.feed({"method": "notifications/subscriptions/acknowledged", "params": {"notifications": {}, **stamp}})
    for _ in range(100):
        h.feed({"method": "notifications/message", "params": {"level": "info", "data": "flood"}})
    h.feed({"method": "notifications/tools/list_changed", "params": stamp})
    h.feed({"method": "notifications/tools/list_changed"})  # a push outside the stream: kept apart
    assert [m.method for m in h.drain()] == [  # type: ignore[union-attr]
        "notifications/message",  # in arrival order: the queue is short
        "notifications/subscriptions/acknowledged",
    ]
    later = []
    with anyio.fail_after(WAIT_S):
        for _ in range(2):
            item = await h.inbound.stream.receive()
            assert isinstance(item, SessionMessage)
            later.append(item.message)
    assert [m.method for m in later] == ["notifications/tools/list_changed"] * 2  # type: ignore[union-attr]
    stamps = [(m.params or {}).get("_meta", {}).get("io.modelcontextprotocol/subscriptionId") for m in later]  # type: ignore[union-attr]
    assert stamps == ["listen-1", None]  # the stream's stamp names the session's id again
    ended_by = {"requestId": h.on_wire("listen-1")}
    h.feed({"method": "notifications/cancelled", "params": ended_by})  # the stream's end
    with anyio.fail_after(WAIT_S):
        ended = await h.inbound.stream.receive()
    assert isinstance(ended, SessionMessage) and ended.message.method == "notifications/cancelled"  # type: ignore[union-attr]
    assert ended.message.params == {"requestId": "listen-1"}  # type: ignore[union-attr]


async def test_the_queue_is_bounded_even_within_budget() -> None:
    h = Harness(InboundLimits(max_queued_notifications=5))
    for i in range(20):
        h.feed({"method": "notifications/message", "params": {"level": "info", "data": i}})
    assert len(h.drain()) == 5 and h.stats.notifications_dropped == 15


async def test_server_requests_beyond_budget_are_refused_by_the_transport() -> None:
    h = Harness(InboundLimits(server_requests_per_s=0.001, server_request_burst=3))
    for i in range(10):
        h.feed({"id": f"s{i}", "method": "sampling/createMessage", "params": {"maxTokens": 10**9}})
    assert [m.id for m in h.drain()] == ["s0", "s1", "s2"]  # type: ignore[union-attr]
    assert [r["id"] for r in h.replies] == [f"s{i}" for i in range(3, 10)]
    assert {r["error"]["code"] for r in h.replies} == {SERVER_REQUEST_REFUSED}
    assert h.stats.server_requests_refused == 7


async def test_open_server_requests_are_bounded_and_free_up_when_answered_or_cancelled() -> None:
    h = Harness(InboundLimits(max_open_server_requests=2))
    for i in range(3):
        h.feed({"id": i, "method": "roots/list"})
    assert [m.id for m in h.drain()] == [0, 1] and [r["id"] for r in h.replies] == [2]  # type: ignore[union-attr]
    h.inbound.outbound(types.JSONRPCResponse(jsonrpc="2.0", id=0, result={}))
    h.feed({"method": "notifications/cancelled", "params": {"requestId": 1}})
    h.feed({"id": 3, "method": "roots/list"})
    h.feed({"id": 3, "method": "roots/list"})  # a second request under an open id is never delivered
    h.feed({"id": 4, "method": "roots/list"})
    assert [getattr(m, "id", "cancel") for m in h.drain()] == ["cancel", 3, 4]  # in arrival order


@pytest.mark.parametrize(
    "line",
    [b"Starting server on stdio...", b"\xff\xfe not utf-8 \xc3\x28", b"[1,2,3]", b'{"jsonrpc":"1.0","id":1}', b"{}"],
)
async def test_unreadable_lines_are_skipped_and_counted(line: bytes) -> None:
    h = Harness()
    h.ask(1)
    h.feed(line)
    h.feed(_result(h.on_wire(1)))
    assert _texts(h.drain()) == ["ok"]
    assert h.stats.unreadable == 1


async def test_blank_lines_are_counted_apart() -> None:
    h = Harness()
    for blank in (b"", b"   ", b"\r"):
        h.feed(blank)
    assert h.stats.blank_lines == 3 and h.stats.unreadable == 0


async def test_an_answer_too_deep_to_parse_fails_its_request_at_once() -> None:
    h = Harness()
    h.ask(4, "tools/list")
    wire = str(h.on_wire(4)).encode()
    h.feed(b'{"jsonrpc":"2.0","id":' + wire + b',"result":{"tools":' + b"[" * 5000 + b"]" * 5000 + b"}}")
    (error,) = h.drain()
    assert isinstance(error, types.JSONRPCError) and error.id == 4
    assert error.error.code == MESSAGE_UNREADABLE


async def test_a_result_that_is_not_an_object_fails_its_request() -> None:
    h = Harness()
    h.ask(6)
    h.feed({"id": h.on_wire(6), "result": [1, 2]})
    (error,) = h.drain()
    assert isinstance(error, types.JSONRPCError) and error.error.code == MESSAGE_UNREADABLE


async def test_a_listing_is_screened_and_its_drops_reported() -> None:
    h = Harness(InboundLimits(tools=ToolBudget(max_bytes=2048)))
    h.ask(2, "tools/list")
    big = {"name": "bomb", "inputSchema": {"type": "object"}, "description": "x" * 5000}
    h.feed({"id": h.on_wire(2), "result": {"tools": [{"name": "ok", "inputSchema": {"type": "object"}}, big]}})
    (page,) = h.drain()
    assert isinstance(page, types.JSONRPCResponse) and [t["name"] for t in page.result["tools"]] == ["ok"]
    dropped = h.stats.take_dropped_tools()
    assert [(d.name, d.reason) for d in dropped] == [("bomb", DropReason.TOO_LARGE)]
    assert h.stats.take_dropped_tools() == [] and h.stats.tools_dropped == 1


async def test_an_oversized_answer_with_its_id_first_fails_at_once() -> None:
    h = Harness(InboundLimits(max_message_bytes=1024))
    h.ask(7)
    h.ask(8)
    head = b'{"jsonrpc":"2.0","id":' + str(h.on_wire(7)).encode() + b',"result":{"x":"'
    handled = h.inbound.oversized(Oversized(head, 2000), handled=False)
    assert handled
    (error,) = h.drain()
    assert isinstance(error, types.JSONRPCError) and error.id == 7 and error.error.code == MESSAGE_TOO_LARGE
    assert "message too large" in error.error.message and "'srv'" in error.error.message


async def test_an_oversized_answer_with_its_id_last_fails_when_its_end_arrives() -> None:
    h = Harness(InboundLimits(max_message_bytes=1024))
    h.ask(7)
    h.ask(8)
    head = b'{"result":{"content":[{"text":"'
    assert not h.inbound.oversized(Oversized(head, 2000), handled=False)  # two could be its request
    assert h.drain() == []
    done = Oversized(
        head, 90_000, tail=b'xxxx"}]},"jsonrpc":"2.0","id":' + str(h.on_wire(8)).encode() + b"}", complete=True
    )
    assert h.inbound.oversized(done, handled=False)
    (error,) = h.drain()
    assert isinstance(error, types.JSONRPCError) and error.id == 8 and "90,000 bytes" in error.error.message


async def test_an_oversized_request_from_the_server_is_refused() -> None:
    h = Harness(InboundLimits(max_message_bytes=1024))
    h.inbound.oversized(Oversized(b'{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage"', 5000), handled=False)
    assert h.replies[0]["id"] == "s1" and h.replies[0]["error"]["code"] == MESSAGE_TOO_LARGE


async def test_ending_fails_what_is_in_flight_then_ends_the_stream() -> None:
    h = Harness()
    h.ask(1)
    h.inbound.fail_in_flight(MESSAGE_TOO_LARGE, "endless")
    h.inbound.end(CloseReason.ENDLESS_LINE, "endless")
    (error,) = h.drain()
    assert isinstance(error, types.JSONRPCError) and error.error.code == MESSAGE_TOO_LARGE
    with pytest.raises(anyio.EndOfStream):
        h.inbound.stream.receive_nowait()
    assert h.stats.closed is CloseReason.ENDLESS_LINE
    assert any("endless_line" in line for line in h.stats.warnings("srv"))


async def test_nothing_is_queued_once_the_session_closed_the_stream() -> None:
    h = Harness()
    h.ask(1)
    await h.inbound.stream.aclose()
    h.feed(_result(h.on_wire(1)))
    with pytest.raises(anyio.ClosedResourceError):
        h.inbound.stream.receive_nowait()


async def test_a_requests_logs_and_progress_reach_the_session_before_its_answer() -> None:
    h = Harness()
    h.ask(4)
    h.feed({"method": "notifications/message", "params": {"level": "info", "data": "first"}})
    h.feed({"method": "notifications/progress", "params": {"progressToken": h.on_wire(4), "progress": 1}})
    h.feed({"method": "notifications/message", "params": {"level": "info", "data": "last"}})
    h.feed(_result(h.on_wire(4)))
    delivered = h.drain()
    assert [getattr(m, "method", "answer") for m in delivered] == [
        "notifications/message",
        "notifications/progress",
        "notifications/message",
        "answer",
    ]
