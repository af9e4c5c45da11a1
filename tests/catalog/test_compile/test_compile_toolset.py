"""A request's tools together: the null round trip, reversible names, Anthropic's strict budget, refusals."""

from __future__ import annotations

import jsonschema
from compile_corpus import adversarial

from mcpstation.catalog.compile import Code, Target, ToolSpec, compile_schema, compile_tools, provider_names
from mcpstation.catalog.compile import anthropic as anthropic_rules

ADVERSARIAL = {case.name.split("/", 1)[1]: case.schema for case in adversarial()}

NESTED = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "labels": {"type": "array", "items": {"type": "string"}},
        "assignee": {
            "type": "object",
            "properties": {"login": {"type": "string"}, "team": {"type": "string"}},
            "required": ["login"],
        },
        "target": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
    },
    "required": ["title"],
}


def test_nulls_added_for_optional_properties_are_removed_before_dispatch():
    compiled = compile_schema(NESTED, Target.OPENAI_STRICT)
    model_said = {"title": "Bug", "labels": None, "assignee": {"login": "ada", "team": None}, "target": None}
    jsonschema.validate(model_said, compiled.schema)  # what strict mode lets the model send
    restored = compiled.restore(model_said)
    assert restored == {"title": "Bug", "assignee": {"login": "ada"}}
    jsonschema.validate(restored, NESTED)
    assert model_said["labels"] is None  # the model's arguments are not changed


def test_a_null_the_original_accepts_reaches_the_server():
    compiled = compile_schema(ADVERSARIAL["nullable-optional"], Target.OPENAI_STRICT)
    assert compiled.restore({"cursor": None, "limit": None}) == {"cursor": None}


def test_nulls_are_removed_inside_recursive_definitions_and_arrays():
    compiled = compile_schema(ADVERSARIAL["recursion-tree"], Target.OPENAI_STRICT)
    model_said = {
        "root": {"label": "a", "children": [{"label": "b", "children": None}, {"label": "c", "children": []}]}
    }
    jsonschema.validate(model_said, compiled.schema)
    restored = compiled.restore(model_said)
    assert restored == {"root": {"label": "a", "children": [{"label": "b"}, {"label": "c", "children": []}]}}
    jsonschema.validate(restored, ADVERSARIAL["recursion-tree"])


def test_restore_passes_non_null_values_and_unknown_keys_through():
    compiled = compile_schema(NESTED, Target.OPENAI_STRICT)
    arguments = {"title": "x", "target": 3, "extra": None}
    assert compiled.restore(arguments) == arguments


def test_catalog_names_stay_as_they_are_for_openai_and_anthropic():
    names = ["mcp_github_create_issue", "3d-print", "a" * 64]
    for provider in ("openai", "anthropic"):
        mapped = provider_names(names, provider)
        assert dict(mapped.to_provider) == {name: name for name in names}


def test_gemini_names_start_with_a_letter_or_underscore_and_map_back():
    mapped = provider_names(["3d-print", "mcp_fs_read", "_3d-print"], "gemini")
    assert mapped.outgoing("mcp_fs_read") == "mcp_fs_read"
    assert mapped.outgoing("_3d-print") == "_3d-print"
    renamed = mapped.outgoing("3d-print")
    assert renamed[0] in "_abcdefghijklmnopqrstuvwxyz" and renamed != "_3d-print"  # the plain fix collides
    assert [c.catalog for c in mapped.collisions] == ["3d-print"]
    assert mapped.incoming(renamed) == "3d-print"
    assert mapped.incoming("no_such_tool") == "no_such_tool"


def test_renamed_names_do_not_depend_on_the_order_tools_come_in():
    forward = provider_names(["9lives", "_9lives", "7up", "-dash"], "gemini")
    backward = provider_names(["-dash", "7up", "_9lives", "9lives"], "gemini")
    assert dict(forward.to_provider) == dict(backward.to_provider)


def _tool(index: int, *, read_only: bool = False, destructive: bool = True, optional: int = 0) -> ToolSpec:
    properties = {"id": {"type": "string"}} | {f"o{i}": {"type": "string"} for i in range(optional)}
    schema = {"type": "object", "properties": properties, "required": ["id"]}
    return ToolSpec(f"tool{index:02d}", "", schema, read_only=read_only, destructive=destructive)


def test_anthropic_strict_budget_goes_to_tools_with_side_effects_first():
    readers = [_tool(i, read_only=True) for i in range(15)]
    writers = [_tool(15 + i, destructive=False) for i in range(5)]
    deleters = [_tool(20 + i) for i in range(5)]
    compiled = compile_tools([*readers, *writers, *deleters], Target.ANTHROPIC_STRICT)
    strict = {tool.spec.name for tool in compiled.tools if tool.compiled.strict}
    assert len(strict) == anthropic_rules.MAX_STRICT_TOOLS
    assert {tool.name for tool in deleters + writers} <= strict
    plain = [tool for tool in compiled.tools if not tool.compiled.strict]
    assert [tool.spec.name for tool in plain] == [f"tool{i:02d}" for i in range(10, 15)]
    assert all(tool.compiled.diagnostics[-1].code is Code.STRICT_BUDGET for tool in plain)
    assert compiled.report()["summary"] == {"strict": 20, "plain": 5, "refused": 0, "lossy": {}}


def test_anthropic_strict_budget_counts_optional_properties():
    tools = [_tool(i, optional=10) for i in range(4)]
    compiled = compile_tools(tools, Target.ANTHROPIC_STRICT)
    assert [tool.compiled.strict for tool in compiled.tools] == [True, True, False, False]
    assert sum(tool.compiled.optional for tool in compiled.tools if tool.compiled.strict) <= 24


def test_a_refused_tool_is_left_out_and_the_rest_are_offered():
    tools = [
        ToolSpec("good", "", {"type": "object", "properties": {"a": {"type": "string"}}}),
        ToolSpec("circular", "", ADVERSARIAL["circular-ref"]),
    ]
    compiled = compile_tools(tools, Target.OPENAI_STRICT)
    assert [tool.spec.name for tool in compiled.tools] == ["good"]
    assert [tool.spec.name for tool in compiled.refused] == ["circular"]
    assert compiled.fatal
    report = compiled.report()
    assert report["summary"]["refused"] == 1
    assert next(t for t in report["tools"] if t["name"] == "circular")["refused"] is True


def test_arguments_in_maps_the_name_back_and_removes_the_added_nulls():
    tools = [ToolSpec("7zip", "", NESTED)]
    for target in (Target.GEMINI, Target.OPENAI_STRICT):
        compiled = compile_tools(tools, target)
        provider_name = compiled.tools[0].name
        name, arguments = compiled.arguments_in(provider_name, {"title": "t", "labels": None})
        assert name == "7zip"
        expected = {"title": "t"} if target is Target.OPENAI_STRICT else {"title": "t", "labels": None}
        assert arguments == expected


def test_the_stations_own_meta_tools_compile_for_every_provider_without_loss():
    from mcpstation.pipeline.surface import _CALL_SCHEMA, _SEARCH_SCHEMA

    for target in Target:
        search = compile_schema(_SEARCH_SCHEMA, target)
        call = compile_schema(_CALL_SCHEMA, target)
        assert not search.refused and not call.refused
        # Gemini's parameters cannot forbid other keys; Anthropic strict keeps `limit`'s bounds as a hint.
        allowed = {Code.CONSTRAINT_DROPPED} if target in (Target.GEMINI, Target.ANTHROPIC_STRICT) else set()
        assert {d.code for d in search.lossy} <= allowed
        assert {d.code for d in call.lossy} <= allowed
        if target.is_strict:
            assert search.strict
            assert not call.strict  # `arguments` is any object: the called tool's schema says what it holds
