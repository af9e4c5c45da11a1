"""The route: the innermost handler, from a resolved request to its owner's connection and back.

It turns the request into the connection's `Operation`, sends it, and normalises the answer into
the result type of its kind, as the kind's row in `kinds.py` says; a kind the station answers
itself goes to its handler (`answers`) instead. Every station error on the way becomes a result with that error's
own `outcome`; nothing here, or above, reads an error's message to learn what happened.

A server that sees each user (`auth.upstream`) is reached over the caller's own connection, which
`per_user` opens (or refuses, typed, when the caller cannot be seen); any other over its shared one.
A refusal's result keeps the error's `recorded` message for the audit: a user-oauth refusal's
authorization URL is the caller's alone.

A request for a lazy server between runs starts it: the request waits for it within its own
budget (its timeout, else the server's call timeout) and runs with what is left.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcpstation.catalog import AnyResult, ToolResult
from mcpstation.config.models import InProcessServerSpec
from mcpstation.connection import ServerConnection
from mcpstation.errors import CallError, RemoteError, ServerError, UpstreamIdentityError
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.kinds import KINDS, RequestKind, Upstream
from mcpstation.pipeline.request import Handler, Request, answered

CALLER_META_KEY = "io.mcpstation/caller"
"""`_meta` key carrying the caller to the station's own in-process servers (never to others)."""


class PerUser(Protocol):
    """Connections of the servers that see each user (`auth.upstream`), one per caller."""

    def reaches_each_user(self, server: str) -> bool:
        """Whether requests to `server` go over each caller's own connection."""
        ...

    async def connection_for(self, request: Request) -> ServerConnection | None:
        """The caller's own ready connection to the request's server; None: the server is reached
        over its shared connection. Raises a `CallError` or `ServerError` to refuse."""
        ...


AUTHORIZATION_URL = "authorization_url"
"""Key of a refused tool result's structured data: where the caller authorizes the server (user-oauth)."""
MIN_CALL_S = 1.0  # what a request that waited for its server to start keeps at least for the call itself

OUTCOME_META_KEY = "io.mcpstation/outcome"
"""`_meta` key on a result of the station's own servers naming its `Outcome` (ignored from any other)."""


class Router:
    """Sends requests to the connection that owns them."""

    def __init__(
        self,
        connection_of: Callable[[str], ServerConnection | None],
        offline_reason: Callable[[str], str | None],
        *,
        answers: Mapping[RequestKind, Handler] | None = None,
        per_user: PerUser | None = None,
    ) -> None:
        """`answers`: the handlers of the kinds the station answers itself (their row has no `operation`)."""
        self._connection_of = connection_of
        self._offline_reason = offline_reason
        self._answers = dict(answers or {})
        self._per_user = per_user

    def __call__(self, request: Request) -> Awaitable[AnyResult]:
        upstream = KINDS[request.kind].upstream
        if upstream is None:
            answer = self._answers.get(request.kind)
            if answer is None:
                return answered(
                    request.fail(Outcome.UNAVAILABLE, f"this station does not answer {request.kind} requests")
                )
            return answer(request)
        per_user = self._per_user
        if per_user is None or not per_user.reaches_each_user(request.server):
            # The common case at once: no frame of ours between the layers and the send.
            connection = self._connection_of(request.server)
            if connection is not None and connection.is_ready:
                return self._send(request, connection, upstream, request.timeout_s, time.perf_counter())
        return self._route(request, upstream)

    async def _route(self, request: Request, upstream: Upstream) -> AnyResult:
        started = time.perf_counter()
        if self._per_user is not None:
            try:
                own = await self._per_user.connection_for(request)
            except (CallError, ServerError) as exc:
                url = exc.authorization_url if isinstance(exc, UpstreamIdentityError) else None
                structured = {"success": False, "error": str(exc), AUTHORIZATION_URL: url} if url else None
                duration_s = time.perf_counter() - started
                failed = request.fail(exc.outcome, str(exc), duration_s=duration_s, structured=structured)
                return replace(failed, recorded_error=exc.recorded)  # the audit never keeps the caller's URL
            if own is not None:
                if not own.is_ready:
                    reason = f"server {request.server!r} is not connected for this caller ({own.error or own.state})"
                    return request.fail(Outcome.UNAVAILABLE, reason)
                return await self._send(request, own, upstream, request.timeout_s, started)
        connection = self._connection_of(request.server)
        timeout_s = request.timeout_s
        if connection is not None and connection.is_dormant:
            budget = timeout_s or connection.call_timeout_s
            if not await connection.start_for_request(budget):
                return self._not_started(request, connection, budget, time.perf_counter() - started)
            timeout_s = max(budget - (time.perf_counter() - started), MIN_CALL_S)
        if connection is None or not connection.is_ready:
            reason = self._offline_reason(request.server) or f"server {request.server!r} is not running"
            return request.fail(Outcome.UNAVAILABLE, reason)
        return await self._send(request, connection, upstream, timeout_s, started)

    async def _send(
        self,
        request: Request,
        connection: ServerConnection,
        upstream: Upstream,
        timeout_s: float | None,
        started: float,
    ) -> AnyResult:
        own = isinstance(connection.spec, InProcessServerSpec)  # the station's own servers are told the caller
        try:
            raw = await connection.request(
                upstream.operation(request),
                timeout_s=timeout_s,
                progress=request.progress,
                meta=_meta(request, own) if own or request.meta else None,
            )
        except (CallError, ServerError) as exc:
            cause = exc.__cause__
            return request.fail(
                exc.outcome,
                str(exc),
                duration_s=time.perf_counter() - started,
                upstream_error=cause.error if isinstance(exc, RemoteError) and isinstance(cause, MCPError) else None,
            )
        result = upstream.answer(request, raw, time.perf_counter() - started)
        if own and isinstance(result, ToolResult):
            result = _own_outcome(result)
        return result

    def _not_started(
        self, request: Request, connection: ServerConnection, budget_s: float, waited_s: float
    ) -> AnyResult:
        if connection.is_dormant:  # still starting when the request's budget ran out
            why = f"server {request.server!r} did not start within the request's {budget_s:g} s; it keeps starting"
            return request.fail(Outcome.TIMEOUT, why, duration_s=waited_s)
        reason = self._offline_reason(request.server) or f"server {request.server!r} did not start"
        return request.fail(Outcome.UNAVAILABLE, reason, duration_s=waited_s)


def _meta(request: Request, own: bool) -> types.RequestParamsMeta | None:
    meta: dict[str, Any] = dict(request.meta) if request.meta else {}
    if own:
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
