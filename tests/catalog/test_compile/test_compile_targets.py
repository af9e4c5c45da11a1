"""Each target's subset, checked on every compiled schema of the corpus, and the known faults of peers' converters.

`*_violations` walk a compiled schema and list whatever the provider's documented subset does
not take: an offline stand-in for the providers' own validators (the live ones run in
test_compile_contract.py when a key is present).
"""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from compile_corpus import adversarial, every

from mcpstation.catalog.compile import Code, Severity, Target, compile_schema
from mcpstation.catalog.compile import anthropic as anthropic_rules
from mcpstation.catalog.compile import openai as openai_rules

ADVERSARIAL = {case.name.split("/", 1)[1]: case.schema for case in adversarial()}

_OPENAI_STRICT_KEYS = {
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "anyOf", "enum",
    "$ref", "$defs", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minItems", "maxItems",
}  # fmt: skip
_ANTHROPIC_STRICT_KEYS = {
    "type", "description", "title", "properties", "required", "additionalProperties", "items", "anyOf", "allOf",
    "enum", "const", "$ref", "$defs", "pattern", "format", "minItems",
}  # fmt: skip
_GEMINI_KEYS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties", "required",
    "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example", "anyOf", "propertyOrdering",
    "default", "items", "minimum", "maximum",
}  # fmt: skip
_GEMINI_JSON_KEYS = {
    "$defs", "$ref", "type", "format", "title", "description", "enum", "items", "prefixItems", "minItems",
    "maxItems", "minimum", "maximum", "anyOf", "properties", "additionalProperties", "required",
}  # fmt: skip


def _walk(schema: Any, at: str = ""):
    """Every schema node with its pointer (properties' and $defs' names are not keywords)."""
    if not isinstance(schema, dict):
        return
    yield at, schema
    for key, value in schema.items():
        if key in ("properties", "$defs", "patternProperties"):
            for name, child in value.items():
                yield from _walk(child, f"{at}/{key}/{name}")
        elif key in ("anyOf", "allOf", "oneOf", "prefixItems"):
            for index, child in enumerate(value):
                yield from _walk(child, f"{at}/{key}/{index}")
        elif key in ("items", "additionalProperties", "not"):
            yield from _walk(value, f"{at}/{key}")


def openai_strict_violations(schema: dict[str, Any]) -> list[str]:
    found = []
    if schema.get("type") != "object" or "anyOf" in schema:
        found.append("root: not one object")
    for at, node in _walk(schema):
        found += [f"{at}: {key}" for key in node if key not in _OPENAI_STRICT_KEYS]
        if "$ref" in node and len(node) > 1:
            found.append(f"{at}: keywords beside $ref")
        if not ({"type", "anyOf", "enum", "$ref"} & node.keys()):
            found.append(f"{at}: no type")
        kinds = node.get("type")
        if kinds == "object" or (isinstance(kinds, list) and "object" in kinds):
            if node.get("additionalProperties") is not False:
                found.append(f"{at}: object not closed")
            if set(node.get("required", [])) != set(node.get("properties", {})):
                found.append(f"{at}: not every property required")
        if isinstance(node.get("format"), str) and node["format"] not in openai_rules.STRICT_FORMATS:
            found.append(f"{at}: format {node['format']}")
    return found


def anthropic_strict_violations(schema: dict[str, Any]) -> list[str]:
    found = []
    for at, node in _walk(schema):
        found += [f"{at}: {key}" for key in node if key not in _ANTHROPIC_STRICT_KEYS]
        if node.get("minItems", 0) > 1:
            found.append(f"{at}: minItems {node['minItems']}")
        kinds = node.get("type")
        if (kinds == "object" or (isinstance(kinds, list) and "object" in kinds)) and node.get(
            "additionalProperties"
        ) is not False:
            found.append(f"{at}: object not closed")
        if isinstance(node.get("pattern"), str) and not anthropic_rules.pattern_supported(node["pattern"]):
            found.append(f"{at}: pattern")
    return found


def gemini_violations(schema: dict[str, Any]) -> list[str]:
    found = []
    for at, node in _walk(schema):
        found += [f"{at}: {key}" for key in node if key not in _GEMINI_KEYS]
        if "anyOf" in node and len(node) > 1:
            found.append(f"{at}: keywords beside anyOf")
        if isinstance(node.get("type"), list):
            found.append(f"{at}: a type list")
        if "enum" in node and not all(isinstance(value, str) for value in node["enum"]):
            found.append(f"{at}: a non-string enum")
        if node.get("type") == "array" and "items" not in node:
            found.append(f"{at}: an array without items")
    return found


def gemini_json_violations(schema: dict[str, Any]) -> list[str]:
    found = []
    for at, node in _walk(schema):
        found += [f"{at}: {key}" for key in node if key not in _GEMINI_JSON_KEYS]
        if "anyOf" in node and len(node) > 1:
            found.append(f"{at}: keywords beside anyOf")
    return found


def provider_root_violations(schema: dict[str, Any]) -> list[str]:
    """What every provider refuses at the root: not an object, or a union there."""
    found = [] if schema.get("type") == "object" else ["root: not type object"]
    return found + [f"root: {key}" for key in ("anyOf", "oneOf", "allOf") if key in schema]


CHECKS = {
    Target.OPENAI_STRICT: openai_strict_violations,
    Target.ANTHROPIC_STRICT: anthropic_strict_violations,
    Target.GEMINI: gemini_violations,
    Target.GEMINI_JSON: gemini_json_violations,
}


@pytest.mark.parametrize("target", [t for t in Target if t is not Target.JSON], ids=str)
def test_every_compiled_schema_is_within_its_targets_subset(target):
    for case in every():
        compiled = compile_schema(case.schema, target)
        if compiled.refused:
            continue
        assert provider_root_violations(compiled.schema) == [], case.name
        check = CHECKS.get(target) if compiled.strict or not target.is_strict else None
        if check is not None:
            assert check(compiled.schema) == [], f"{case.name} ({target.value})"
        if target is not Target.GEMINI:
            jsonschema.Draft202012Validator.check_schema(compiled.schema)


def test_most_real_tools_compile_strict_for_openai_and_anthropic():
    real = [case for case in every() if not case.name.startswith("adversarial/")]
    for target in (Target.OPENAI_STRICT, Target.ANTHROPIC_STRICT):
        strict = sum(compile_schema(case.schema, target).strict for case in real)
        assert strict >= 0.9 * len(real), f"{target.value}: {strict} of {len(real)}"


def test_openai_strict_makes_optional_properties_required_and_nullable():
    # pydantic-ai's strict transformer makes them required without null: the model must invent a value.
    compiled = compile_schema(ADVERSARIAL["strings-with-bounds"], Target.OPENAI_STRICT)
    properties = compiled.schema["properties"]
    assert compiled.schema["required"] == ["q", "when", "tags", "score"]
    assert properties["q"]["type"] == "string"
    assert properties["when"]["type"] == ["string", "null"]
    assert properties["tags"]["type"] == ["array", "null"]
    assert compiled.added_nulls == {"/properties/when", "/properties/tags", "/properties/score"}


def test_optional_properties_that_already_take_null_are_not_marked_for_removal():
    compiled = compile_schema(ADVERSARIAL["nullable-optional"], Target.OPENAI_STRICT)
    assert compiled.schema["properties"]["cursor"] == {"type": ["string", "null"]}
    assert compiled.added_nulls == {"/properties/limit"}
    assert compiled.schema["properties"]["limit"]["enum"] == [10, 50, 100, None]
    assert Code.OPTIONAL_NULL_KEPT in {d.code for d in compiled.diagnostics}


def test_dropped_bounds_are_reported_and_kept_as_a_hint():
    # Vercel's converter drops them silently.
    compiled = compile_schema(ADVERSARIAL["strings-with-bounds"], Target.ANTHROPIC_STRICT)
    score = compiled.schema["properties"]["score"]
    assert "exclusiveMaximum" not in score
    assert "exclusiveMaximum: 1" in score["description"]
    assert {d.pointer for d in compiled.lossy} >= {"/properties/score/exclusiveMaximum", "/properties/score/multipleOf"}


def test_gemini_keeps_the_any_schema_as_any_not_object():
    # LiteLLM turns {} into an object.
    value = compile_schema(ADVERSARIAL["any-value-property"], Target.GEMINI).schema["properties"]["value"]
    assert value == {}


def test_gemini_json_schema_keeps_maps_and_gemini_parameters_describes_them():
    # pydantic-ai's Google transformer drops additionalProperties: a dict arrives empty.
    labels = compile_schema(ADVERSARIAL["map-of-strings"], Target.GEMINI_JSON).schema["properties"]["labels"]
    assert labels["additionalProperties"]["type"] == "string"
    described = compile_schema(ADVERSARIAL["map-of-strings"], Target.GEMINI)
    assert "additionalProperties" in described.schema["properties"]["labels"]["description"]
    assert [d.code for d in described.lossy] == [Code.MAP_DESCRIBED]


def test_gemini_parameters_writes_null_unions_as_nullable_and_const_as_a_string_enum():
    nullable = compile_schema(ADVERSARIAL["nullable-optional"], Target.GEMINI).schema["properties"]["cursor"]
    assert nullable == {"type": "string", "nullable": True}
    mode = compile_schema(ADVERSARIAL["const-values"], Target.GEMINI).schema["properties"]["mode"]
    assert mode == {"type": "string", "enum": ["fast"]}


def test_gemini_any_of_has_no_siblings():
    compiled = compile_schema(ADVERSARIAL["type-list"], Target.GEMINI)
    id_schema = compiled.schema["properties"]["id"]
    assert set(id_schema) == {"anyOf"}
    assert all(branch.get("nullable") for branch in id_schema["anyOf"])


def test_root_unions_fall_back_to_plain_and_flatten_with_a_lossy_diagnostic():
    for target in (Target.OPENAI_STRICT, Target.ANTHROPIC_STRICT):
        compiled = compile_schema(ADVERSARIAL["root-any-of"], target)
        assert not compiled.strict
        codes = [d.code for d in compiled.diagnostics]
        assert Code.ROOT_UNION in codes and Code.STRICT_FALLBACK in codes
        assert compiled.schema["type"] == "object"
        assert set(compiled.schema["properties"]) == {"a", "b"}
        assert "required" not in compiled.schema  # neither is required by every branch
        assert [d.code for d in compiled.lossy] == [Code.ROOT_UNION_FLATTENED]


def test_huge_enums_and_deep_nesting_fall_back_for_openai_strict():
    for name in ("huge-enum", "nesting-12-levels"):
        compiled = compile_schema(ADVERSARIAL[name], Target.OPENAI_STRICT)
        assert not compiled.strict
        assert Code.LIMIT_EXCEEDED in {d.code for d in compiled.diagnostics}


def test_one_of_with_disjoint_branches_becomes_any_of_cosmetically():
    disjoint = compile_schema(ADVERSARIAL["one-of-disjoint-types"], Target.OPENAI_STRICT)
    overlapping = compile_schema(ADVERSARIAL["one-of-overlapping"], Target.OPENAI_STRICT)
    assert Code.ONE_OF_AS_ANY_OF in {d.code for d in disjoint.diagnostics} and not disjoint.lossy
    assert Code.ONE_OF_WIDENED in {d.code for d in overlapping.lossy}


def test_anthropic_strict_drops_lookaround_patterns_and_min_items_over_one():
    password = compile_schema(ADVERSARIAL["lookahead-pattern"], Target.ANTHROPIC_STRICT).schema["properties"][
        "password"
    ]
    assert "pattern" not in password
    tags = compile_schema(ADVERSARIAL["strings-with-bounds"], Target.ANTHROPIC_STRICT).schema["properties"]["tags"]
    assert tags["minItems"] == 1 and "maxItems" not in tags


def test_free_form_objects_and_maps_are_not_forced_into_strict_mode():
    for name in ("free-form-object", "map-of-strings", "pattern-properties", "any-value-property", "tuple-2020"):
        for target in (Target.OPENAI_STRICT, Target.ANTHROPIC_STRICT):
            compiled = compile_schema(ADVERSARIAL[name], target)
            assert not compiled.strict, f"{name} {target.value}"
            assert any(d.code is Code.STRICT_FALLBACK and d.severity is Severity.SEMANTIC for d in compiled.diagnostics)
