"""A test server that asks its client things, push style and resolve style.

    python ask_server.py        (stdio)

Push tools (`*_push`) send server->client requests mid-call: they work on handshake-era sessions
only. Resolve tools (`*_resolve`) return input-required results on 2026-07-28 sessions and are
driven as pushes on handshake-era ones: they work in both eras through the same callbacks.
"""

from __future__ import annotations

import json
import warnings
from typing import Annotated

import mcp_types as types
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK deprecates sampling and roots as of 2026-07-28

mcp = MCPServer("ask", version="0.0.1")


class Profile(BaseModel):
    name: str
    color: str = "blue"
    count: int = 3


def _profile(result: object) -> str:
    data = getattr(result, "data", None)
    return f"{getattr(result, 'action', '?')}:{json.dumps(data.model_dump() if data else None, sort_keys=True)}"


@mcp.tool()
async def ask_push(ctx: Context) -> str:
    return _profile(await ctx.elicit("Who are you?", Profile))


async def _ask_profile() -> Elicit[Profile]:
    return Elicit("Who are you?", Profile)


@mcp.tool()
async def ask_resolve(profile: Annotated[Profile, Resolve(_ask_profile)]) -> str:
    return json.dumps(profile.model_dump(), sort_keys=True)


@mcp.tool()
async def url_push(ctx: Context) -> str:
    result = await ctx.elicit_url("Sign in, please", "https://example.org/login", "e-1")
    return f"url:{result.action}"


def _hello(text: str = "hello") -> list[types.SamplingMessage]:
    return [types.SamplingMessage(role="user", content=types.TextContent(type="text", text=text))]


@mcp.tool()
async def sample_push(ctx: Context, max_tokens: int = 50, with_tools: bool = False) -> str:
    tools = [types.Tool(name="lookup", input_schema={"type": "object"})] if with_tools else None
    result = await ctx.session.create_message(_hello(), max_tokens=max_tokens, tools=tools)
    content = result.content if not isinstance(result.content, list) else result.content[0]
    return f"{result.model}:{getattr(content, 'text', '')}"


async def _sample() -> Sample:
    return Sample(_hello("from resolve"), max_tokens=40)


@mcp.tool()
async def sample_resolve(result: Annotated[types.CreateMessageResult, Resolve(_sample)]) -> str:
    return f"{result.model}:{getattr(result.content, 'text', '')}"


@mcp.tool()
async def roots_push(ctx: Context) -> str:
    return ",".join(str(root.uri) for root in (await ctx.session.list_roots()).roots)


async def _roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def roots_resolve(result: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    return ",".join(str(root.uri) for root in result.roots)


@mcp.tool()
async def log_some(ctx: Context) -> str:
    await ctx.debug("debug-message")
    await ctx.info("info-message")
    await ctx.warning("warning-message")
    return "logged"


if __name__ == "__main__":
    mcp.run("stdio")
