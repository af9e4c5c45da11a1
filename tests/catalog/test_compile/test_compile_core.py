"""The compiler's shared core: purity, determinism, `$ref`s and recursion, merging, bounds, diagnostics."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compile_corpus import adversarial, every

from mcpstation.catalog.compile import Code, Severity, Target, compile_schema
from mcpstation.catalog.compile._normalize import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES

ADVERSARIAL = {case.name.split("/", 1)[1]: case.schema for case in adversarial()}
TARGETS = list(Target)


def _codes(schema, target) -> set[Code]:
    return {d.code for d in compile_schema(schema, target).diagnostics}


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_compiling_never_changes_the_input_and_shares_nothing_with_it(target):
    for case in every():
        before = copy.deepcopy(case.schema)
        compiled = compile_schema(case.schema, target)
        assert case.schema == before, case.name
        _scribble(compiled.schema)
        assert case.schema == before, f"{case.name}: the compiled schema shares a node with the input"


def _scribble(node) -> None:
    if isinstance(node, dict):
        for value in list(node.values()):
            _scribble(value)
        node["x-scribbled"] = True
    elif isinstance(node, list):
        for value in node:
            _scribble(value)
        node.append("scribbled")


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_compiling_twice_gives_the_same_bytes(target):
    for case in every():
        first = compile_schema(case.schema, target)
        second = compile_schema(copy.deepcopy(case.schema), target)
        assert json.dumps(first.schema) == json.dumps(second.schema), case.name
        assert [d.to_dict() for d in first.diagnostics] == [d.to_dict() for d in second.diagnostics], case.name


def test_the_output_does_not_depend_on_string_hashing():
    code = (
        "import hashlib, json, sys; sys.path.insert(0, sys.argv[1])\n"
        "from compile_corpus import every\n"
        "from mcpstation.catalog.compile import Target, compile_schema\n"
        "digest = hashlib.sha256()\n"
        "for case in every():\n"
        "    for target in Target:\n"
        "        compiled = compile_schema(case.schema, target)\n"
        "        digest.update(json.dumps([compiled.schema, [d.to_dict() for d in compiled.diagnostics]]).encode())\n"
        "print(digest.hexdigest())\n"
    )
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code, str(Path(__file__).parent)],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_json_target_returns_the_schema_unchanged():
    schema = ADVERSARIAL["tuple-draft-07"]
    compiled = compile_schema(schema, Target.JSON)
    assert compiled.schema == schema
    assert compiled.diagnostics == ()


def test_ref_siblings_intersect_with_the_target_instead_of_overriding_it():
    # openai-agents' merge lets the sibling's maximum (1000) replace the definition's (100).
    for target in (Target.OPENAI, Target.OPENAI_STRICT, Target.GEMINI_JSON):
        count = compile_schema(ADVERSARIAL["ref-siblings-intersect"], target).schema["properties"]["count"]
        assert count["type"] == "integer"
        assert count["minimum"] == 0
        assert count["maximum"] == 100
        assert count["description"] == "How many."


def test_ref_siblings_that_add_properties_keep_the_definitions_required_ones():
    item = compile_schema(ADVERSARIAL["ref-siblings-add-property"], Target.OPENAI).schema["properties"]["item"]
    assert set(item["properties"]) == {"id", "extra"}
    assert set(item["required"]) == {"id", "extra"}
    assert Code.REF_SIBLINGS_MERGED in _codes(ADVERSARIAL["ref-siblings-add-property"], Target.OPENAI)


def test_recursion_is_kept_in_defs_where_the_target_has_refs():
    compiled = compile_schema(ADVERSARIAL["recursion-tree"], Target.OPENAI_STRICT)
    assert compiled.strict
    node = compiled.schema["$defs"]["Node"]
    assert node["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert node["additionalProperties"] is False


def test_recursion_to_the_root_becomes_a_definition():
    compiled = compile_schema(ADVERSARIAL["recursion-to-root"], Target.OPENAI)
    assert compiled.schema["properties"]["parent"] == {"$ref": "#/$defs/root"}
    assert set(compiled.schema["$defs"]["root"]["properties"]) == {"name", "parent"}


def test_recursion_falls_back_to_plain_for_anthropic_strict_and_is_unrolled_for_gemini_parameters():
    anthropic = compile_schema(ADVERSARIAL["recursion-tree"], Target.ANTHROPIC_STRICT)
    assert not anthropic.strict
    assert {Code.RECURSION, Code.STRICT_FALLBACK} <= {d.code for d in anthropic.diagnostics}
    assert "$defs" in anthropic.schema  # the plain schema keeps the recursion

    gemini = compile_schema(ADVERSARIAL["recursion-tree"], Target.GEMINI)
    assert "$ref" not in json.dumps(gemini.schema)
    depth, node = 0, gemini.schema["properties"]["root"]
    while "properties" in node:
        depth, node = depth + 1, node["properties"]["children"]["items"]
    assert depth == 4  # the root's Node and three levels written out
    assert [d.code for d in gemini.lossy] == [Code.RECURSION_UNROLLED]


def test_circular_reference_with_nothing_in_between_is_fatal_for_every_target():
    for target in TARGETS:
        compiled = compile_schema(ADVERSARIAL["circular-ref"], target)
        assert compiled.refused
        (fatal,) = [d for d in compiled.diagnostics if d.severity is Severity.FATAL]
        assert fatal.code is Code.CIRCULAR_REF
        assert fatal.pointer == "/$defs/B/anyOf/0/$ref"


def test_a_reference_bomb_is_refused_once_its_expansion_passes_the_bound():
    compiled = compile_schema(ADVERSARIAL["reference-bomb"], Target.OPENAI)
    assert compiled.refused
    assert [d.code for d in compiled.diagnostics] == [Code.TOO_LARGE]


def test_schemas_over_the_node_and_depth_bounds_are_refused():
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_SCHEMA_NODES + 1)}}
    deep: dict = {"type": "string"}
    for _ in range(MAX_SCHEMA_DEPTH):
        deep = {"type": "object", "properties": {"x": deep}}
    assert [d.code for d in compile_schema(wide, Target.OPENAI).diagnostics] == [Code.TOO_LARGE]
    assert [d.code for d in compile_schema(deep, Target.OPENAI).diagnostics] == [Code.TOO_DEEP]


def test_a_root_that_cannot_be_an_object_is_refused():
    compiled = compile_schema(ADVERSARIAL["root-not-object"], Target.ANTHROPIC)
    assert compiled.refused
    assert compiled.diagnostics[0].code is Code.NOT_AN_OBJECT


def test_all_of_branches_merge_into_one_object():
    compiled = compile_schema(ADVERSARIAL["all-of-objects"], Target.ANTHROPIC)
    assert "allOf" not in compiled.schema
    assert compiled.schema["properties"] == {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 1}}
    assert compiled.schema["required"] == ["a"]


def test_all_of_with_a_closed_branch_drops_what_the_closed_branch_forbids():
    compiled = compile_schema(ADVERSARIAL["all-of-closed-conflict"], Target.OPENAI)
    v = compiled.schema["properties"]["v"]
    assert v["properties"] == {"a": {"type": "string"}}
    assert v["additionalProperties"] is False


def test_all_of_that_cannot_be_merged_stays_all_of_where_the_target_takes_it():
    code = compile_schema(ADVERSARIAL["all-of-two-patterns"], Target.OPENAI).schema["properties"]["code"]
    assert [branch.get("pattern") for branch in code["allOf"]] == ["[0-9]$"] or "allOf" in code


def test_draft_07_tuples_and_draft_04_bounds_are_written_the_2020_12_way():
    pair = compile_schema(ADVERSARIAL["tuple-draft-07"], Target.ANTHROPIC).schema["properties"]["pair"]
    assert pair["prefixItems"] == [{"type": "string"}, {"type": "integer"}]
    assert pair["items"] is False
    ratio = compile_schema(ADVERSARIAL["draft-04-exclusive"], Target.OPENAI).schema["properties"]["ratio"]
    assert ratio == {"type": "number", "exclusiveMinimum": 0, "maximum": 1}


def test_a_remote_ref_is_not_fetched_and_is_reported_lossy():
    compiled = compile_schema(ADVERSARIAL["remote-ref"], Target.ANTHROPIC)
    assert compiled.schema["properties"]["geo"] == {}
    (lossy,) = compiled.lossy
    assert lossy.code is Code.UNRESOLVED_REF
    assert lossy.before == {"$ref": "https://example.com/geo.json"}


def test_every_diagnostic_has_a_code_a_pointer_a_severity_and_fragments():
    for case in every():
        for target in TARGETS:
            for diagnostic in compile_schema(case.schema, target).diagnostics:
                as_dict = diagnostic.to_dict()
                assert set(as_dict) == {"code", "severity", "pointer", "before", "after", "detail"}
                assert Code(as_dict["code"]) and Severity(as_dict["severity"])
                assert as_dict["pointer"] == "" or as_dict["pointer"].startswith("/")
                json.dumps(as_dict)


def test_pointers_name_the_fragment_in_the_original_schema():
    compiled = compile_schema(ADVERSARIAL["strings-with-bounds"], Target.OPENAI_STRICT)
    dropped = {d.pointer: d for d in compiled.lossy}
    assert set(dropped) == {"/properties/q/minLength", "/properties/q/maxLength", "/properties/q/format"}
    assert dropped["/properties/q/maxLength"].before == {"maxLength": 100}
    assert dropped["/properties/q/maxLength"].after is None


def test_large_fragments_are_clipped_in_reports():
    compiled = compile_schema(ADVERSARIAL["huge-enum"], Target.GEMINI)
    report = json.dumps([d.to_dict() for d in compiled.diagnostics])
    assert len(report) < 5_000
