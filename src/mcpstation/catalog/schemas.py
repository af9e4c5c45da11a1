"""Tool schemas exported for function calling: OpenAI (Chat Completions and Responses), Anthropic, Gemini.

Each takes the catalog's tools (or `ToolSpec`s) and goes through the provider schema compilers
(`catalog.compile`): each schema in the form the provider accepts, strict mode where asked and
possible, tool names the provider takes, and a tool whose schema cannot be offered at all left
out rather than breaking the request (`compile_tools(...).report()` says which and why).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final, Literal

from mcpstation.catalog.catalog import CatalogTool
from mcpstation.catalog.compile import CompiledTools, Target, ToolSpec, compile_tools


def openai_tools(tools: Iterable[CatalogTool | ToolSpec], *, strict: bool = False) -> list[dict[str, Any]]:
    """Chat-completions `tools=[{"type": "function", "function": {...}}]`.

    `strict=True` compiles each tool for Structured Outputs where it can (`"strict": true` on it);
    a tool strict mode cannot express is sent plain.
    """
    compiled = compile_tools(tools, Target.OPENAI_STRICT if strict else Target.OPENAI)
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.spec.description,
                "parameters": tool.compiled.schema,
                "strict": tool.compiled.strict,
            },
        }
        for tool in compiled.tools
    ]


def openai_responses_tools(tools: Iterable[CatalogTool | ToolSpec], *, strict: bool = False) -> list[dict[str, Any]]:
    """Responses API `tools=[{"type": "function", "name", "description", "parameters", "strict"}]` (flat)."""
    return [{"type": "function", **tool["function"]} for tool in openai_tools(tools, strict=strict)]


def anthropic_tools(tools: Iterable[CatalogTool | ToolSpec], *, strict: bool = False) -> list[dict[str, Any]]:
    """Messages API `tools=[{"name", "description", "input_schema"}]`.

    `strict=True` asks for strict tool use within the request's budget (tools with side effects
    first); those tools carry `"strict": true`.
    """
    compiled = compile_tools(tools, Target.ANTHROPIC_STRICT if strict else Target.ANTHROPIC)
    out: list[dict[str, Any]] = []
    for tool in compiled.tools:
        entry: dict[str, Any] = {
            "name": tool.name,
            "description": tool.spec.description,
            "input_schema": tool.compiled.schema,
        }
        if tool.compiled.strict:
            entry["strict"] = True
        out.append(entry)
    return out


def gemini_declarations(tools: Iterable[CatalogTool | ToolSpec], *, json_schema: bool = False) -> list[dict[str, Any]]:
    """Gemini `FunctionDeclaration`s (REST field names): `parameters` (the OpenAPI subset every
    Gemini model takes) or, with `json_schema=True`, `parametersJsonSchema` (Gemini 2.5 and later)."""
    compiled = gemini_compiled(tools, json_schema=json_schema)
    field = "parametersJsonSchema" if json_schema else "parameters"
    return [
        {"name": tool.name, "description": tool.spec.description, field: tool.compiled.schema}
        for tool in compiled.tools
    ]


def gemini_compiled(tools: Iterable[CatalogTool | ToolSpec], *, json_schema: bool = False) -> CompiledTools:
    return compile_tools(tools, Target.GEMINI_JSON if json_schema else Target.GEMINI)


# Provider-native deferral: the provider keeps deferred tools out of the model's context until its own
# tool search finds them. Anthropic: `defer_loading: true` on a tool plus one tool search tool (its
# name is fixed by the API; it is never deferred). OpenAI (Responses API, gpt-5.4 and later):
# `defer_loading: true` on function tools, optionally grouped in `{"type": "namespace"}` objects
# (deferral applies to the functions inside, not to the namespace), plus `{"type": "tool_search"}`.
ANTHROPIC_TOOL_SEARCH_BM25: Final[Mapping[str, str]] = {
    "type": "tool_search_tool_bm25_20251119",
    "name": "tool_search_tool_bm25",
}
ANTHROPIC_TOOL_SEARCH_REGEX: Final[Mapping[str, str]] = {
    "type": "tool_search_tool_regex_20251119",
    "name": "tool_search_tool_regex",
}
OPENAI_TOOL_SEARCH: Final[Mapping[str, str]] = {"type": "tool_search"}
_ANTHROPIC_SEARCH_TYPES = frozenset({ANTHROPIC_TOOL_SEARCH_BM25["type"], ANTHROPIC_TOOL_SEARCH_REGEX["type"]})


def defer_anthropic_tools(
    exported: Iterable[Mapping[str, Any]],
    pinned: Collection[str],
    *,
    search: Literal["bm25", "regex"] = "bm25",
) -> list[dict[str, Any]]:
    """`anthropic_tools(...)` output with every tool not in `pinned` marked `defer_loading: true`.

    The provider's tool search tool is appended (once; an export that has one keeps it). The
    input is not changed.
    """
    out: list[dict[str, Any]] = []
    has_search = False
    for tool in exported:
        entry = dict(tool)
        if entry.get("type") in _ANTHROPIC_SEARCH_TYPES:
            has_search = True
            entry.pop("defer_loading", None)
        elif entry.get("name") in pinned:
            entry.pop("defer_loading", None)
        else:
            entry["defer_loading"] = True
        out.append(entry)
    if not has_search:
        out.append(dict(ANTHROPIC_TOOL_SEARCH_BM25 if search == "bm25" else ANTHROPIC_TOOL_SEARCH_REGEX))
    return out


def defer_openai_tools(
    exported: Iterable[Mapping[str, Any]],
    pinned: Collection[str],
    *,
    namespaces: Mapping[str, str] | None = None,
    namespace_descriptions: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """`openai_responses_tools(...)` output with every function not in `pinned` marked `defer_loading: true`.

    `namespaces` maps a function's name to a namespace (e.g. its server): deferred functions of one
    namespace are grouped into one `{"type": "namespace", "name", "description", "tools"}` object,
    placed where its first function was; pinned functions stay top-level and loaded. `{"type":
    "tool_search"}` is appended once. The input is not changed.

    Raises:
        ValueError: a tool is in the chat-completions shape (`{"type": "function", "function": {...}}`);
            deferral exists only in the Responses API, whose functions are flat.
    """
    descriptions = namespace_descriptions or {}
    out: list[dict[str, Any]] = []
    groups: dict[str, list[dict[str, Any]]] = {}
    has_search = False
    for tool in exported:
        if "function" in tool:
            raise ValueError(
                f"tool {tool['function'].get('name')!r} is in the chat-completions shape; deferred loading "
                "needs the Responses API shape: export with openai_responses_tools()"
            )
        entry = dict(tool)
        if entry.get("type") == OPENAI_TOOL_SEARCH["type"]:
            has_search = True
            out.append(entry)
            continue
        if entry.get("type") != "function":
            out.append(entry)  # a namespace or hosted tool the caller built: passed through as is
            continue
        name = entry.get("name")
        if name in pinned:
            entry.pop("defer_loading", None)
            out.append(entry)
            continue
        entry["defer_loading"] = True
        namespace = namespaces.get(name) if namespaces is not None and isinstance(name, str) else None
        if namespace is None:
            out.append(entry)
        elif namespace in groups:
            groups[namespace].append(entry)
        else:
            groups[namespace] = [entry]
            out.append(
                {
                    "type": "namespace",
                    "name": namespace,
                    "description": descriptions.get(namespace, f"Tools of {namespace}."),
                    "tools": groups[namespace],
                }
            )
    if not has_search:
        out.append(dict(OPENAI_TOOL_SEARCH))
    return out
