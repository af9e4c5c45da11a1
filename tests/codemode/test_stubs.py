"""Stubs from schemas (pure): TypedDict, Literal, NotRequired, output types, Python names for public names."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from mcpstation.catalog import CatalogTool
from mcpstation.codemode import ToolNames, python_name, render_stubs


def tool(name: str, schema: dict[str, Any], output: dict[str, Any] | None = None, description: str = "") -> CatalogTool:
    definition = types.Tool(name=name, description=description, input_schema=schema, output_schema=output)
    return CatalogTool(name, "srv", name, description, schema, definition)


ISSUE = {
    "type": "object",
    "properties": {
        "repo": {"type": "string", "description": "owner/name"},
        "state": {"enum": ["open", "closed"]},
        "labels": {"type": "array", "items": {"type": "string"}},
        "assignee": {"type": ["string", "null"]},
        "meta": {
            "type": "object",
            "properties": {"priority": {"type": "integer"}, "due": {"type": "string"}},
            "required": ["priority"],
        },
        "extra": {"type": "object", "additionalProperties": {"type": "number"}},
        "kind": {"const": "bug"},
        "ref": {"$ref": "#/$defs/Ref"},
    },
    "required": ["repo", "state"],
    "$defs": {"Ref": {"type": "object", "properties": {"sha": {"type": "string"}}, "required": ["sha"]}},
}
ISSUE_OUT = {"type": "object", "properties": {"number": {"type": "integer"}, "url": {"type": "string"}}}


def test_a_schema_becomes_a_keyword_only_async_def_with_typed_dicts():
    stubs = render_stubs([tool("mcp_gh_open-issue", ISSUE, ISSUE_OUT, "Open an issue.\n\nMore words.")])
    assert (
        "async def mcp_gh_open_issue(*, repo: str, state: Literal['open', 'closed'], labels: list[str] = ..., "
        "assignee: str | None = ..., meta: McpGhOpenIssueMeta = ..., extra: dict[str, float] = ..., "
        "kind: Literal['bug'] = ..., ref: Ref = ...) -> McpGhOpenIssueResult:" in stubs
    )
    assert '"""mcp_gh_open-issue (server srv): Open an issue. More words.' in stubs
    assert "        repo: owner/name" in stubs
    assert "class McpGhOpenIssueMeta(TypedDict):\n    priority: int\n    due: NotRequired[str]\n" in stubs
    assert "class Ref(TypedDict):\n    sha: str\n" in stubs
    assert "class McpGhOpenIssueResult(TypedDict):\n    number: NotRequired[int]\n    url: NotRequired[str]\n" in stubs
    compile(stubs, "stubs", "exec")  # valid Python, as the sandbox's checker reads it


def test_without_an_output_schema_a_tool_returns_any_and_rendering_is_deterministic():
    tools = [tool("b_tool", {"type": "object"}), tool("a_tool", {"type": "object", "properties": {}})]
    stubs = render_stubs(tools)
    assert stubs == render_stubs(list(reversed(tools)))
    assert stubs.index("async def a_tool() -> Any:") < stubs.index("async def b_tool() -> Any:")


def test_keys_no_keyword_can_name_make_the_arguments_one_typed_dict():
    schema = {"type": "object", "properties": {"per-page": {"type": "integer"}, "from": {"type": "string"}}}
    stubs = render_stubs([tool("list", schema)])
    assert "async def list(arguments: ListArgs) -> Any:" in stubs
    assert "ListArgs = TypedDict('ListArgs', {'per-page': NotRequired[int], 'from': NotRequired[str]})" in stubs
    compile(stubs, "stubs", "exec")


def test_recursive_refs_end_in_any():
    schema = {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    }
    stubs = render_stubs([tool("walk", schema)])
    assert "class Node(TypedDict):\n    child: NotRequired[Any]\n" in stubs


def test_python_names_and_collisions():
    assert python_name("mcp_gh_open-issue") == "mcp_gh_open_issue"
    assert python_name("9lives") == "t_9lives" and python_name("class") == "t_class"
    assert python_name("call_tool") == "t_call_tool", "no tool shadows the script's own functions"
    names = ToolNames.of(["a-b", "a_b", "c"])
    assert dict(names.by_function) == {"a_b": "a-b", "c": "c"} and names.uncallable == ("a_b",)
    stubs = render_stubs([tool("a-b", {"type": "object"}), tool("a_b", {"type": "object"})])
    assert "Reach these with call_tool(name, arguments): their Python names are taken: a_b" in stubs
