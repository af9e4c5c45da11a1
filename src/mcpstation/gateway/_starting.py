"""`StartingGateway`: a stdio gateway that answers its client before its station is up.

An editor starts `gateway --stdio` for every window and lists at once. Loading the config, the
store and the station costs several times what the SDK costs to answer, so the gateway serves
first and opens its station after:

- `initialize` is the SDK's, from the gateway's own name and capabilities (nothing of the
  station's is in it);
- the four lists come from the lists this gateway's input was last served (`_snapshot`), while
  the station starts;
- every other request waits for the station, then goes through its pipeline.

The station is opened once a request needs it, or once the client has been quiet for `QUIET_S`
after the lists it asked for; with no usable snapshot, at once. Once it is up, a list that differs
from what was answered early is announced as changed, and the snapshot is kept up to date with
the lists as they change.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio import TASK_STATUS_IGNORED
from anyio.abc import TaskStatus
from mcp.server import Server

from mcpstation.errors import StationError
from mcpstation.gateway._serving import Ctx, gateway_server
from mcpstation.gateway._sessions import DownstreamSessions
from mcpstation.gateway._snapshot import ServedLists, write_snapshot
from mcpstation.gateway._stdio_wire import stdio_streams

if TYPE_CHECKING:
    from mcpstation.gateway.server import Gateway, GatewayInstrument

logger = logging.getLogger(__name__)

QUIET_S = 0.05  # the client's handshake and first lists come back to back; then the station opens
SAVE_AFTER_S = 0.5  # catalog changes come in bursts while servers start: one write per burst
_ANNOUNCED_AS = {"tools": "tools", "prompts": "prompts", "resources": "resources", "templates": "resources"}


@dataclass(frozen=True)
class OpenedGateway:
    """A running station's gateway handlers, and the telemetry hook for its server, if any."""

    gateway: Gateway
    instrument: GatewayInstrument | None


GatewayOpener = Callable[[DownstreamSessions], AbstractAsyncContextManager[OpenedGateway]]
"""Opens the station and its gateway, recording downstream sessions in the sessions given."""


@dataclass(frozen=True)
class ListSnapshot:
    """Where the lists are kept (the data directory), for which input, and what was kept."""

    directory: Path
    key: str
    lists: ServedLists | None


class StartingGateway:
    """The gateway's handlers while its station starts, and the station's once it is up.

    `open_gateway` opens the station (config, store, servers) and its `Gateway`; `snapshot` is
    what the lists were at the last gateway on this input. A config with telemetry on is never
    answered early: no snapshot is kept for it, since early answers would have no spans.
    """

    def __init__(self, open_gateway: GatewayOpener, snapshot: ListSnapshot | None, *, quiet_s: float = QUIET_S) -> None:
        self.sessions = DownstreamSessions()
        self._open = open_gateway
        self._snapshot = snapshot
        self._answered: set[str] = set()
        self._quiet_s = quiet_s
        self._last_answer = 0.0
        self._gateway: Gateway | None = None
        self._ready = anyio.Event()
        self._needed = anyio.Event()
        self._closing = anyio.Event()
        self.failure: StationError | None = None

    @property
    def _early(self) -> ServedLists | None:
        """The lists kept for this input, answered until the station is up."""
        return self._snapshot.lists if self._snapshot is not None else None

    async def serve_stdio(self) -> None:
        """Serve on this process's stdin/stdout until stdin closes."""
        server = gateway_server(self)
        async with stdio_streams() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        if self.failure is not None:  # raised here, as itself, not inside the streams' task group
            raise self.failure

    # -- the station's life ------------------------------------------------------------------------

    @asynccontextmanager
    async def lifespan(self, server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        """The server's lifespan: the station opens beside the serving, and closes after it.

        With no lists to answer early, the station is up before the first message is read, as
        in a gateway that keeps no lists (telemetry sees the handshake). A station that fails to
        open (a config error, a store it cannot reach) stops the serving; its error is kept in
        `failure`.
        """
        self._last_answer = anyio.current_time()
        serving = anyio.CancelScope()
        async with anyio.create_task_group() as tasks:
            if self._early is None:
                await tasks.start(self._run, server, serving)
            else:
                tasks.start_soon(self._run, server, serving)
            try:
                with serving:
                    yield {}
            finally:
                self._closing.set()
                self._needed.set()

    async def _run(
        self, server: Server[Any], serving: anyio.CancelScope, *, task_status: TaskStatus[None] = TASK_STATUS_IGNORED
    ) -> None:
        """Open the station once it is needed, serve through it until the serving ends, close it.

        `task_status` is told once the station is up, or has failed to open.
        """
        await self._until_needed()
        if self._closing.is_set():
            return
        told = False
        try:
            async with self._open(self.sessions) as opened:
                gateway = opened.gateway
                if opened.instrument is not None:
                    opened.instrument(server, gateway.station)
                async with gateway.lifespan(server), anyio.create_task_group() as keeping:
                    self._gateway = gateway
                    self._ready.set()
                    task_status.started()
                    told = True
                    await self._correct(gateway)
                    if opened.instrument is None:
                        keeping.start_soon(self._keep_lists, gateway)
                    await self._closing.wait()
                    keeping.cancel_scope.cancel()
        except StationError as exc:  # kept, to be raised as itself where the serving ends
            self.failure = exc
            serving.cancel()
            if not told:
                task_status.started()

    async def _until_needed(self) -> None:
        """Until a request needs the station, or the client has been quiet after its lists."""
        if self._early is None:
            return
        while not self._needed.is_set():
            left = self._last_answer + self._quiet_s - anyio.current_time()
            if left <= 0:
                return
            with anyio.move_on_after(left):
                await self._needed.wait()

    async def _correct(self, gateway: Gateway) -> None:
        """Announce each list answered early that the station now serves otherwise."""
        if self._early is None or gateway.local_caller is None or not self._answered:
            return
        now = gateway.served_lists(gateway.local_caller)
        changed = {_ANNOUNCED_AS[kind] for kind in self._answered if getattr(now, kind) != getattr(self._early, kind)}
        for kind in sorted(changed):
            await gateway.announce(kind)

    async def _keep_lists(self, gateway: Gateway) -> None:
        """Keep the snapshot equal to the lists served, now and after each burst of catalog changes."""
        if self._snapshot is None or gateway.local_caller is None:
            return
        caller, kept = gateway.local_caller, self._early
        with gateway.station.events.subscribe() as events:
            try:
                while True:
                    lists = gateway.served_lists(caller)
                    if lists != kept:
                        write_snapshot(self._snapshot.directory, self._snapshot.key, lists)
                        kept = lists
                    while (await events.receive()).kind != "catalog":
                        pass
                    with anyio.move_on_after(SAVE_AFTER_S):  # the rest of the burst
                        while True:
                            await events.receive()
            finally:
                lists = gateway.served_lists(caller)
                if lists != kept:  # a change inside the last burst
                    write_snapshot(self._snapshot.directory, self._snapshot.key, lists)

    async def _started(self) -> Gateway:
        """The station's handlers, once it is up (at once, with no checkpoint, when it is)."""
        if self._gateway is None:
            self._needed.set()
            await self._ready.wait()
            assert self._gateway is not None
        return self._gateway

    def _answer_early(self, kind: str) -> ServedLists | None:
        """The snapshot, for a list asked for before the station is up (None: wait for it)."""
        if self._gateway is not None or self._early is None:
            return None
        self._answered.add(kind)
        self._last_answer = anyio.current_time()
        return self._early

    # -- the handlers (`_serving.GatewayHandlers`) ---------------------------------------------------

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        return self._gateway.input_schema(name) if self._gateway is not None else None

    async def list_tools(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        early = self._answer_early("tools")
        return early.tools if early is not None else await (await self._started()).list_tools(ctx, params)

    async def list_prompts(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        early = self._answer_early("prompts")
        return early.prompts if early is not None else await (await self._started()).list_prompts(ctx, params)

    async def list_resources(self, ctx: Ctx, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        early = self._answer_early("resources")
        return early.resources if early is not None else await (await self._started()).list_resources(ctx, params)

    async def list_templates(
        self, ctx: Ctx, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        early = self._answer_early("templates")
        return early.templates if early is not None else await (await self._started()).list_templates(ctx, params)

    async def call_tool(self, ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        return await (await self._started()).call_tool(ctx, params)

    async def get_prompt(self, ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return await (await self._started()).get_prompt(ctx, params)

    async def read_resource(self, ctx: Ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await (await self._started()).read_resource(ctx, params)

    async def complete(self, ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
        return await (await self._started()).complete(ctx, params)

    async def subscribe(self, ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
        return await (await self._started()).subscribe(ctx, params)

    async def unsubscribe(self, ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        return await (await self._started()).unsubscribe(ctx, params)

    async def listen(self, ctx: Ctx, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        return await (await self._started()).listen(ctx, params)

    async def set_level(self, ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
        self.sessions.set_level(ctx.session, params.level)  # the relay's sessions: the same object
        return types.EmptyResult()

    async def initialized(self, ctx: Ctx, params: types.NotificationParams) -> None:
        self.sessions.add(ctx.session)
