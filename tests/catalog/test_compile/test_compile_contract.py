"""The compiled schemas against the providers.

Offline (always): each recorded rejection message the providers document is matched by a check
that no compiled schema of the corpus would trigger it; Gemini's `parameters` are validated with
google-genai's own `Schema` type, which refuses any field the API does not define.

Live (only with a key in the environment, skipped otherwise): every real tool, compiled, is sent
to the provider in one request that asks for no tool call; the provider must accept the request.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from compile_corpus import every, real

from mcpstation.catalog.compile import Compiled, Target, ToolSpec, compile_schema, compile_tools
from mcpstation.catalog.compile import anthropic as anthropic_rules

REJECTIONS = json.loads((Path(__file__).parent / "corpus" / "rejections.json").read_text())
LIVE_TIMEOUT_S = 120.0  # one provider request carrying ~190 tools


def _nodes(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                for child in value.values():
                    yield from _nodes(child)
            elif key in ("anyOf", "allOf", "oneOf", "prefixItems") and isinstance(value, list):
                for child in value:
                    yield from _nodes(child)
            elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
                yield from _nodes(value)


def _is_object(node: dict[str, Any]) -> bool:
    kinds = node.get("type")
    return kinds == "object" or (isinstance(kinds, list) and "object" in kinds)


def _keywords(names: str) -> Callable[[dict[str, Any]], bool]:
    banned = set(names.split(","))
    return lambda schema: all(not (banned & node.keys()) for node in _nodes(schema))


CHECKS: dict[str, Callable[[dict[str, Any]], bool]] = {
    "objects-closed": lambda s: all(n.get("additionalProperties") is False for n in _nodes(s) if _is_object(n)),
    "all-required": lambda s: all(
        set(n.get("required", [])) == set(n.get("properties", {})) for n in _nodes(s) if _is_object(n)
    ),
    "root-object": lambda s: s.get("type") == "object",
    "root-properties": lambda s: isinstance(s.get("properties"), dict),
    "no-root-union": lambda s: not ({"anyOf", "oneOf", "allOf"} & s.keys()),
    "any-of-alone": lambda s: all(len(n) == 1 for n in _nodes(s) if "anyOf" in n),
    "array-items": lambda s: all("items" in n for n in _nodes(s) if n.get("type") == "array"),
    "string-enums": lambda s: all(all(isinstance(v, str) for v in n["enum"]) for n in _nodes(s) if "enum" in n),
}


def _check(name: str) -> Callable[[dict[str, Any]], bool]:
    if name.startswith("no-keyword:"):
        return _keywords(name.removeprefix("no-keyword:"))
    return CHECKS[name]


def _compiled(target: Target) -> list[tuple[str, Compiled]]:
    out = []
    for case in every():
        compiled = compile_schema(case.schema, target)
        if not compiled.refused and (compiled.strict or not target.is_strict):
            out.append((case.name, compiled))
    return out


@pytest.mark.parametrize("rejection", REJECTIONS, ids=[f"{r['target']}-{r['check']}" for r in REJECTIONS])
def test_no_compiled_schema_would_draw_a_documented_rejection(rejection: dict[str, str]):
    if rejection["check"] == "anthropic-budget":
        tools = [ToolSpec(case.name.replace("/", "_"), "", case.schema) for case in every()]
        strict = [t.compiled for t in compile_tools(tools, Target.ANTHROPIC_STRICT).tools if t.compiled.strict]
        assert len(strict) <= anthropic_rules.MAX_STRICT_TOOLS
        assert sum(c.optional for c in strict) <= anthropic_rules.MAX_OPTIONAL_PROPERTIES
        assert sum(c.unions for c in strict) <= anthropic_rules.MAX_UNION_PROPERTIES
        return
    check = _check(rejection["check"])
    failing = [name for name, compiled in _compiled(Target(rejection["target"])) if not check(compiled.schema)]
    assert failing == [], f"would draw {rejection['message']!r}"


def test_gemini_parameters_are_schemas_google_genai_accepts():
    genai_types = pytest.importorskip("google.genai.types")
    for name, compiled in _compiled(Target.GEMINI):
        genai_types.Schema.model_validate(compiled.schema), name
    for name, compiled in _compiled(Target.GEMINI_JSON):
        declaration = genai_types.FunctionDeclaration(name="t", parameters_json_schema=compiled.schema)
        assert declaration.parameters_json_schema == compiled.schema, name


# -- live, with a key -------------------------------------------------------------------------------


def _real_tools(target: Target) -> list[Any]:
    specs = [ToolSpec(case.name.replace("/", "__").replace("-", "_"), "", case.schema) for case in real()]
    return list(compile_tools(specs, target).tools)


@pytest.mark.skipif(not os.environ.get("OPENAI_API_KEY"), reason="no OPENAI_API_KEY: the live OpenAI check is skipped")
def test_openai_accepts_every_real_tool_compiled_strict():
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(timeout=LIVE_TIMEOUT_S)
    tools = [
        {"type": "function", "function": {"name": t.name, "parameters": t.compiled.schema, "strict": t.compiled.strict}}
        for t in _real_tools(Target.OPENAI_STRICT)
    ]
    for start in range(0, len(tools), 100):  # the API takes at most 128 tools a request
        client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[{"role": "user", "content": "Say ok."}],
            tools=tools[start : start + 100],
            tool_choice="none",
            max_tokens=1,
        )


@pytest.mark.skipif(
    not os.environ.get("ANTHROPIC_API_KEY"), reason="no ANTHROPIC_API_KEY: the live Anthropic check is skipped"
)
def test_anthropic_accepts_every_real_tool_compiled_strict_within_the_budget():
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(timeout=LIVE_TIMEOUT_S)
    tools = [
        {"name": t.name, "input_schema": t.compiled.schema, **({"strict": True} if t.compiled.strict else {})}
        for t in _real_tools(Target.ANTHROPIC_STRICT)
    ]
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=1,
        messages=[{"role": "user", "content": "Say ok."}],
        tools=tools,
        tool_choice={"type": "none"},
    )


@pytest.mark.skipif(not os.environ.get("GEMINI_API_KEY"), reason="no GEMINI_API_KEY: the live Gemini check is skipped")
@pytest.mark.parametrize("target", [Target.GEMINI, Target.GEMINI_JSON], ids=str)
def test_gemini_accepts_every_real_tool_compiled(target: Target):
    genai = pytest.importorskip("google.genai")
    client = genai.Client()
    field = "parameters_json_schema" if target is Target.GEMINI_JSON else "parameters"
    declarations = [{"name": t.name, field: t.compiled.schema} for t in _real_tools(target)]
    client.models.generate_content(
        model="gemini-2.5-flash",
        contents="Say ok.",
        config={
            "tools": [{"function_declarations": declarations}],
            "tool_config": {"function_calling_config": {"mode": "NONE"}},
            "max_output_tokens": 1,
        },
    )
