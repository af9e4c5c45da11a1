"""The requests a connection can send upstream, one small type each.

`ServerConnection.request(operation, ...)` is the one way in: it checks the session, counts the
request as activity and turns SDK exceptions into station errors; each operation only knows how
to put itself on the wire through the SDK `Client`, within `timeout_s`, and what a success
changes in the connection's resource subscriptions (only `Subscribe` and `Unsubscribe` change
anything).
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class Operation(Protocol[T_co]):
    """One upstream request: what it is called in messages, and how to send it."""

    @property
    def target(self) -> str:
        """The tool, prompt or URI it is about, for messages."""
        ...

    @property
    def repeatable(self) -> bool:
        """Whether sending it twice does no harm (a read); a tool call may act, so it is not."""
        ...

    def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> Awaitable[T_co]:
        """Send it and return the SDK's result; timeouts surface as `TimeoutError` or `MCPError`."""
        ...

    def applied(self, subscriptions: set[str]) -> None:
        """Record in the connection's `subscriptions` what the request changed, once it succeeded."""
        ...


async def _within(timeout_s: float, pending: Awaitable[T]) -> T:
    """`pending`'s result, or `TimeoutError` after `timeout_s` (for SDK calls without a timeout of their own)."""
    with anyio.fail_after(timeout_s):
        return await pending


class _Plain:
    """An operation that changes no subscription and may be sent again."""

    __slots__ = ()
    repeatable = True

    def applied(self, subscriptions: set[str]) -> None:
        return None


@dataclass(frozen=True, slots=True)
class CallTool(_Plain):
    tool: str
    arguments: Mapping[str, Any]
    repeatable = False  # a call may act on the world: sent once, unless it never reached the server

    @property
    def target(self) -> str:
        return self.tool

    def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> Awaitable[types.CallToolResult]:
        # The SDK's own per-request timeout: it cancels the request on the server, and costs less
        # than a cancel scope of our own around the call. The SDK's coroutine is handed back rather
        # than awaited here: no frame of ours on the call's await chain.
        return client.call_tool(
            self.tool, dict(self.arguments), read_timeout_seconds=timeout_s, progress_callback=progress, meta=meta
        )


@dataclass(frozen=True, slots=True)
class GetPrompt(_Plain):
    prompt: str
    arguments: Mapping[str, str]

    @property
    def target(self) -> str:
        return self.prompt

    async def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> types.GetPromptResult:
        return await _within(timeout_s, client.get_prompt(self.prompt, dict(self.arguments) or None, meta=meta))


@dataclass(frozen=True, slots=True)
class ReadResource(_Plain):
    uri: str

    @property
    def target(self) -> str:
        return self.uri

    async def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> types.ReadResourceResult:
        return await _within(timeout_s, client.read_resource(self.uri, meta=meta))


@dataclass(frozen=True, slots=True)
class Complete(_Plain):
    ref: types.PromptReference | types.ResourceTemplateReference
    argument: Mapping[str, str]
    context_arguments: Mapping[str, str] | None = None

    @property
    def target(self) -> str:
        return "completion/complete"

    async def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> types.CompleteResult:
        context = dict(self.context_arguments) if self.context_arguments is not None else None
        return await _within(timeout_s, client.complete(self.ref, dict(self.argument), context))


class SubscriptionsNeedHandshakeEra(Exception):
    """A (un)subscribe on a 2026-07-28 session, which listens instead; `translate_call_errors` names the server."""


def _handshake_era_only(client: Client) -> None:
    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        raise SubscriptionsNeedHandshakeEra


@dataclass(frozen=True, slots=True)
class Subscribe:
    """`resources/subscribe` (handshake era only: a 2026-07-28 session listens instead)."""

    uri: str
    repeatable = True

    @property
    def target(self) -> str:
        return self.uri

    async def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> types.EmptyResult:
        _handshake_era_only(client)
        # Deprecated as of 2026-07-28, and still how handshake-era servers are asked; the SDK warns
        # when the call is made, so the filter never spans an await.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            pending = client.subscribe_resource(self.uri, meta=meta)
        return await _within(timeout_s, pending)

    def applied(self, subscriptions: set[str]) -> None:
        subscriptions.add(self.uri)


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    uri: str
    repeatable = True

    @property
    def target(self) -> str:
        return self.uri

    async def send(
        self, client: Client, *, timeout_s: float, progress: ProgressFnT | None, meta: types.RequestParamsMeta | None
    ) -> types.EmptyResult:
        _handshake_era_only(client)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            pending = client.unsubscribe_resource(self.uri, meta=meta)
        return await _within(timeout_s, pending)

    def applied(self, subscriptions: set[str]) -> None:
        subscriptions.discard(self.uri)
