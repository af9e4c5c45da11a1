"""A server that owns more URIs than it lists: it lists `listed` and the template `template`, reads
any URI it is asked for (answering with its own name, so a test sees who answered), and, with
`subscribe`, takes subscriptions and can send an update notification for any URI."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession


class UriServer:
    def __init__(
        self, name: str, *, listed: tuple[str, ...] = (), template: str | None = None, subscribe: bool = False
    ) -> None:
        self.name = name
        self.reads: list[str] = []
        self.subscriptions: list[str] = []
        self.unsubscribed = anyio.Event()  # set at each unsubscribe (then replaced)
        self.session: ServerSession | None = None
        self.server = MCPServer(name)
        for number, uri in enumerate(listed):
            self.server.resource(uri, name=f"listed{number}")(lambda: "listed")
        if template is not None:

            def item(id: str) -> str:
                return id

            self.server.resource(template)(item)
        lowlevel = self.server._lowlevel_server
        lowlevel.add_request_handler("resources/read", types.ReadResourceRequestParams, self._read)
        if subscribe:
            lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
            lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)

    async def updated(self, uri: str) -> None:
        """Send `notifications/resources/updated` for `uri` on the session that last subscribed."""
        assert self.session is not None, "no session has subscribed yet"
        await self.session.send_resource_updated(uri)

    async def _read(self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams) -> Any:
        self.reads.append(str(params.uri))
        contents = types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=f"{self.name} read it")
        return types.ReadResourceResult(contents=[contents])

    async def _subscribe(self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams) -> Any:
        self.session = ctx.session
        self.subscriptions.append(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams) -> Any:
        self.subscriptions.remove(str(params.uri))
        self.unsubscribed.set()
        self.unsubscribed = anyio.Event()
        return types.EmptyResult()
