"""An upstream server that asks its client things mid-call, handshake-era style (push requests).

    python tests/helpers/push_server.py [CANCEL_MARKER_FILE]

Tools: `ask_name` (form elicitation), `ask_llm` (sampling), `my_roots` (roots/list), `chatty`
(three log messages), `wait_for_cancel` (blocks; writes "cancelled" to the marker file when the
call is cancelled). Pin it with `protocol = "legacy"`: push requests need a handshake-era session.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel

mcp = MCPServer("push", version="0.0.1")
MARKER = Path(sys.argv[1]) if len(sys.argv) > 1 else None


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user for a name."""
    answer = await ctx.elicit("What is your name?", Name)
    return f"{answer.action}:{getattr(getattr(answer, 'data', None), 'name', None)}"


@mcp.tool()
async def ask_llm(question: str, ctx: Context) -> str:
    """Ask the client's LLM a question."""
    result = await ctx.session.create_message(
        [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=question))],
        max_tokens=20,
        related_request_id=ctx.request_id,
    )
    text = result.content.text if isinstance(result.content, types.TextContent) else "?"
    return f"{result.model}:{text}"


@mcp.tool()
async def my_roots(ctx: Context) -> str:
    """The client's roots, comma-separated."""
    result = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in result.roots)


@mcp.tool()
async def chatty(ctx: Context) -> str:
    """Log three messages, then answer."""
    await ctx.debug("debug-line")
    await ctx.info("info-line")
    await ctx.warning("warning-line")
    return "chatted"


@mcp.tool()
async def wait_for_cancel() -> str:
    """Block until cancelled; record the cancellation."""
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        if MARKER is not None:
            MARKER.write_text("cancelled")
        raise
    return "never"


if __name__ == "__main__":
    mcp.run("stdio")
