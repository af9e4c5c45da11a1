"""A small, well-behaved MCP server for tests and demos, over stdio, streamable HTTP, SSE or WebSocket.

    python -m mcpstation.testing.demo_server [--transport stdio|http|sse|ws] [--port N]
        [--host 127.0.0.1] [--startup-delay SECONDS] [--name NAME]

Once ready it prints exactly one line `listening on URL` to stderr (`listening on stdio` for
stdio), where URL is the full endpoint: `http://127.0.0.1:PORT/mcp`, `http://127.0.0.1:PORT/sse`
or `ws://127.0.0.1:PORT/ws`. `--port 0` (the default) picks a free port. It binds 127.0.0.1
only. SIGTERM or SIGINT shut the HTTP transports down gracefully with exit code 0.

Surface: tools `add multiply echo get_time random_number get_image slow fail structured get_audio
resource_link embedded_resource`; prompts `greet(name, style="friendly")` and `status`;
resources `demo://readme`, `demo://logo.png` and the template `demo://notes/{note_id}`.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import anyio
import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.mcpserver import Audio, Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from starlette.applications import Starlette

from mcpstation.testing._media import beep_wav, red_square_png
from mcpstation.testing._websocket_app import websocket_route

Transport = Literal["stdio", "http", "sse", "ws"]

LOOPBACK_HOST = "127.0.0.1"
HTTP_PATH = "/mcp"
SSE_PATH = "/sse"
SSE_MESSAGES_PATH = "/messages/"
WS_PATH = "/ws"
WS_MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # matches the station's WebSocket client
PROGRESS_STEPS = 4  # progress notifications sent by `slow`

README_TEXT = "mcpstation demo server.\nTools, prompts and resources for exercising an MCP host.\n"
NOTES = {"1": "first note", "2": "second note"}


class Reading(BaseModel):
    """The structured output of the `structured` tool."""

    sensor: str
    celsius: float
    ok: bool


def build_demo_server(name: str = "demo", echo_note: str = "", registering: bool = False) -> MCPServer:
    """The demo server's tools, prompts and resources, ready to run on any transport.

    `echo_note` is appended to `echo`'s description: a tool definition that changes between
    runs, for tool-pinning tests. `registering` adds `register_tool(name)`, which adds a tool at
    run time and announces it in both eras (list_changed push and a listen event).
    """
    mcp = MCPServer(name, version="0.1.0", instructions="mcpstation demo server", log_level="WARNING")

    if registering:

        @mcp.tool()
        async def register_tool(name: str, ctx: Context) -> str:
            """Add a tool called `name` that answers with its own name, and announce the change."""

            def answer() -> str:
                return name

            mcp.add_tool(answer, name=name, description=f"Answers {name!r}.")
            try:
                await ctx.session.send_tool_list_changed()  # handshake era: pushed
            except Exception:  # boundary: a 2026-07-28 session has no push channel
                pass
            await ctx.notify_tools_changed()  # 2026-07-28: a subscriptions/listen event
            return f"registered {name}"

    @mcp.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @mcp.tool()
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers."""
        return a * b

    @mcp.tool(description=f"Return the message unchanged.{' ' + echo_note if echo_note else ''}")
    def echo(message: str) -> str:
        return message

    @mcp.tool()
    def get_time() -> str:
        """The current time in UTC, ISO 8601."""
        return datetime.now(UTC).isoformat()

    @mcp.tool()
    def random_number(min: int = 0, max: int = 100) -> int:
        """A random integer in [min, max]."""
        if min > max:
            raise ToolError(f"min ({min}) must not exceed max ({max})")
        return random.randint(min, max)

    @mcp.tool()
    def get_image() -> Image:
        """An 8×8 red square as a PNG image."""
        return Image(data=red_square_png(), format="png")

    @mcp.tool()
    def get_audio() -> Audio:
        """A 50 ms beep as a WAV file."""
        return Audio(data=beep_wav(), format="wav")

    @mcp.tool()
    async def slow(seconds: float, ctx: Context) -> str:
        """Sleep `seconds`, reporting progress 4 times."""
        for step in range(1, PROGRESS_STEPS + 1):
            await anyio.sleep(seconds / PROGRESS_STEPS)
            await ctx.report_progress(step, PROGRESS_STEPS, f"step {step} of {PROGRESS_STEPS}")
        return f"slept {seconds} s"

    @mcp.tool()
    def fail(message: str) -> str:
        """Always fails: the result has isError set and carries `message`."""
        raise ToolError(message)

    @mcp.tool()
    def structured() -> Reading:
        """A structured result with an output schema."""
        return Reading(sensor="demo-1", celsius=21.5, ok=True)

    @mcp.tool()
    def resource_link() -> types.ResourceLink:
        """A link to the `demo://readme` resource."""
        return types.ResourceLink(name="readme", uri="demo://readme", mime_type="text/plain")

    @mcp.tool()
    def embedded_resource() -> types.EmbeddedResource:
        """A text resource embedded in the result."""
        contents = types.TextResourceContents(uri="demo://notes/1", mime_type="text/plain", text=NOTES["1"])
        return types.EmbeddedResource(type="resource", resource=contents)

    @mcp.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Ask for a greeting in a given style."""
        return f"Write a {style} greeting for {name}."

    @mcp.prompt()
    def status() -> str:
        """Ask for a status report (no arguments)."""
        return "Summarise the status of the demo server."

    @mcp.completion()  # type: ignore[untyped-decorator, no-untyped-call]  # the SDK's decorator has no annotations
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference, argument: types.CompletionArgument, context: Any
    ) -> types.Completion | None:
        """Complete `greet`'s `style` and the notes template's `note_id`."""
        options: Sequence[str]
        if isinstance(ref, types.PromptReference) and ref.name == "greet" and argument.name == "style":
            options = STYLES
        elif isinstance(ref, types.ResourceTemplateReference) and argument.name == "note_id":
            options = sorted(NOTES)
        else:
            return None
        return types.Completion(values=[o for o in options if o.startswith(argument.value)], has_more=False)

    @mcp.resource("demo://readme", mime_type="text/plain")
    def readme() -> str:
        """What this server is."""
        return README_TEXT

    @mcp.resource("demo://logo.png", mime_type="image/png")
    def logo() -> bytes:
        """The demo logo, an 8×8 red square."""
        return red_square_png()

    @mcp.resource("demo://notes/{note_id}", mime_type="text/plain")
    def note(note_id: str) -> str:
        """A note by id."""
        return NOTES.get(note_id, f"no note {note_id}")

    return mcp


STYLES = ("formal", "friendly", "funny", "poetic")


def _announce(where: str) -> None:
    print(f"listening on {where}", file=sys.stderr, flush=True)


class _AnnouncingServer(uvicorn.Server):
    """Uvicorn that prints the bound endpoint once it accepts connections."""

    def __init__(self, config: uvicorn.Config, *, scheme: str, path: str) -> None:
        super().__init__(config)
        self._scheme = scheme
        self._path = path

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            _announce(f"{self._scheme}://{host}:{port}{self._path}")


def _lowlevel(mcp: MCPServer) -> Server[Any]:
    # MCPServer keeps its low-level Server private; the WebSocket bridge needs `run()` the way the
    # SDK's own stdio and SSE runners call it.
    return mcp._lowlevel_server


def _web_app(mcp: MCPServer, transport: Transport) -> tuple[Starlette, str, str]:
    if transport == "http":
        return mcp.streamable_http_app(streamable_http_path=HTTP_PATH, host=LOOPBACK_HOST), "http", HTTP_PATH
    if transport == "sse":
        app = mcp.sse_app(sse_path=SSE_PATH, message_path=SSE_MESSAGES_PATH, host=LOOPBACK_HOST)
        return app, "http", SSE_PATH
    return Starlette(routes=[websocket_route(WS_PATH, _lowlevel(mcp))]), "ws", WS_PATH


def serve(
    transport: Transport = "stdio",
    *,
    port: int = 0,
    startup_delay_s: float = 0.0,
    name: str = "demo",
    echo_note: str = "",
    registering: bool = False,
) -> None:
    """Run the demo server until stdin closes (stdio) or SIGTERM/SIGINT (HTTP transports)."""
    mcp = build_demo_server(name, echo_note, registering)
    time.sleep(startup_delay_s)  # simulates a slow start (imports, warm-up) before anything is served
    if transport == "stdio":
        _announce("stdio")
        mcp.run("stdio")
        return
    app, scheme, path = _web_app(mcp, transport)
    config = uvicorn.Config(
        app,
        host=LOOPBACK_HOST,
        port=port,
        log_level="warning",
        ws="websockets-sansio",
        ws_max_size=WS_MAX_MESSAGE_BYTES,
        lifespan="on",
    )
    # Uvicorn shuts down gracefully on SIGTERM/SIGINT, restores the previous handlers and then
    # re-raises the signal; a no-op previous handler turns that re-raise into a plain exit 0.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)
    _AnnouncingServer(config, scheme=scheme, path=path).run()


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m mcpstation.testing.demo_server",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--transport", choices=["stdio", "http", "sse", "ws"], default="stdio")
    parser.add_argument("--port", type=int, default=0, help="TCP port; 0 picks a free one (default)")
    parser.add_argument("--host", default=LOOPBACK_HOST, help="must be 127.0.0.1")
    parser.add_argument("--startup-delay", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--name", default="demo", help="server name reported to clients")
    parser.add_argument("--echo-note", default="", help="text appended to the echo tool's description")
    parser.add_argument("--registering", action="store_true", help="add the register_tool tool")
    args = parser.parse_args(argv)
    if args.host != LOOPBACK_HOST:
        parser.error(f"refusing to bind {args.host!r}: the demo server binds {LOOPBACK_HOST} only")
    if not 0 <= args.port <= 65535:
        parser.error(f"--port must be between 0 and 65535, got {args.port}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = _parse_args(argv)
    serve(
        args.transport,
        port=args.port,
        startup_delay_s=args.startup_delay,
        name=args.name,
        echo_note=args.echo_note,
        registering=args.registering,
    )


if __name__ == "__main__":
    main()
