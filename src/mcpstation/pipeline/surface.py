"""The LLM surface: which tools a caller's model is handed, and the two tools of tool search.

With tool search off a model is handed every tool its caller may see. With it on (`[station]
tool_search = "on"`, or `"auto"` for a caller who sees more than `tool_search_threshold` tools or
more than `tool_search_token_budget` estimated schema tokens) it is handed the pinned tools
(`always_visible`: station globs on public names, a server's globs on its own tool names) and two
meta-tools:

- `mcp_search_tools(query, limit=5, server=None)`: the best matches among the tools this caller may
  see, each with its public name, server, description, input schema and score;
- `mcp_call_tool(name, arguments)`: the named tool called through the pipeline exactly as a direct
  call (visibility, audit as that tool, URL guard, bounds); a hidden or unknown name answers as it
  would directly.

Every visible tool can still be called directly by its public name. The meta-tools are answered
here, in resolution, whenever tool search is not off (a model that listed them under `auto` keeps
them when its caller's catalog shrinks); their names are reserved for the host in the catalog.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types

from mcpstation.catalog import Catalog, CatalogTool, LiveIndex, SearchHit, ToolResult, surface_line
from mcpstation.catalog.search import MAX_LIMIT
from mcpstation.config.models import CodeModeSwitch, StationSettings, ToolSearchMode
from mcpstation.errors import UsageError
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.caller import Caller
from mcpstation.pipeline.visibility import SpecLookup, Visibility

SEARCH_TOOL = "mcp_search_tools"
CALL_TOOL = "mcp_call_tool"
RUN_CODE = "mcp_run_code"  # code mode (`mcpstation.codemode`): answered as its own request kind
META_TOOLS: tuple[str, ...] = (SEARCH_TOOL, CALL_TOOL)
HOST_TOOLS: tuple[str, ...] = (*META_TOOLS, RUN_CODE)
"""Every tool name the station answers itself; no server may take one."""
HOST_SERVER = "mcpstation"  # the server the station's own tools are listed under
SEARCH_LIMIT = 5  # matches `mcp_search_tools` returns when the model does not say
MAX_SEARCH_LIMIT = 20  # each match carries its input schema: more than this is a listing, not a search
MAX_SERVERS_NAMED = 40  # servers named in `mcp_search_tools`' description; each costs the model a few tokens
INDEX_WAIT_S = 20.0  # a search waits this long for the index to catch up with the catalog, then uses what it has

InnerCall = Callable[[str, Mapping[str, Any]], Awaitable[ToolResult]]
"""Calls a catalog tool by public name for the caller of the meta-tool call (the pipeline's own path)."""

CodeTool = Callable[[Sequence[CatalogTool], bool], CatalogTool]
"""Builds `mcp_run_code` for a caller: from the tools whose stubs it shows, and whether tool search is on."""


@dataclass(frozen=True, slots=True)
class Surface:
    """What one caller's model is handed: `tools`, from every tool it may see (`visible`)."""

    visible: tuple[CatalogTool, ...]
    pinned: tuple[CatalogTool, ...]
    meta: tuple[CatalogTool, ...]
    search: bool
    code: CatalogTool | None = None  # `mcp_run_code`, when code mode is on for this caller

    @property
    def tools(self) -> tuple[CatalogTool, ...]:
        if self.code is not None:  # in code mode the tools are functions of the script
            return (*self.pinned, *self.meta, self.code) if self.search else (self.code,)
        return (*self.pinned, *self.meta) if self.search else self.visible

    @property
    def stubbed(self) -> tuple[CatalogTool, ...]:
        """The tools `mcp_run_code` shows as typed functions: the pinned ones with search on, else every visible one."""
        return self.pinned if self.search else self.visible


@dataclass(frozen=True, slots=True)
class SurfaceTotals:
    """A surface's size and estimated schema tokens, without tool search (every visible tool) and with
    it, and, when code mode is on for it, as handed with `mcp_run_code` (whose stubs cost tokens too)."""

    mode: ToolSearchMode
    search: bool
    all_tools: int
    all_tokens: int
    search_tools: int
    search_tokens: int
    code_mode: CodeModeSwitch = "off"
    code_tools: int | None = None  # None: code mode is not on for this surface
    code_tokens: int | None = None

    @property
    def code(self) -> bool:
        """Whether the surface is handed with `mcp_run_code`."""
        return self.code_tools is not None

    @property
    def tools(self) -> int:
        if self.code_tools is not None:
            return self.code_tools
        return self.search_tools if self.search else self.all_tools

    @property
    def tokens(self) -> int:
        if self.code_tokens is not None:
            return self.code_tokens
        return self.search_tokens if self.search else self.all_tokens

    def line(self) -> str:
        """`catalog: 2,140 tools (~310k tokens); LLM surface with tool search: 7 tools (~2.1k tokens)`"""
        return surface_line(
            catalog_tools=self.all_tools,
            catalog_tokens=self.all_tokens,
            surface_tools=self.tools,
            surface_tokens=self.tokens,
            tool_search=self.search,
            code_mode=self.code,
        )

    def to_dict(self) -> dict[str, Any]:
        with_code = (
            {"tools": self.code_tools, "tokens": self.code_tokens}
            if self.code_tools is not None and self.code_tokens is not None
            else None
        )
        return {
            "tool_search": self.mode,
            "search": self.search,
            "code_mode": self.code_mode,
            "code": self.code,
            "tools": self.tools,
            "tokens": self.tokens,
            "without_search": {"tools": self.all_tools, "tokens": self.all_tokens},
            "with_search": {"tools": self.search_tools, "tokens": self.search_tokens},
            "with_code": with_code,
        }


_SEARCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "What you want to do, in your own words (any language), e.g. 'open an issue on GitHub'.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_SEARCH_LIMIT,
            "default": SEARCH_LIMIT,
            "description": "How many matches to return.",
        },
        "server": {  # a plain string, left out for every server: some providers reject a type list with null
            "type": "string",
            "description": "Only this server's tools (its name, as in the results); leave out for every server.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}
_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool's name, as mcp_search_tools returned it."},
        "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says."},
    },
    "required": ["name"],
    "additionalProperties": False,
}
_CALL_DESCRIPTION = (
    "Call a tool found with mcp_search_tools by its name, with arguments that follow its input schema. "
    "The answer is the tool's own."
)


def _meta_tool(name: str, description: str, schema: dict[str, Any], *, read_only: bool) -> CatalogTool:
    annotations = types.ToolAnnotations(read_only_hint=True) if read_only else None
    definition = types.Tool(name=name, description=description, input_schema=schema, annotations=annotations)
    return CatalogTool(name, HOST_SERVER, name, description, schema, definition)


def _search_description(visible: Sequence[CatalogTool]) -> str:
    counts: dict[str, int] = {}
    for tool in visible:
        counts[tool.server] = counts.get(tool.server, 0) + 1
    named = ", ".join(f"{server} ({count})" for server, count in list(counts.items())[:MAX_SERVERS_NAMED])
    more = f" and {len(counts) - MAX_SERVERS_NAMED} more" if len(counts) > MAX_SERVERS_NAMED else ""
    return (
        f"Find the right tool among {len(visible)} tools on these servers: {named or 'none'}{more}. Describe what "
        "you want to do; you get the best matches with their input schemas. Then call one with mcp_call_tool, or "
        "directly by its name."
    )


class ToolSurface:
    """Decides each caller's surface and answers the meta-tools, from settings read at the moment of asking."""

    def __init__(
        self,
        *,
        settings: Callable[[], StationSettings],
        spec_of: SpecLookup,
        visibility: Visibility,
        index: LiveIndex,
        code_tool: CodeTool | None = None,
    ) -> None:
        """`code_tool`: builds `mcp_run_code` (code mode, when `[station] code_mode` is not off)."""
        self._settings = settings
        self._spec_of = spec_of
        self._visibility = visibility
        self.index = index
        self._code_tool = code_tool

    def answers(self, name: str) -> bool:
        """Whether `name` is a meta-tool this station answers (tool search, or code mode, is not off)."""
        if name == RUN_CODE:
            return self._code_tool is not None and self._settings().code_mode != "off"
        return name in META_TOOLS and self._settings().tool_search != "off"

    def code_on(self, search: bool) -> bool:
        """Whether a caller's surface (with tool search on or not) has `mcp_run_code`."""
        mode = self._settings().code_mode
        return self._code_tool is not None and (mode == "on" or (mode == "auto" and search))

    def search_on(self, visible: Sequence[CatalogTool]) -> bool:
        """Whether a caller who sees `visible` is handed the search surface."""
        settings = self._settings()
        if settings.tool_search != "auto":
            return settings.tool_search == "on"
        if len(visible) > settings.tool_search_threshold:
            return True
        return sum(self.index.tokens_of(tool) for tool in visible) > settings.tool_search_token_budget

    def is_pinned(self, tool: CatalogTool) -> bool:
        """Kept on the surface with tool search on: a station glob matches its public name, or a
        glob of its server its own name."""
        if any(fnmatch.fnmatchcase(tool.name, pattern) for pattern in self._settings().always_visible):
            return True
        spec = self._spec_of(tool.server)
        return spec is not None and any(fnmatch.fnmatchcase(tool.tool, pattern) for pattern in spec.always_visible)

    def meta_tools(self, visible: Sequence[CatalogTool]) -> tuple[CatalogTool, ...]:
        return (
            _meta_tool(SEARCH_TOOL, _search_description(visible), _SEARCH_SCHEMA, read_only=True),
            _meta_tool(CALL_TOOL, _CALL_DESCRIPTION, _CALL_SCHEMA, read_only=False),
        )

    def surface(self, visible: Sequence[CatalogTool]) -> Surface:
        """The surface of a caller who sees `visible`."""
        pinned = tuple(tool for tool in visible if self.is_pinned(tool))
        search = self.search_on(visible)
        code = None
        if self._code_tool is not None and self.code_on(search):
            code = self._code_tool(pinned if search else tuple(visible), search)
        return Surface(tuple(visible), pinned, self.meta_tools(visible), search, code)

    def totals(self, visible: Sequence[CatalogTool]) -> SurfaceTotals:
        """Sizes and schema tokens of the surface of a caller who sees `visible`, with and without
        search, and as handed with `mcp_run_code` when code mode is on for it."""
        surface = self.surface(visible)
        with_search = [*surface.pinned, *surface.meta]
        handed = surface.tools if surface.code is not None else ()
        return SurfaceTotals(
            mode=self._settings().tool_search,
            search=surface.search,
            all_tools=len(visible),
            all_tokens=sum(self.index.tokens_of(tool) for tool in visible),
            search_tools=len(with_search),
            search_tokens=sum(self.index.tokens_of(tool) for tool in with_search),
            code_mode=self._settings().code_mode,
            code_tools=len(handed) if handed else None,
            code_tokens=sum(self.index.tokens_of(tool) for tool in handed) if handed else None,
        )

    # -- searching ----------------------------------------------------------------------------------

    async def search(
        self, query: str, *, caller: Caller, catalog: Catalog, limit: int, server: str | None
    ) -> list[SearchHit]:
        """The best `limit` tools for `query` among what `caller` may see in `catalog`, best first.

        Raises:
            UsageError: `limit` is not between 1 and the index's maximum.
        """
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"a search limit must be between 1 and {MAX_LIMIT}, got {limit}")
        await self.index.wait_current(INDEX_WAIT_S)
        visibility = self._visibility

        def allowed(tool: CatalogTool) -> bool:
            # The index may be a moment behind the catalog: only entries the catalog still has count.
            current = catalog.tools.get(tool.name)
            return (
                current is not None
                and current.server == tool.server
                and current.tool == tool.tool
                and visibility.can_see(caller, tool.server, tool.tool)
            )

        def ranked() -> list[SearchHit]:
            return self.index.search(query, limit=limit, server=server, allowed=allowed)

        hits = await anyio.to_thread.run_sync(ranked)  # blocking CPU (and the model, when hybrid)
        return [SearchHit(catalog.tools[hit.tool.name], hit.score) for hit in hits]

    # -- the meta-tools -----------------------------------------------------------------------------

    async def answer(
        self, name: str, arguments: Mapping[str, Any], *, caller: Caller, catalog: Catalog, call: InnerCall
    ) -> ToolResult:
        """A meta-tool call's result; bad arguments are a tool error the model can read and correct."""
        if name == SEARCH_TOOL:
            return await self._answer_search(arguments, caller=caller, catalog=catalog)
        target = arguments.get("name")
        if not isinstance(target, str) or not target:
            return _tool_error(
                name, f"{CALL_TOOL} needs `name`: the name of the tool to call, as {SEARCH_TOOL} gave it"
            )
        inner = arguments.get("arguments")
        if inner is None:
            inner = {}
        if not isinstance(inner, Mapping):
            return _tool_error(name, f"`arguments` of {CALL_TOOL} must be an object, not {type(inner).__name__}")
        return await call(target, inner)

    async def _answer_search(self, arguments: Mapping[str, Any], *, caller: Caller, catalog: Catalog) -> ToolResult:
        query = arguments.get("query")
        if not isinstance(query, str) or not query.strip():
            return _tool_error(SEARCH_TOOL, f"{SEARCH_TOOL} needs `query`: what you want to do, in words")
        limit = arguments.get("limit")
        if limit is None:
            limit = SEARCH_LIMIT
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SEARCH_LIMIT:
            return _tool_error(SEARCH_TOOL, f"`limit` must be a whole number from 1 to {MAX_SEARCH_LIMIT}")
        server = arguments.get("server")
        if server is not None and not isinstance(server, str):
            return _tool_error(SEARCH_TOOL, "`server` must be a server's name, or null for every server")
        self.index.want_hybrid()  # a model searches here: worth embedding the catalog for its next searches
        hits = await self.search(query, caller=caller, catalog=catalog, limit=limit, server=server or None)
        found: dict[str, Any] = {"tools": [hit.to_dict(schema=True) for hit in hits]}
        if not hits:
            found["hint"] = "Nothing matched. Try other words" + (", or leave out `server`." if server else ".")
        text = json.dumps(found, ensure_ascii=False, separators=(",", ":"))
        raw = types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=found)
        result = ToolResult(
            Outcome.OK, SEARCH_TOOL, HOST_SERVER, SEARCH_TOOL, content=tuple(raw.content), structured=found, raw=raw
        )
        return result.capped(self._settings().max_result_bytes)


def _tool_error(name: str, message: str) -> ToolResult:
    raw = types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)
    return ToolResult(Outcome.TOOL_ERROR, name, HOST_SERVER, name, content=tuple(raw.content), error=message, raw=raw)
