"""The route: the innermost handler, from a resolved request to its owner's connection and back.

It turns the request into the connection's `Operation`, sends it, and normalises the answer into
the result type of its kind. Every station error on the way becomes a result with that error's
own `outcome`; nothing here, or above, reads an error's message to learn what happened.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcpstation.catalog import AnyResult, CompletionResult, PromptResult, ResourceResult, SubscriptionResult, ToolResult
from mcpstation.config.models import InProcessServerSpec
from mcpstation.connection import ServerConnection
from mcpstation.connection.operations import (
    CallTool,
    Complete,
    GetPrompt,
    Operation,
    ReadResource,
    Subscribe,
    Unsubscribe,
)
from mcpstation.errors import CallError, RemoteError, ServerError
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.request import Request, RequestKind

CALLER_META_KEY = "io.mcpstation/caller"
"""`_meta` key carrying the caller to the station's own in-process servers (never to others)."""

OUTCOME_META_KEY = "io.mcpstation/outcome"
"""`_meta` key on a result of the station's own servers naming its `Outcome` (ignored from any other)."""


class Router:
    """Sends requests to the connection that owns them."""

    def __init__(
        self,
        connection_of: Callable[[str], ServerConnection | None],
        offline_reason: Callable[[str], str | None],
    ) -> None:
        self._connection_of = connection_of
        self._offline_reason = offline_reason

    async def __call__(self, request: Request) -> AnyResult:
        connection = self._connection_of(request.server)
        if connection is None or not connection.is_ready:
            reason = self._offline_reason(request.server) or f"server {request.server!r} is not running"
            return request.fail(Outcome.UNAVAILABLE, reason)
        started = time.perf_counter()
        try:
            raw = await connection.request(
                _operation(request),
                timeout_s=request.timeout_s,
                progress=request.progress,
                meta=_meta(request, connection),
            )
        except (CallError, ServerError) as exc:
            cause = exc.__cause__
            return request.fail(
                exc.outcome,
                str(exc),
                duration_s=time.perf_counter() - started,
                upstream_error=cause.error if isinstance(exc, RemoteError) and isinstance(cause, MCPError) else None,
            )
        result = _normalised(request, raw, time.perf_counter() - started)
        if isinstance(connection.spec, InProcessServerSpec) and isinstance(result, ToolResult):
            result = _own_outcome(result)
        return result


def _operation(request: Request) -> Operation[Any]:
    kind = request.kind
    if kind is RequestKind.CALL_TOOL:
        return CallTool(request.target, request.arguments)
    if kind is RequestKind.GET_PROMPT:
        return GetPrompt(request.target, {key: str(value) for key, value in request.arguments.items()})
    if kind is RequestKind.READ_RESOURCE:
        return ReadResource(request.target)
    if kind is RequestKind.SUBSCRIBE:
        return Subscribe(request.target)
    if kind is RequestKind.UNSUBSCRIBE:
        return Unsubscribe(request.target)
    assert request.ref is not None, "a completion request carries its reference"
    return Complete(request.ref, {k: str(v) for k, v in request.arguments.items()}, request.context_arguments)


def _meta(request: Request, connection: ServerConnection) -> types.RequestParamsMeta | None:
    meta: dict[str, Any] = dict(request.meta) if request.meta else {}
    if isinstance(connection.spec, InProcessServerSpec):
        caller = request.caller
        meta[CALLER_META_KEY] = {"identity": caller.identity, "role": str(caller.role), "face": str(caller.face)}
    return meta or None  # type: ignore[return-value]


def _own_outcome(result: ToolResult) -> ToolResult:
    """The station's own servers say a refusal in `_meta`, typed, so it is audited as one."""
    meta = result.raw.meta if result.raw is not None else None
    named = (meta or {}).get(OUTCOME_META_KEY)
    if isinstance(named, str) and named in Outcome.__members__.values() and not result.ok:
        return replace(result, outcome=Outcome(named))
    return result


def _normalised(request: Request, raw: Any, duration_s: float) -> AnyResult:
    kind = request.kind
    if kind is RequestKind.CALL_TOOL:
        return ToolResult.from_sdk(
            raw, name=request.name, server=request.server, tool=request.target, duration_s=duration_s
        )
    if kind is RequestKind.GET_PROMPT:
        return PromptResult.from_sdk(
            raw, name=request.name, server=request.server, prompt=request.target, duration_s=duration_s
        )
    if kind is RequestKind.READ_RESOURCE:
        return ResourceResult.from_sdk(raw, uri=request.target, server=request.server, duration_s=duration_s)
    if kind is RequestKind.COMPLETE:
        return CompletionResult.from_sdk(raw, name=request.name, server=request.server, duration_s=duration_s)
    return SubscriptionResult(Outcome.OK, request.target, request.server, duration_s=duration_s)
