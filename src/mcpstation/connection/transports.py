"""Transport factories keyed by the config's `transport`: each yields the SDK's two streams.

stdio and WebSocket are ours (`_stdio`, `_websocket`): the SDK's stdio transport can be neither
bounded nor made cheap, and the SDK has no WebSocket client since 2.0. Both sort what a server
sends through `_inbound` (answers first, floods bounded, listings screened) and count what they
drop in `TransportContext.stats`. Streamable HTTP, SSE and in-process are the SDK's own.

A streamable HTTP server that refuses our first POST with a 4xx (other than a sign-in question)
may speak only the older HTTP+SSE transport: `HttpNotes` records that refusal, which the SDK does
not report, and `open_sse_fallback` opens the same URL over SSE, as the spec's backwards
compatibility section and VS Code do.
"""

from __future__ import annotations

import difflib
import os
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, replace
from typing import IO, Any

import httpx2
from mcp import StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT, create_mcp_http_client

from mcpstation.config.models import (
    AnyServerSpec,
    InProcessServerSpec,
    SseServerSpec,
    StdioServerSpec,
    StreamableHttpServerSpec,
    WebSocketServerSpec,
)
from mcpstation.connection._inprocess import inprocess_transport
from mcpstation.connection._launch import Launch, child_environment, own_scripts_folder
from mcpstation.connection._stdio import stdio_transport
from mcpstation.connection._tool_budget import ToolBudget
from mcpstation.connection.limits import InboundLimits
from mcpstation.connection.stats import TransportStats
from mcpstation.errors import ServerStartError

Streams = tuple[Any, Any]
NEAREST_CUTOFF = 0.75  # how close a name must be to a missing command to be offered as "nearest"
RequestGuard = Callable[[httpx2.Request], Awaitable[None]]
"""Judges every request an HTTP transport's client is about to send (OAuth flow's included); raises to refuse."""


NOT_A_TRANSPORT_QUESTION = frozenset({401, 403, 407, 408, 429})  # 4xx that say sign in, wait or slow down


@dataclass
class HttpNotes:
    """What a streamable HTTP transport saw that the SDK does not report."""

    refused_before_session: int | None = None  # the 4xx status of a POST sent before any session id

    @property
    def suggests_sse(self) -> bool:
        """Whether the server refused our first requests in a way an HTTP+SSE-only server does (404, 405, ...)."""
        status = self.refused_before_session
        return status is not None and status not in NOT_A_TRANSPORT_QUESTION

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        if request.method == "POST" and "mcp-session-id" not in request.headers and 400 <= response.status_code < 500:
            self.refused_before_session = self.refused_before_session or response.status_code


@dataclass(frozen=True, slots=True)
class TransportContext:
    """What a factory may need beyond the spec."""

    errlog: IO[str] | None = None
    auth: httpx2.Auth | None = None  # an OAuth provider for HTTP transports
    # Runs before each request of the HTTP client, the OAuth flow's own ones (discovery,
    # registration, token) included: httpx2 fires request hooks for every request an auth flow yields.
    request_guard: RequestGuard | None = None
    # Our stdio transport calls this with the server's pid as soon as the process runs.
    on_process: Callable[[int], None] | None = None
    # The server's process when it was started before its session (`early.EarlyStarts`): adopted, not spawned.
    process: subprocess.Popen[bytes] | None = None
    # Our transports (stdio, WebSocket) count here what they skip, drop, refuse or cut, and why they ended.
    stats: TransportStats | None = None
    # Flood budgets for our transports; the spec's size fields override the size caps. None: defaults.
    limits: InboundLimits | None = None
    # Streamable HTTP records here how the server answered before a session existed.
    http_notes: HttpNotes | None = None


def _event_hooks(context: TransportContext) -> dict[str, list[Any]]:
    hooks: dict[str, list[Any]] = {}
    if context.request_guard is not None:
        hooks["request"] = [context.request_guard]
    if context.http_notes is not None:
        hooks["response"] = [context.http_notes.on_response]
    return hooks


TransportFactory = Callable[[Any, TransportContext], AbstractAsyncContextManager[Streams]]


def command_not_found(spec: StdioServerSpec) -> ServerStartError:
    """The error for a command `resolve_command` did not find: where it looked, and the nearest name there."""
    if os.sep in spec.command:
        full = os.path.join(spec.cwd or os.getcwd(), spec.command)  # an absolute command stays itself
        where = [os.path.dirname(full)]
        looked = f"looked for {os.path.normpath(full)}"
    else:
        path = child_environment(spec).get("PATH") or ""
        where = [*(folder for folder in path.split(os.pathsep) if folder), own_scripts_folder()]
        looked = f"looked on PATH ({path or 'empty'}) and in {own_scripts_folder()}"
    nearest = _nearest_executable(os.path.basename(spec.command), where)
    hint = f"; nearest: {nearest}" if nearest else ""
    return ServerStartError(f"command not found: {spec.command} ({looked}{hint})", server=spec.name)


def _nearest_executable(name: str, folders: Sequence[str]) -> str | None:
    candidates: dict[str, str] = {}
    for folder in dict.fromkeys(folders):
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            candidates.setdefault(entry, os.path.join(folder, entry))
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=NEAREST_CUTOFF)
    return candidates[close[0]] if close else None


def inbound_limits(spec: StdioServerSpec | WebSocketServerSpec, base: InboundLimits | None = None) -> InboundLimits:
    """`base` (or the defaults) with the spec's own size caps."""
    base = base or InboundLimits()
    tools = ToolBudget(
        max_bytes=spec.max_tool_bytes or base.tools.max_bytes,
        max_depth=spec.max_tool_depth or base.tools.max_depth,
        max_tools=base.tools.max_tools,
    )
    return replace(base, max_message_bytes=spec.max_message_bytes, tools=tools)


def _stdio(spec: StdioServerSpec, context: TransportContext) -> AbstractAsyncContextManager[Streams]:
    launch = Launch.of(spec) or Launch(spec.command, tuple(spec.args), child_environment(spec), spec.cwd)
    params = StdioServerParameters(command=launch.command, args=list(launch.args), env=dict(launch.env), cwd=launch.cwd)
    return stdio_transport(
        params,
        server=spec.name,
        limits=inbound_limits(spec, context.limits),
        errlog=context.errlog,
        on_process=context.on_process,
        stats=context.stats,
        process=context.process,
    )


def remote_headers(spec: StreamableHttpServerSpec | SseServerSpec | WebSocketServerSpec) -> dict[str, str]:
    """Configured headers with secrets revealed, plus `Authorization` from a bearer token."""
    headers = {key: value.get_secret_value() for key, value in spec.headers.items()}
    token = getattr(spec, "bearer_token", None)
    if token is not None:
        headers["Authorization"] = f"Bearer {token.get_secret_value()}"
    return headers


@asynccontextmanager
async def _streamable_http(spec: StreamableHttpServerSpec, context: TransportContext) -> AsyncIterator[Streams]:
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=spec.http_timeout_s or MCP_DEFAULT_SSE_READ_TIMEOUT)
    async with httpx2.AsyncClient(
        headers=remote_headers(spec), timeout=timeout, auth=context.auth, event_hooks=_event_hooks(context)
    ) as http:
        async with streamable_http_client(spec.url, http_client=http) as streams:
            yield streams


def _sse(
    spec: SseServerSpec | StreamableHttpServerSpec, context: TransportContext
) -> AbstractAsyncContextManager[Streams]:
    def client_factory(
        headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None, auth: httpx2.Auth | None = None
    ) -> httpx2.AsyncClient:
        client = create_mcp_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks = _event_hooks(context)
        return client

    return sse_client(
        spec.url,
        headers=remote_headers(spec),
        sse_read_timeout=spec.http_timeout_s or MCP_DEFAULT_SSE_READ_TIMEOUT,
        auth=context.auth,
        httpx_client_factory=client_factory,
    )


def _websocket(spec: WebSocketServerSpec, context: TransportContext) -> AbstractAsyncContextManager[Streams]:
    from mcpstation.connection._websocket import websocket_transport  # `websockets` loads for such a server only

    return websocket_transport(
        spec.url,
        remote_headers(spec),
        server=spec.name,
        limits=inbound_limits(spec, context.limits),
        stats=context.stats,
    )


def _inprocess(spec: InProcessServerSpec, context: TransportContext) -> AbstractAsyncContextManager[Streams]:
    return inprocess_transport(spec.server)


TRANSPORT_FACTORIES: dict[str, TransportFactory] = {
    "stdio": _stdio,
    "streamable_http": _streamable_http,
    "sse": _sse,
    "websocket": _websocket,
    "inprocess": _inprocess,
}


def open_transport(spec: AnyServerSpec, context: TransportContext) -> AbstractAsyncContextManager[Streams]:
    """The transport for `spec`, chosen by its `transport` key."""
    return TRANSPORT_FACTORIES[spec.transport](spec, context)


def open_sse_fallback(
    spec: StreamableHttpServerSpec, context: TransportContext
) -> AbstractAsyncContextManager[Streams]:
    """The same server over the older HTTP+SSE transport (same URL, headers, auth and guard)."""
    return _sse(spec, context)
