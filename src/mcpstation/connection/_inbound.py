"""What a server sends, sorted before the SDK session sees it: answers first, floods bounded.

Transport-agnostic: a transport hands `Inbound.feed` one complete message at a time (a line,
a frame), tells it about every message going out (`Inbound.outbound`), and gives the session
`Inbound.stream` as its read stream. The reader is never slowed down, so an answer never
waits behind a flood in the pipe; instead, once a message is read:

- A response is delivered only if its id is one of our requests in flight when it arrives,
  matched exactly (`"7"` does not answer `7`); the first answer wins, duplicates, pre-emptive
  and unknown answers are dropped and counted. A `tools/list` result is screened tool by tool
  (`_tool_budget`). Responses jump a backed-up queue (more than `ANSWERS_JUMP_AFTER` waiting);
  below that, arrival order is kept, so a request's logs and progress reach the session first.
- Notifications draw on a per-server budget (a token bucket). Over it, the keyed ones are
  coalesced and held back until the budget refills: one pending `list_changed` per kind, the
  latest progress per request, one `resources/updated` per URI. The rest are dropped and counted.
  Within budget every progress report is delivered; progress for a request not in flight is
  dropped at once.
- Requests from the server draw on their own budget and a bound on how many may be open; beyond
  it the transport answers them itself with `SERVER_REQUEST_REFUSED`, through a bounded queue.
- Lines that are not JSON-RPC (banners, invalid UTF-8, blank lines) are skipped and counted,
  logged at most once per `LOG_EVERY_S`; they never reach the session and are never fatal.

The synthesized error codes are named constants, so the station can map them to typed
outcomes without reading message text.

Long on purpose: the read stream, the budgets and the screening share the table of requests in
flight and the counters on every message; split apart, each part would reach into the others'
state on the hot path.
"""

from __future__ import annotations

import collections
import enum
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
import anyio.lowlevel
import mcp_types as types
import msgspec
import pydantic
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from mcpstation.connection._framing import HEAD_BYTES, Edges, Oversized, sniff_head, sniff_tail
from mcpstation.connection._tool_budget import DroppedTool, ToolBudget, screen_tools_page
from mcpstation.connection._wire import JSONRPC_2_0, decode, decode_members, encode_message

logger = logging.getLogger(__name__)

# Error codes the transport synthesizes (never sent by us on the wire except SERVER_REQUEST_REFUSED),
# from JSON-RPC's implementation-defined band; the SDK itself uses -32000 and -32001 there.
MESSAGE_TOO_LARGE = -32010
"""A response was over `max_message_bytes`; the request failed without the message being read."""
MESSAGE_UNREADABLE = -32011
"""A response could not be parsed (not JSON, nested too deep, result not an object)."""
SERVER_REQUEST_REFUSED = -32012
"""Sent to a server whose requests to us exceed their budget; the request was not handled."""

DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
DEFAULT_NOTIFICATIONS_PER_S = 100.0  # notifications a server may send per second, sustained
DEFAULT_NOTIFICATION_BURST = 200  # and at once
DEFAULT_MAX_QUEUED_NOTIFICATIONS = 1000  # delivered ones waiting for the session, whatever the budget
DEFAULT_SERVER_REQUESTS_PER_S = 10.0  # sampling, elicitation, roots, ping from one server
DEFAULT_SERVER_REQUEST_BURST = 20
DEFAULT_MAX_OPEN_SERVER_REQUESTS = 16  # handed to the session and not yet answered
MAX_DEFERRED_KEYS = 1000  # distinct coalescing keys (URIs) held back for one server
MAX_REMEMBERED_CANCELLED = 256  # ids we cancelled, to tell a late answer from a forged one
MAX_REPORTED_DROPPED_TOOLS = 100  # dropped tools kept for `status` until taken
LOG_EVERY_S = 10.0  # at most one warning per kind of trouble per server in this time
YIELD_EVERY = 64  # messages handed over without yielding to the event loop
ANSWERS_JUMP_AFTER = 16  # queued messages past which answers and server requests go first
CLOCK_EVERY = 32  # during a flood, lines between two looks at the clock (a token is 10 ms at 100/s)

_LIST_CHANGED = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/roots/list_changed",
    }
)
_METHOD = re.compile(rb'"method"\s*:\s*"([^"\\]*)"')
_PROGRESS = "notifications/progress"
_CANCELLED = "notifications/cancelled"
_RESOURCE_UPDATED = "notifications/resources/updated"
_LISTEN_ACK = "notifications/subscriptions/acknowledged"  # 2026-07-28: a listen stream is open
_KEYED_METHODS = frozenset(m.encode() for m in (*_LIST_CHANGED, _PROGRESS, _CANCELLED, _RESOURCE_UPDATED, _LISTEN_ACK))

RequestId = int | str
CoalesceKey = tuple[str | int | None, ...]

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "MESSAGE_TOO_LARGE",
    "MESSAGE_UNREADABLE",
    "SERVER_REQUEST_REFUSED",
    "CloseReason",
    "Inbound",
    "InboundLimits",
    "InboundStream",
    "TransportStats",
]


class CloseReason(enum.StrEnum):
    """Why a transport ended the session's read stream."""

    EOF = "eof"  # the server closed its output
    PROCESS_EXITED = "process_exited"  # the process exited while something else held its stdout open
    ENDLESS_LINE = "endless_line"  # a line went on past every bound; nothing after it can be framed
    MESSAGE_TOO_LARGE = "message_too_large"  # a frame over the cap ended the connection (WebSocket)
    BROKEN = "broken"  # reading failed (an OS error)


@dataclass(frozen=True, slots=True)
class InboundLimits:
    """Per-server bounds on what a server may send (defaults are sane for every real server)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    tools: ToolBudget = field(default_factory=ToolBudget)
    notifications_per_s: float = DEFAULT_NOTIFICATIONS_PER_S
    notification_burst: int = DEFAULT_NOTIFICATION_BURST
    max_queued_notifications: int = DEFAULT_MAX_QUEUED_NOTIFICATIONS
    server_requests_per_s: float = DEFAULT_SERVER_REQUESTS_PER_S
    server_request_burst: int = DEFAULT_SERVER_REQUEST_BURST
    max_open_server_requests: int = DEFAULT_MAX_OPEN_SERVER_REQUESTS


@dataclass
class TransportStats:
    """What one of our transports skipped, dropped, refused or cut; read by the connection for `status`.

    Counters only grow. `dropped_tools` holds the tools left out of listings since the last
    `take_dropped_tools()` (at most `MAX_REPORTED_DROPPED_TOOLS`; `tools_dropped` counts all).
    """

    pid: int | None = None
    exit_code: int | None = None
    closed: CloseReason | None = None
    closed_detail: str | None = None
    unreadable: int = 0  # not JSON, or JSON but not JSON-RPC (banners, invalid UTF-8, wrong shape)
    blank_lines: int = 0
    unexpected_responses: int = 0  # not in flight when it arrived: duplicate, pre-emptive, unknown, wrong id type
    late_responses: int = 0  # answers to requests we had already cancelled
    oversized: int = 0  # messages over max_message_bytes, discarded unread
    notifications_delivered: int = 0  # handed to the session
    notifications_coalesced: int = 0
    notifications_dropped: int = 0
    server_requests_refused: int = 0
    refusals_unsent: int = 0  # refusals dropped because the server was not reading them
    tools_dropped: int = 0
    dropped_tools: list[DroppedTool] = field(default_factory=list)

    def take_dropped_tools(self) -> list[DroppedTool]:
        """The tools dropped since the last call (one listing walk's worth, if called after each)."""
        taken, self.dropped_tools = self.dropped_tools, []
        return taken

    def warnings(self, server: str) -> list[str]:
        """One line per kind of trouble seen so far, for `status`."""
        counts = (
            (self.unreadable, "unreadable lines skipped"),
            (self.unexpected_responses, "unexpected responses dropped (not in flight)"),
            (self.late_responses, "late responses dropped (request already cancelled)"),
            (self.oversized, "messages over the size cap discarded"),
            (self.notifications_dropped, "notifications dropped over budget"),
            (self.notifications_coalesced, "notifications coalesced over budget"),
            (self.server_requests_refused, "requests from the server refused over budget"),
            (self.tools_dropped, "tool definitions dropped"),
        )
        lines = [f"server {server!r}: {n:,} {what}" for n, what in counts if n]
        if self.closed is not None and self.closed is not CloseReason.EOF:
            lines.append(f"server {server!r}: connection ended ({self.closed}): {self.closed_detail}")
        return lines


class _Bucket:
    """A token bucket: `take()` says whether one more message fits the budget now."""

    __slots__ = ("_burst", "_looks", "_rate", "_stamp", "_tokens")

    def __init__(self, rate_per_s: float, burst: int) -> None:
        self._rate = rate_per_s
        self._burst = float(burst)
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._looks = 0

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(self._burst, self._tokens + (now - self._stamp) * self._rate)
        self._stamp = now

    def take(self) -> bool:
        if self._tokens < 1.0:
            self._refill()
            if self._tokens < 1.0:
                return False
        self._tokens -= 1.0
        return True

    @property
    def spent(self) -> bool:
        return self._tokens < 1.0

    def empty(self) -> bool:
        """Whether the budget is spent; while it is, the clock is read only every `CLOCK_EVERY` calls."""
        if self._tokens >= 1.0:
            return False
        self._looks += 1
        if self._looks % CLOCK_EVERY:
            return True
        self._refill()
        return self._tokens < 1.0

    def seconds_until_token(self) -> float:
        missing = 1.0 - self._tokens - (time.monotonic() - self._stamp) * self._rate
        return max(0.0, missing / self._rate) if self._rate > 0 else math.inf


class Note:
    """A notification as decoded; its pydantic model is built only if it is delivered."""

    __slots__ = ("method", "params")

    def __init__(self, method: str, params: dict[str, Any] | None) -> None:
        self.method = method
        self.params = params

    def to_message(self) -> SessionMessage:
        if self.params is None:
            return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=self.method))
        return SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=self.method, params=self.params))


class _Queued:
    """A notification waiting for the session; coalescing replaces its note in place."""

    __slots__ = ("key", "note")

    def __init__(self, key: CoalesceKey | None, note: Note) -> None:
        self.key = key
        self.note = note


class _Throttled:
    """Counts one kind of trouble and logs it at most once per `LOG_EVERY_S`."""

    __slots__ = ("_last", "_pending", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._pending = 0
        self._last = -math.inf

    def note(self, server: str, detail: str) -> None:
        self._pending += 1
        if self._pending > 1 and self._pending % CLOCK_EVERY:
            return  # a flood: the clock is read now and then, not per line
        now = time.monotonic()
        if now - self._last >= LOG_EVERY_S:
            logger.warning("server %r: %d %s (latest: %s)", server, self._pending, self._what, detail)
            self._pending = 0
            self._last = now


class InboundStream:
    """The session's read stream: responses first, then server requests, then notifications.

    Implements the SDK's `ReadStream[SessionMessage | Exception]` (it never yields an Exception).
    At end of input it drains what is queued, then raises `anyio.EndOfStream`.
    """

    def __init__(self, notification_budget: _Bucket, stats: TransportStats) -> None:
        self._stats = stats
        # Each lane holds (arrival number, message) in arrival order.
        self._answers: collections.deque[tuple[int, SessionMessage | _Queued]] = collections.deque()
        self._requests: collections.deque[tuple[int, SessionMessage]] = collections.deque()
        self._notifications: collections.deque[tuple[int, _Queued]] = collections.deque()
        self._arrivals = 0
        self._queued_by_key: dict[CoalesceKey, _Queued] = {}
        self._deferred: dict[CoalesceKey, Note] = {}
        self._budget = notification_budget
        self._ready = anyio.Event()
        self._handed_over = 0
        self.eof = False
        self.closed = False

    # -- the producer side (Inbound) ---------------------------------------------------------------

    def _wake(self) -> None:
        if not self._ready.is_set():
            self._ready.set()

    def _arrival(self) -> int:
        self._arrivals += 1
        return self._arrivals

    def push_answer(self, message: SessionMessage) -> None:
        self._answers.append((self._arrival(), message))
        self._wake()

    def push_with_answers(self, key: CoalesceKey, note: Note) -> bool:
        """Queue a note about a request in flight beside the answers; False when it replaced a queued one."""
        queued = self._queued_by_key.get(key)
        if queued is not None:
            queued.note = note
            return False
        entry = _Queued(key, note)
        self._queued_by_key[key] = entry
        self._answers.append((self._arrival(), entry))
        self._wake()
        return True

    def push_beside_answers(self, key: CoalesceKey, note: Note) -> None:
        """Queue a note about a request in flight beside the answers; a later one over budget may replace it."""
        entry = _Queued(key, note)
        self._queued_by_key[key] = entry
        self._answers.append((self._arrival(), entry))
        self._wake()

    def push_request(self, message: SessionMessage) -> None:
        self._requests.append((self._arrival(), message))
        self._wake()

    def queued_notifications(self) -> int:
        return len(self._notifications)

    def coalesce(self, key: CoalesceKey, note: Note) -> bool:
        """Replace a queued or held-back notification with the same key; False when there is none."""
        queued = self._queued_by_key.get(key)
        if queued is not None:
            queued.note = note
            return True
        if key in self._deferred:
            self._deferred[key] = note
            return True
        return False

    def push_notification(self, key: CoalesceKey | None, note: Note) -> None:
        entry = _Queued(key, note)
        if key is not None:
            self._queued_by_key[key] = entry
        self._notifications.append((self._arrival(), entry))
        self._wake()

    def defer(self, key: CoalesceKey, note: Note) -> bool:
        """Hold a keyed notification back until the budget refills; False when too many keys are held."""
        if len(self._deferred) >= MAX_DEFERRED_KEYS:
            return False
        self._deferred[key] = note
        self._wake()
        return True

    def forget(self, key: CoalesceKey) -> None:
        """Drop a held-back message (its request was answered or cancelled)."""
        self._deferred.pop(key, None)

    def end(self) -> None:
        """No more input: the session gets what is queued, then end of stream."""
        self.eof = True
        self._deferred.clear()
        self._wake()

    # -- the consumer side (the SDK session) --------------------------------------------------------

    def _next_lane(self) -> collections.deque[Any] | None:
        """The lane to serve next: the oldest head, unless notifications are backed up."""
        answers, requests, notifications = self._answers, self._requests, self._notifications
        if len(notifications) > ANSWERS_JUMP_AFTER:
            return answers or requests or notifications
        oldest: collections.deque[Any] | None = None
        for lane in (answers, requests, notifications):
            if lane and (oldest is None or lane[0][0] < oldest[0][0]):
                oldest = lane
        return oldest

    def _pop(self) -> SessionMessage | None:
        lane = self._next_lane()
        if lane is None:
            return None
        _, item = lane.popleft()
        if isinstance(item, _Queued):
            if item.key is not None and self._queued_by_key.get(item.key) is item:
                del self._queued_by_key[item.key]
            self._stats.notifications_delivered += 1
            return item.note.to_message()
        message: SessionMessage = item
        return message

    def receive_nowait(self) -> SessionMessage | Exception:
        """The next message if one may be delivered now.

        Raises:
            anyio.WouldBlock: nothing to deliver yet. anyio.EndOfStream: input ended and all was delivered.
            anyio.ClosedResourceError: the session closed this stream.
        """
        if self.closed:
            raise anyio.ClosedResourceError
        item = self._pop()
        if item is not None:
            return item
        if self._deferred and self._budget.take():
            self._stats.notifications_delivered += 1
            return self._deferred.pop(next(iter(self._deferred))).to_message()
        if self.eof:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> SessionMessage | Exception:
        self._handed_over += 1
        if self._handed_over % YIELD_EVERY == 0:
            await anyio.lowlevel.checkpoint()  # a burst never holds the event loop for long
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                pass
            if self._ready.is_set():
                self._ready = anyio.Event()
                continue
            wait_s = self._budget.seconds_until_token() if self._deferred else math.inf
            with anyio.move_on_after(wait_s):
                await self._ready.wait()

    def __aiter__(self) -> InboundStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> InboundStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """The session is done reading: drop everything queued and everything to come."""
        self.closed = True
        self._answers.clear()
        self._requests.clear()
        self._notifications.clear()
        self._queued_by_key.clear()
        self._deferred.clear()
        self._wake()

    async def aclose(self) -> None:
        self.close()
        await anyio.lowlevel.checkpoint()


class Inbound:
    """Sorts one server's messages for the session; see the module docstring for the rules.

    `reply` queues bytes the transport itself must send the server (refusals); it returns False
    when its bounded queue is full, and then the refusal is dropped.
    """

    def __init__(
        self, server: str, limits: InboundLimits, stats: TransportStats, reply: Callable[[bytes], bool]
    ) -> None:
        self.server = server
        self.limits = limits
        self.stats = stats
        self._reply = reply
        self._notification_budget = _Bucket(limits.notifications_per_s, limits.notification_burst)
        self._request_budget = _Bucket(limits.server_requests_per_s, limits.server_request_burst)
        self.stream = InboundStream(self._notification_budget, stats)
        self._in_flight: dict[RequestId, str] = {}
        self._cancelled: collections.OrderedDict[RequestId, None] = collections.OrderedDict()
        self._open_server_requests: set[RequestId] = set()
        self._log_unreadable = _Throttled("unreadable lines skipped")
        self._log_unexpected = _Throttled("responses dropped: not answering a request in flight")
        self._log_flood = _Throttled("notifications dropped or coalesced over budget")
        self._log_refused = _Throttled("requests from the server refused over budget")

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def flooding(self) -> bool:
        """The server has spent its notification budget (as of the last message)."""
        return self._notification_budget.spent

    def over_budget(self) -> bool:
        """The server's notification budget is spent now (looking at the clock now and then)."""
        return self._notification_budget.empty()

    # -- what we send --------------------------------------------------------------------------------

    def outbound(self, message: types.JSONRPCMessage) -> None:
        """Note a message about to be written; call it before the bytes go out."""
        if isinstance(message, types.JSONRPCRequest):
            self._in_flight[message.id] = message.method
        elif isinstance(message, types.JSONRPCResponse):
            self._open_server_requests.discard(message.id)
        elif isinstance(message, types.JSONRPCError):
            if message.id is not None:
                self._open_server_requests.discard(message.id)
        elif message.method == _CANCELLED:
            request_id = (message.params or {}).get("requestId")
            if isinstance(request_id, int | str) and not isinstance(request_id, bool):
                if self._in_flight.pop(request_id, None) is not None:
                    self._remember_cancelled(request_id)
                self.stream.forget((_PROGRESS, request_id))

    def _remember_cancelled(self, request_id: RequestId) -> None:
        self._cancelled[request_id] = None
        while len(self._cancelled) > MAX_REMEMBERED_CANCELLED:
            self._cancelled.popitem(last=False)

    # -- what the server sends -----------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """Sort one complete message (a line without its newline, or a frame)."""
        if self.stream.closed:
            return
        if self._notification_budget.empty() and b'"id"' not in data and _unkeyed_notification(data):
            # Over budget, and neither a response, a request nor a notification we coalesce: a flood's
            # bulk, dropped without being decoded. (A response whose "id" key were written escaped
            # would land here too; only the server that wrote it so would lose its answer.)
            self.stats.notifications_dropped += 1
            self._log_flood.note(self.server, "dropped unread")
            return
        if not data or data.isspace():
            self.stats.blank_lines += 1
            return
        try:
            members = decode_members(data)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as exc:
            self._unreadable(data, _problem(exc))
            return
        jsonrpc = members.get("jsonrpc")
        if jsonrpc != JSONRPC_2_0 and (jsonrpc is None or _safe_decode(jsonrpc) != "2.0"):
            self._unreadable(data, "not JSON-RPC 2.0")
            return
        method_raw = members.get("method")
        id_raw = members.get("id")
        if method_raw is not None:
            method = _safe_decode(method_raw)
            if not isinstance(method, str):
                self._unreadable(data, "method is not a string")
            elif id_raw is None:
                self._notification(method, members.get("params"), data)
            else:
                self._server_request(id_raw, method, members.get("params"), data)
        elif id_raw is not None and ("result" in members or "error" in members):
            self._response(id_raw, members, data)
        else:
            self._unreadable(data, "neither a request, a notification nor a response")

    def _response(self, id_raw: msgspec.Raw, members: dict[str, msgspec.Raw], data: bytes) -> None:
        request_id = _request_id(id_raw)
        method = self._in_flight.pop(request_id, None) if request_id is not None else None
        if method is None:
            if request_id is not None and request_id in self._cancelled:
                self.stats.late_responses += 1
            else:
                self.stats.unexpected_responses += 1
                self._log_unexpected.note(self.server, f"id {_preview(bytes(id_raw))}")
            return
        assert request_id is not None
        self.stream.forget((_PROGRESS, request_id))
        message: types.JSONRPCMessage
        try:
            if "result" in members:
                result = self._result(method, members["result"])
                if not isinstance(result, dict):
                    raise ValueError("its result is not a JSON object")
                message = types.JSONRPCResponse.model_validate({"jsonrpc": "2.0", "id": request_id, "result": result})
            else:
                error = types.ErrorData.model_validate(decode(members["error"]))
                message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        except (msgspec.MsgspecError, RecursionError, ValueError) as exc:  # pydantic's ValidationError too
            why = f"unreadable answer to {method} from server {self.server!r} ({_problem(exc)})"
            self._push_error(request_id, MESSAGE_UNREADABLE, why)
            self.stats.unreadable += 1
            self._log_unreadable.note(self.server, _preview(data))
            return
        self.stream.push_answer(SessionMessage(message))

    def _result(self, method: str, raw: msgspec.Raw) -> Any:
        if method != "tools/list":
            return decode(raw)
        page, dropped = screen_tools_page(raw, self.limits.tools)
        if dropped:
            self.stats.tools_dropped += len(dropped)
            room = MAX_REPORTED_DROPPED_TOOLS - len(self.stats.dropped_tools)
            self.stats.dropped_tools.extend(dropped[: max(0, room)])
            for tool in dropped[:3]:
                logger.warning("%s", tool.describe(self.server))
        return page

    def _server_request(self, id_raw: msgspec.Raw, method: str, params_raw: msgspec.Raw | None, data: bytes) -> None:
        request_id = _request_id(id_raw)
        if request_id is None:
            self._unreadable(data, "request id is neither an integer nor a string")
            return
        if request_id in self._open_server_requests:
            self.stats.unexpected_responses += 1  # a second request under an open id: never answer twice
            return
        if len(self._open_server_requests) >= self.limits.max_open_server_requests or not self._request_budget.take():
            self._refuse(request_id, method)
            return
        try:
            params = decode(params_raw) if params_raw is not None else None
            body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params_raw is not None:
                body["params"] = params
            message = types.JSONRPCRequest.model_validate(body)
        except (msgspec.DecodeError, RecursionError, pydantic.ValidationError) as exc:
            self._unreadable(data, _first_line(exc))
            return
        self._open_server_requests.add(request_id)
        self.stream.push_request(SessionMessage(message))

    def _refuse(self, request_id: RequestId, method: str, *, code: int = SERVER_REQUEST_REFUSED, why: str = "") -> None:
        self.stats.server_requests_refused += 1
        limits = self.limits
        text = why or (
            f"too many requests: mcpstation handles at most {limits.server_requests_per_s:g} per second "
            f"and {limits.max_open_server_requests} at once from one server; {method} was refused"
        )
        refusal = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=text))
        if not self._reply(encode_message(refusal)):
            self.stats.refusals_unsent += 1
        self._log_refused.note(self.server, method)

    def _notification(self, method: str, params_raw: msgspec.Raw | None, data: bytes) -> None:
        if method == _PROGRESS:
            self._progress(params_raw, data)
        elif method == _CANCELLED:
            self._peer_cancelled(params_raw)
        else:
            self._other_notification(method, params_raw, data)

    def _within_budget(self) -> bool:
        queued = self.stream.queued_notifications()
        return queued < self.limits.max_queued_notifications and self._notification_budget.take()

    def _progress(self, params_raw: msgspec.Raw | None, data: bytes) -> None:
        if not self._in_flight:
            self._dropped(_PROGRESS)  # progress for nothing we asked
            return
        params = _params(params_raw)
        token = params.get("progressToken") if params is not None else None
        if not isinstance(token, int | str) or isinstance(token, bool):
            self._dropped(_PROGRESS)
            return
        token = coerce_request_id(token)  # the SDK correlates "7" with 7 for progress tokens
        if token not in self._in_flight:
            self._dropped(_PROGRESS)
            return
        note = Note(_PROGRESS, params)
        key: CoalesceKey = (_PROGRESS, token)
        stream = self.stream
        if self._notification_budget.take():
            stream.push_beside_answers(key, note)  # within budget, every report reaches the caller
        elif stream.coalesce(key, note):
            self._coalesced()
        elif not stream.defer(key, note):
            self._dropped(_PROGRESS)

    def _peer_cancelled(self, params_raw: msgspec.Raw | None) -> None:
        params = _params(params_raw)
        request_id = params.get("requestId") if params is not None else None
        if not isinstance(request_id, int | str) or isinstance(request_id, bool):
            self._dropped(_CANCELLED)
            return
        if request_id in self._open_server_requests:
            self._open_server_requests.discard(request_id)  # the session will not answer it now
            self.stream.push_notification(None, Note(_CANCELLED, params))
        elif request_id in self._in_flight:
            # One of ours, cancelled by the server: (2026-07-28) how a listen stream ends. Once per request.
            self.stream.push_with_answers((_CANCELLED, request_id), Note(_CANCELLED, params))
        else:
            self._dropped(_CANCELLED)  # cancels nothing the session is handling

    def _other_notification(self, method: str, params_raw: msgspec.Raw | None, data: bytes) -> None:
        keyed = method in _LIST_CHANGED or method == _RESOURCE_UPDATED or method == _LISTEN_ACK
        if not keyed and not self._within_budget():
            self._dropped(method)
            return
        params = _params(params_raw) if params_raw is not None else None
        if params_raw is not None and params is None:
            self._unreadable(data, f"{method}: params is not an object")
            return
        note = Note(method, params)
        key = _coalesce_key(method, params) if keyed else None
        stream = self.stream
        if method == _LISTEN_ACK and key is not None and key[1] in self._in_flight:
            stream.push_with_answers(key, note)  # it opens one of our listen streams: never held back
            return
        if key is None:
            stream.push_notification(None, note)
        elif stream.coalesce(key, note):
            self._coalesced()
        elif self._within_budget():
            stream.push_notification(key, note)
        elif not stream.defer(key, note):
            self._dropped(method)

    def _coalesced(self) -> None:
        self.stats.notifications_coalesced += 1
        self._log_flood.note(self.server, "coalesced")

    def _dropped(self, method: str) -> None:
        self.stats.notifications_dropped += 1
        self._log_flood.note(self.server, method)

    def _unreadable(self, data: bytes, why: str) -> None:
        self.stats.unreadable += 1
        self._log_unreadable.note(self.server, f"{_preview(data)}: {why}")
        if b'"id"' in data[:HEAD_BYTES] or b'"id"' in data[-HEAD_BYTES:]:
            self._fail_by_edges(
                sniff_head(data[:HEAD_BYTES]),
                sniff_tail(data[-HEAD_BYTES:]),
                MESSAGE_UNREADABLE,
                f"unreadable answer from server {self.server!r} ({why})",
            )

    # -- faults the framing found ----------------------------------------------------------------------

    def oversized(self, notice: Oversized, *, handled: bool) -> bool:
        """A message over the cap, seen from its edges; returns whether its request got its answer.

        Call once as it crosses the cap (`notice.complete` False) and once at its end; pass the
        first call's return value as `handled` to the second.
        """
        cap = self.limits.max_message_bytes
        if not notice.complete:
            self.stats.oversized += 1
            self._log_unreadable.note(self.server, f"a message over {cap:,} bytes (discarded unread)")
        if handled:
            return True
        edges = sniff_head(notice.head)
        tail = sniff_tail(notice.tail) if notice.complete else (False, None)
        size = f"{notice.size:,} bytes" if notice.complete else f"more than {notice.size:,} bytes"
        why = f"message too large ({size} > {cap:,} byte cap) from server {self.server!r}; it was discarded unread"
        if edges.is_request_or_notification:
            request_id = edges.id if edges.has_id else (tail[1] if tail[0] else None)
            if request_id is not None and "method" in edges.keys:
                self._refuse(request_id, "a request", code=MESSAGE_TOO_LARGE, why=why)
                return True
            return notice.complete
        if self._fail_by_edges(edges, tail, MESSAGE_TOO_LARGE, why):
            return True
        if not notice.complete and edges.is_response and len(self._in_flight) == 1:
            (only,) = self._in_flight
            self._fail(only, MESSAGE_TOO_LARGE, why)  # a response, and only one request could it answer
            return True
        return False

    def _fail_by_edges(self, edges: Edges, tail: tuple[bool, RequestId | None], code: int, why: str) -> bool:
        if not edges.is_response:
            return False
        request_id = edges.id if edges.has_id else (tail[1] if tail[0] else None)
        if request_id is None or request_id not in self._in_flight:
            return False
        self._fail(request_id, code, why)
        return True

    def _fail(self, request_id: RequestId, code: int, why: str) -> None:
        if self._in_flight.pop(request_id, None) is not None:
            self.stream.forget((_PROGRESS, request_id))
            self._push_error(request_id, code, why)

    def _push_error(self, request_id: RequestId, code: int, why: str) -> None:
        error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=why))
        self.stream.push_answer(SessionMessage(error))

    def fail_in_flight(self, code: int, why: str) -> None:
        """Answer every request in flight with an error (the stream is about to end)."""
        for request_id in list(self._in_flight):
            self._fail(request_id, code, why)

    def end(self, reason: CloseReason, detail: str) -> None:
        """No more input; the first reason given is the one recorded."""
        if self.stats.closed is None:
            self.stats.closed = reason
            self.stats.closed_detail = detail
        self.stream.end()


def _coalesce_key(method: str, params: dict[str, Any] | None) -> CoalesceKey | None:
    """One pending per kind and listen stream; for resources/updated, one per URI as well."""
    meta = params.get("_meta") if params is not None else None
    stream = meta.get(SUBSCRIPTION_ID_META_KEY) if isinstance(meta, dict) else None
    stream = stream if isinstance(stream, int | str) and not isinstance(stream, bool) else None
    if method != _RESOURCE_UPDATED:
        return (method, stream)
    uri = params.get("uri") if params is not None else None
    return (method, stream, uri) if isinstance(uri, str) else None


def _unkeyed_notification(data: bytes) -> bool:
    """Whether the first `"method"` in `data` names a notification we never coalesce (a cheap look, no decode)."""
    match = _METHOD.search(data)
    return match is not None and match.group(1) not in _KEYED_METHODS


def _request_id(raw: msgspec.Raw) -> RequestId | None:
    value = _safe_decode(raw)
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    return value


def _safe_decode(raw: msgspec.Raw) -> Any:
    try:
        return decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def _params(raw: msgspec.Raw | None) -> dict[str, Any] | None:
    value = _safe_decode(raw) if raw is not None else None
    return value if isinstance(value, dict) else None


def _problem(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deep to parse"
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:200] if text else type(exc).__name__


def _preview(data: bytes) -> str:
    return repr(data[:80]) + ("..." if len(data) > 80 else "")
