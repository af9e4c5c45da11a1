"""A tools/list page screened tool by tool before anything parses it whole."""

from __future__ import annotations

import json
from typing import Any

from mcpstation.connection._tool_budget import DropReason, ToolBudget, screen_tools_page

OBJECT = {"type": "object"}


def _tool(name: str, schema: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema if schema is not None else OBJECT, **extra}


def _screen(tools: list[Any], budget: ToolBudget | None = None, **page: Any) -> tuple[Any, dict[str | None, Any]]:
    raw = json.dumps({"tools": tools, **page}).encode()
    result, dropped = screen_tools_page(raw, budget or ToolBudget())
    return result, {d.name: d for d in dropped}


def test_sane_tools_and_the_rest_of_the_page_pass_unchanged() -> None:
    tools = [_tool("a", description="A."), _tool("b", {"type": "object", "properties": {"x": {"type": "string"}}})]
    result, dropped = _screen(tools, nextCursor="2", _meta={"k": 1})
    assert result == {"tools": tools, "nextCursor": "2", "_meta": {"k": 1}}
    assert dropped == {}


def test_a_tool_over_the_size_budget_is_dropped_by_name_unparsed() -> None:
    enum = [f"v{i}" for i in range(50_000)]
    result, dropped = _screen([_tool("ok"), _tool("bomb", {"type": "object", "enum": enum})])
    assert [t["name"] for t in result["tools"]] == ["ok"]
    assert dropped["bomb"].reason is DropReason.TOO_LARGE
    assert "bytes > 262,144" in dropped["bomb"].detail


def test_a_per_server_budget_overrides_the_default() -> None:
    _, dropped = _screen([_tool("wordy", description="w" * 3000)], ToolBudget(max_bytes=2048))
    assert dropped["wordy"].reason is DropReason.TOO_LARGE


def test_a_tool_nested_deeper_than_the_budget_is_dropped() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(30):
        schema = {"type": "object", "properties": {"x": schema}}
    result, dropped = _screen([_tool("deep", schema), _tool("ok")])
    assert [t["name"] for t in result["tools"]] == ["ok"]
    assert dropped["deep"].reason is DropReason.TOO_DEEP


def test_a_remote_ref_is_dropped_and_a_schema_url_is_kept() -> None:
    remote = {"type": "object", "$ref": "https://example.invalid/schema.json"}
    dialect = {"type": "object", "$schema": "http://json-schema.org/draft-07/schema#"}
    result, dropped = _screen([_tool("remote", remote), _tool("dialect", dialect)])
    assert [t["name"] for t in result["tools"]] == ["dialect"]
    assert dropped["remote"].reason is DropReason.REMOTE_REF


def test_refs_that_loop_on_the_same_instance_are_dropped() -> None:
    to_self = {"type": "object", "$ref": "#"}
    through_all_of = {
        "type": "object",
        "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
        "$ref": "#/$defs/a",
    }
    _, dropped = _screen([_tool("self", to_self), _tool("mutual", through_all_of)])
    assert dropped["self"].reason is DropReason.CYCLIC_REF
    assert dropped["mutual"].reason is DropReason.CYCLIC_REF


def test_a_recursive_schema_that_descends_into_the_instance_is_kept() -> None:
    tree = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/$defs/node"}}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}},
    }
    result, dropped = _screen([_tool("tree", tree)])
    assert result["tools"] == [_tool("tree", tree)] and dropped == {}


def test_definitions_every_era_rejects_are_dropped_so_the_page_survives() -> None:
    result, dropped = _screen([_tool("ok"), {"name": "no_schema"}, _tool("typeless", {}), 42, {"inputSchema": OBJECT}])
    assert [t["name"] for t in result["tools"]] == ["ok"]
    assert dropped["no_schema"].reason is DropReason.NOT_A_TOOL
    assert dropped["typeless"].reason is DropReason.NOT_A_TOOL
    assert dropped[None].reason is DropReason.NOT_A_TOOL


def test_tools_beyond_the_per_page_bound_are_dropped_together() -> None:
    result, dropped = _screen([_tool(f"t{i}") for i in range(10)], ToolBudget(max_tools=4))
    assert len(result["tools"]) == 4
    assert dropped[None].reason is DropReason.TOO_MANY and dropped[None].detail.startswith("6 more")


def test_a_page_whose_tools_is_not_an_array_is_left_for_the_session_to_reject() -> None:
    result, dropped = _screen([])  # an empty array is fine
    assert result == {"tools": []} and dropped == {}
    result, _ = screen_tools_page(b'{"tools":"nope"}', ToolBudget())
    assert result == {"tools": "nope"}
