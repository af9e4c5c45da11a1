"""What a server sends, sorted before the SDK session sees it: answers first, floods bounded.

Transport-agnostic: a transport hands `Inbound.feed` one complete message at a time (a line,
a frame), tells it about every message going out (`Inbound.outbound`), and gives the session
`Inbound.stream` (`_lanes.InboundStream`) as its read stream. The reader is never slowed down,
so an answer never waits behind a flood in the pipe; instead, once a message is read:

- Our requests go out under ids the server cannot guess: each gets a random wire id (per
  connection, from the operating system's random source, within JavaScript's safe integers),
  mapped back to the session's own id on the way in; progress tokens, cancellations and listen
  stream stamps that name our requests are mapped the same way.
- A response is delivered only if its id is one of our requests in flight when it arrives,
  matched exactly (`"7"` does not answer `7`); the first answer wins, duplicates, pre-emptive
  and unknown answers are dropped and counted. Since nobody can know a wire id before we send
  it, an answer whose id was not in flight when its bytes arrived never lands. A `tools/list`
  result is screened tool by tool (`_tool_budget`).
- Notifications draw on a per-server budget (a token bucket). Over it, the keyed ones are
  coalesced and held back until the budget refills: one pending `list_changed` per kind, the
  latest progress per request, one `resources/updated` per URI. The rest are dropped and counted.
  Within budget every progress report is delivered; progress for a request not in flight is
  dropped at once.
- Requests from the server draw on their own budget and a bound on how many may be open; beyond
  it the transport answers them itself with `SERVER_REQUEST_REFUSED`, through a bounded queue.
- Lines that are not JSON-RPC (banners, invalid UTF-8, blank lines) are skipped and counted,
  logged at most once per `LOG_EVERY_S`; they never reach the session and are never fatal.
"""

from __future__ import annotations

import collections
import logging
import math
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import mcp_types as types
import msgspec
import pydantic
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import SUBSCRIPTION_ID_META_KEY

from mcpstation.connection._bucket import CLOCK_EVERY, TokenBucket
from mcpstation.connection._framing import HEAD_BYTES, Edges, Oversized, sniff_head, sniff_tail
from mcpstation.connection._lanes import CoalesceKey, InboundStream, Note
from mcpstation.connection._tool_budget import screen_tools_page
from mcpstation.connection._wire import JSONRPC_2_0, decode, decode_members, encode_message
from mcpstation.connection.limits import MESSAGE_TOO_LARGE, MESSAGE_UNREADABLE, SERVER_REQUEST_REFUSED, InboundLimits
from mcpstation.connection.stats import MAX_REPORTED_DROPPED_TOOLS, CloseReason, TransportStats

logger = logging.getLogger(__name__)

MAX_REMEMBERED_CANCELLED = 256  # ids we cancelled, to tell a late answer from a forged one
WIRE_ID_FLOOR = 2**32  # our wire ids start above every id a sequential counter reaches...
WIRE_ID_CEILING = 2**53  # ...and stay below 2**53, which a JavaScript server still reads exactly
LOG_EVERY_S = 10.0  # at most one warning per kind of trouble per server in this time

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

__all__ = ["Inbound"]


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
        self._notification_budget = TokenBucket(limits.notifications_per_s, limits.notification_burst)
        self._request_budget = TokenBucket(limits.server_requests_per_s, limits.server_request_burst)
        self.stream = InboundStream(self._notification_budget, stats)
        self._in_flight: dict[RequestId, tuple[str, RequestId]] = {}  # wire id -> (method, the session's id)
        self._wire_ids: dict[RequestId, RequestId] = {}  # the session's id -> wire id, while in flight
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

    def outbound(self, message: types.JSONRPCMessage) -> types.JSONRPCMessage:
        """Note a message about to be written and return it as it goes on the wire (our requests
        and cancellations under wire ids); call it before the bytes go out."""
        if isinstance(message, types.JSONRPCRequest):
            return self._send_request(message)
        if isinstance(message, types.JSONRPCResponse):
            self._open_server_requests.discard(message.id)
        elif isinstance(message, types.JSONRPCError):
            if message.id is not None:
                self._open_server_requests.discard(message.id)
        elif message.method == _CANCELLED:
            return self._send_cancel(message)
        return message

    def _send_request(self, message: types.JSONRPCRequest) -> types.JSONRPCRequest:
        ours = message.id
        wire: RequestId = WIRE_ID_FLOOR + secrets.randbelow(WIRE_ID_CEILING - WIRE_ID_FLOOR)
        while wire in self._in_flight or wire in self._cancelled:
            wire = WIRE_ID_FLOOR + secrets.randbelow(WIRE_ID_CEILING - WIRE_ID_FLOOR)
        self._in_flight[wire] = (message.method, ours)
        self._wire_ids[ours] = wire
        update: dict[str, Any] = {"id": wire}
        params = message.params
        meta = params.get("_meta") if params is not None else None
        if isinstance(meta, dict) and meta.get("progressToken") == ours:  # the SDK's token is the request id
            update["params"] = {**params, "_meta": {**meta, "progressToken": wire}}  # type: ignore[dict-item]
        return message.model_copy(update=update)

    def _send_cancel(self, message: types.JSONRPCNotification) -> types.JSONRPCNotification:
        params = message.params or {}
        ours = params.get("requestId")
        if not isinstance(ours, int | str) or isinstance(ours, bool):
            return message
        self.stream.forget((_PROGRESS, ours))
        wire = self._wire_ids.pop(ours, None)
        if wire is None:
            return message  # not in flight (answered already): the server ignores it
        self._in_flight.pop(wire, None)
        self._remember_cancelled(wire)
        return message.model_copy(update={"params": {**params, "requestId": wire}})

    def _take(self, wire: RequestId) -> tuple[str, RequestId] | None:
        """The method and session id of our request `wire`, no longer in flight; None if it was not."""
        asked = self._in_flight.pop(wire, None)
        if asked is not None:
            self._wire_ids.pop(asked[1], None)
        return asked

    def _ours(self, wire: object) -> RequestId | None:
        """The session's id of our request in flight under `wire`, if there is one."""
        if not isinstance(wire, int | str) or isinstance(wire, bool):
            return None
        asked = self._in_flight.get(wire)
        return asked[1] if asked is not None else None

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
        wire = _request_id(id_raw)
        asked = self._take(wire) if wire is not None else None
        if asked is None:
            if wire is not None and wire in self._cancelled:
                self.stats.late_responses += 1
            else:
                self.stats.unexpected_responses += 1
                self._log_unexpected.note(self.server, f"id {_preview(bytes(id_raw))}")
            return
        method, request_id = asked
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
        ours = self._ours(coerce_request_id(token))  # the SDK correlates "7" with 7 for progress tokens
        if ours is None or params is None:
            self._dropped(_PROGRESS)
            return
        params["progressToken"] = ours
        note = Note(_PROGRESS, params)
        key: CoalesceKey = (_PROGRESS, ours)
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
        ours = self._ours(request_id)
        if request_id in self._open_server_requests:
            self._open_server_requests.discard(request_id)  # the session will not answer it now
            self.stream.push_notification(None, Note(_CANCELLED, params))
        elif ours is not None and params is not None:
            # One of ours, cancelled by the server: (2026-07-28) how a listen stream ends. Once per request.
            self.stream.push_with_answers((_CANCELLED, ours), Note(_CANCELLED, {**params, "requestId": ours}))
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
        listening = self._stamped_ours(params)
        note = Note(method, params)
        key = _coalesce_key(method, params) if keyed else None
        stream = self.stream
        if method == _LISTEN_ACK and listening and key is not None:
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

    def _stamped_ours(self, params: dict[str, Any] | None) -> bool:
        """Whether `params` carry the stamp of one of our listen streams; if so, it now names the session's id."""
        meta = params.get("_meta") if params is not None else None
        if not isinstance(meta, dict):
            return False
        ours = self._ours(meta.get(SUBSCRIPTION_ID_META_KEY))
        if ours is None:
            return False
        meta[SUBSCRIPTION_ID_META_KEY] = ours
        return True

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

    def _fail(self, wire: RequestId, code: int, why: str) -> None:
        asked = self._take(wire)
        if asked is not None:
            self.stream.forget((_PROGRESS, asked[1]))
            self._push_error(asked[1], code, why)

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
