"""Soundness, by property: a value the compiled schema accepts is accepted by the original schema,
after the round trip (`Compiled.restore`), unless a lossy diagnostic names the constraint it breaks.

Every tool of the real corpus and every adversarial schema, for every target. Values are built
by `compile_values.values` from the compiled schema and kept only when the compiled schema's own
validator accepts them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pytest
from compile_corpus import Case, every
from compile_values import as_json_schema, validator, values
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from referencing.exceptions import Unresolvable

from mcpstation.catalog.compile import Code, Compiled, Target, compile_schema

TARGETS = [target for target in Target if target is not Target.JSON]

# What a lossy diagnostic allows the compiled schema to accept: the keywords whose violations it covers.
_ANYTHING = frozenset({"*"})
_COVERS: dict[Code, frozenset[str]] = {
    Code.ONE_OF_WIDENED: frozenset({"oneOf"}),
    Code.ROOT_UNION_FLATTENED: frozenset(
        {"anyOf", "oneOf", "allOf", "required", "additionalProperties", "const", "enum", "type"}
    ),
    Code.ENUM_DROPPED: frozenset({"enum", "const"}),
    Code.MAP_DESCRIBED: _ANYTHING,  # the map's values: any of their keywords
    Code.TUPLE_FLATTENED: _ANYTHING,  # a position's value: any of its keywords
    Code.RECURSION_UNROLLED: _ANYTHING,
    Code.UNRESOLVED_REF: _ANYTHING,
    Code.ALL_OF_CONFLICT: _ANYTHING,
    Code.REQUIRED_UNDECLARED: frozenset({"required"}),
}


def _allowed(compiled: Compiled) -> frozenset[str]:
    allowed: set[str] = set()
    for diagnostic in compiled.lossy:
        if diagnostic.code in (Code.CONSTRAINT_DROPPED, Code.FORMAT_DROPPED):
            allowed.add(diagnostic.pointer.rsplit("/", 1)[-1])
        else:
            allowed |= _COVERS[diagnostic.code]
    if "exclusiveMinimum" in allowed or "exclusiveMaximum" in allowed:
        allowed |= {"minimum", "maximum"}  # draft-04 checks its boolean exclusive bounds as minimum/maximum
    if "additionalProperties" in allowed or "patternProperties" in allowed:
        allowed |= _ANYTHING  # the values of extra keys may be anything
    return frozenset(allowed)


def _leaves(error: Any) -> set[str]:
    """The keywords on the way to what an error comes down to (through anyOf/oneOf/allOf contexts):
    a broken `minimum` under a dropped `then` is the `then`'s doing."""
    found = {str(step) for step in error.absolute_schema_path} | {error.validator}
    for inner in error.context or ():
        found |= _leaves(inner)
    return found


@dataclass(frozen=True)
class _Subject:
    case: Case
    compiled: Compiled
    strategy: st.SearchStrategy[Any]  # arguments built from the compiled schema
    accepts: Any  # the compiled schema's validator
    original: Any  # the original schema's validator


def _compiled_cases(target: Target) -> dict[str, list[_Subject]]:
    groups: dict[str, list[_Subject]] = defaultdict(list)
    for case in every():
        compiled = compile_schema(case.schema, target)
        if compiled.refused:
            continue
        readable = as_json_schema(compiled.schema) if target is Target.GEMINI else compiled.schema
        subject = _Subject(case, compiled, values(readable), validator(readable), validator(case.schema))
        groups[case.name.split("/", 1)[0]].append(subject)
    return groups


GROUPS = {target: _compiled_cases(target) for target in TARGETS}
PARAMS = [(target, group) for target in TARGETS for group in sorted(GROUPS[target])]


@pytest.mark.parametrize(("target", "group"), PARAMS, ids=[f"{t.value}-{g}" for t, g in PARAMS])
@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_values_the_compiled_schema_accepts_are_accepted_by_the_original(
    target: Target, group: str, data: st.DataObject
):
    subject = data.draw(st.sampled_from(GROUPS[target][group]), label="tool")
    case, compiled = subject.case, subject.compiled
    value = data.draw(subject.strategy, label="arguments")
    if not subject.accepts.is_valid(value):
        return  # the builder over-approximates: only values the compiled schema accepts count
    restored = compiled.restore(value)
    allowed = _allowed(compiled)
    try:
        errors = list(subject.original.iter_errors(restored))
    except Unresolvable:
        assert allowed >= _ANYTHING, f"{case.name}: an unresolvable $ref with no lossy diagnostic"
        return
    if not errors:
        return
    assert compiled.lossy, (
        f"{case.name} ({target.value}): compiled with no lossy diagnostic, yet the original rejects "
        f"{json.dumps(restored)[:300]}: {errors[0].message}"
    )
    if "*" in allowed:
        return
    for error in errors:
        assert _leaves(error) & allowed, (
            f"{case.name} ({target.value}): the original rejects {json.dumps(restored)[:300]} by "
            f"{sorted(_leaves(error))} ({error.message}); the lossy diagnostics cover only {sorted(allowed)}"
        )
