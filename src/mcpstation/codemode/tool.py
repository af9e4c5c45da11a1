"""`mcp_run_code`: the one tool a model is handed in code mode, its description holding the stubs.

The description is built from the tools the caller may see (with tool search on: the pinned ones
and `search_tools`), so it changes only when those tools or the limits change, and the model's
prompt cache holds across turns; tools found by search are called with `call_tool` and need no
change to it.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types

from mcpstation.catalog import CatalogTool
from mcpstation.config.models import CodeModeSettings
from mcpstation.pipeline.surface import HOST_SERVER, RUN_CODE

CACHED_DESCRIPTIONS = 32  # distinct tool sets (callers' surfaces) whose description is kept built

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "A Python script. Top-level `await` works; its last expression is returned to you.",
        }
    },
    "required": ["code"],
    "additionalProperties": False,
}

_HEAD = (
    "Run a short Python script that calls tools as async functions; only what it prints and the value of its "
    "last expression come back to you. Use it to chain, loop over, filter or add up tool results in one step "
    "instead of calling tools one at a time.\n"
    "- `await name(...)` calls a tool below (keyword arguments); `await call_tool(name, arguments)` calls any "
    "tool you may see by its public name; `await asyncio.gather(...)` runs calls at once.\n"
    "- Results come unwrapped: structured content, else the text's JSON decoded, else the text.\n"
    "- A failed call raises, with the message '<outcome>: <error>': LookupError (no such tool), PermissionError "
    "(refused by policy), TimeoutError, OSError (server unavailable or result too large), RuntimeError (the tool "
    "reported an error). Catch them, or let the run fail.\n"
    "- A sandboxed Python subset: no files, network, environment or installed packages; json, re, math, "
    "datetime, collections, itertools and asyncio import. No class inheritance.\n"
)


def _limits_line(settings: CodeModeSettings) -> str:
    return (
        f"- Limits per run: {settings.max_tool_calls} tool calls, {settings.timeout_s:g} s, "
        f"{settings.max_output_bytes // 1024} KiB of output. The script is type-checked against these stubs first.\n"
    )


def description(tools: Sequence[CatalogTool], *, search: bool, settings: CodeModeSettings) -> str:
    """The description of `mcp_run_code` for a caller shown `tools` (and `search_tools` with search on)."""
    from mcpstation.codemode.stubs import render_stubs  # loads when code mode is first offered

    stubs = render_stubs(tools, search=search)
    found = "- search_tools(query) finds the other tools; call them with call_tool.\n" if search else ""
    return f"{_HEAD}{found}{_limits_line(settings)}\n```python\n{stubs}```"


class CodeToolBuilder:
    """Builds `mcp_run_code` per tool set, keeping the last few built (a surface is asked for often)."""

    def __init__(self, settings: Callable[[], CodeModeSettings]) -> None:
        self._settings = settings
        self._built: OrderedDict[tuple[Any, ...], CatalogTool] = OrderedDict()

    def __call__(self, tools: Sequence[CatalogTool], search: bool) -> CatalogTool:
        settings = self._settings()
        key = (search, settings, *(_identity(tool) for tool in tools))
        built = self._built.get(key)
        if built is not None:
            self._built.move_to_end(key)
            return built
        text = description(tools, search=search, settings=settings)
        definition = types.Tool(name=RUN_CODE, description=text, input_schema=INPUT_SCHEMA)
        built = CatalogTool(RUN_CODE, HOST_SERVER, RUN_CODE, text, INPUT_SCHEMA, definition)
        self._built[key] = built
        if len(self._built) > CACHED_DESCRIPTIONS:
            self._built.popitem(last=False)
        return built


def _identity(tool: CatalogTool) -> tuple[str, str, str]:
    output = tool.definition.output_schema
    schemas = json.dumps([tool.input_schema, output], sort_keys=True, default=str)
    return (tool.name, tool.description, schemas)
