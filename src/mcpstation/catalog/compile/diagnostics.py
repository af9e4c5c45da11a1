"""What a compiler changed in a schema, where, and how much it matters.

Every change the compiler makes is one `Diagnostic`: a `Code`, the JSON pointer of the fragment
in the *original* schema, the fragment before and after, and a `Severity` fixed by the code:

- `cosmetic`: the same arguments reach the server after the round trip; only the form changed.
- `semantic`: the model may express less than the original allows (the compiled schema is
  narrower), or it is no longer held to the schema (strict mode fell back to plain).
- `lossy`: the compiled schema accepts arguments the original rejects; they are caught when the
  arguments are validated against the original schema before the call.
- `fatal`: the tool cannot be offered to this target at all (it is left out of the request).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

FRAGMENT_CHARS = 400  # a fragment longer than this (compact JSON) is shown with its inner containers elided


class Severity(StrEnum):
    COSMETIC = "cosmetic"
    SEMANTIC = "semantic"
    LOSSY = "lossy"
    FATAL = "fatal"


class Code(StrEnum):
    # cosmetic: same arguments after the round trip
    META_REMOVED = "meta-removed"  # $schema, $id, $comment, $anchor: no validation meaning
    UNKNOWN_KEYWORD_REMOVED = "unknown-keyword-removed"  # a keyword JSON Schema ignores
    DRAFT_UPGRADED = "draft-upgraded"  # a draft-04/07 form written the 2020-12 way
    REF_SIBLINGS_MERGED = "ref-siblings-merged"  # {"$ref", ...siblings}: the intersection, written out
    ALL_OF_MERGED = "all-of-merged"  # allOf branches written as one schema
    ROOT_OBJECT_ADDED = "root-object-added"  # the root said nothing or more than object: arguments are objects
    CONST_AS_ENUM = "const-as-enum"
    ONE_OF_AS_ANY_OF = "one-of-as-any-of"  # the branches cannot overlap, so anyOf means the same
    TYPE_LIST_SPLIT = "type-list-split"  # ["string", "integer"] as anyOf branches
    NULLABLE_REWRITTEN = "nullable-rewritten"  # a null union as OpenAPI's `nullable`
    OPTIONAL_MADE_NULLABLE = "optional-made-nullable"  # required and nullable; the null is removed on the way back
    ANNOTATION_MOVED = "annotation-moved"  # default, examples or title moved into the description
    ANNOTATION_REMOVED = "annotation-removed"  # an annotation the target does not take
    SIBLINGS_DISTRIBUTED = "siblings-distributed"  # keywords beside anyOf moved into each branch
    # semantic: narrower, or no longer enforced
    OBJECT_CLOSED = "object-closed"  # additionalProperties false: the model cannot add other keys
    TYPE_INFERRED = "type-inferred"  # a typeless schema with object (or array) keywords given that type
    OPTIONAL_NULL_KEPT = "optional-null-kept"  # optional and nullable: the model sends null, never leaves it out
    STRICT_FALLBACK = "strict-fallback"  # strict mode cannot express the schema: compiled plain
    STRICT_BUDGET = "strict-budget"  # the request's strict budget is spent: compiled plain
    ANY_VALUE = "any-value"  # {} or a schema with no type: strict mode cannot express it
    FREE_FORM_OBJECT = "free-form-object"  # an object with no declared properties
    MAP_OBJECT = "map-object"  # additionalProperties or patternProperties with a schema
    TUPLE = "tuple"  # prefixItems
    RECURSION = "recursion"  # a recursive $ref
    ROOT_UNION = "root-union"  # anyOf/oneOf/allOf at the root
    UNMERGED_ALL_OF = "unmerged-all-of"  # allOf whose branches conflict
    LIMIT_EXCEEDED = "limit-exceeded"  # the target's size limits
    # lossy: the compiled schema accepts more; validation against the original catches it
    CONSTRAINT_DROPPED = "constraint-dropped"  # kept in the description as a hint
    FORMAT_DROPPED = "format-dropped"
    ONE_OF_WIDENED = "one-of-widened"  # oneOf as anyOf where branches may overlap
    ROOT_UNION_FLATTENED = "root-union-flattened"  # one object with every branch's properties
    ALL_OF_CONFLICT = "all-of-conflict"  # allOf merged with a conflicting keyword dropped
    ENUM_DROPPED = "enum-dropped"  # an enum the target cannot write (Gemini: strings only)
    RECURSION_UNROLLED = "recursion-unrolled"  # a recursive $ref cut after a few levels
    UNRESOLVED_REF = "unresolved-ref"  # a $ref outside the document: accepts anything
    MAP_DESCRIBED = "map-described"  # a map the target cannot write, described instead
    TUPLE_FLATTENED = "tuple-flattened"  # prefixItems as items of any of the positions' schemas
    REQUIRED_UNDECLARED = "required-undeclared"  # a required name with no property, removed
    # fatal: not offered to this target
    TOO_LARGE = "too-large"
    TOO_DEEP = "too-deep"
    CIRCULAR_REF = "circular-ref"  # a $ref cycle with nothing in between: no value can satisfy it
    NOT_AN_OBJECT = "not-an-object"  # the root cannot be an object: no arguments fit
    INVALID_SCHEMA = "invalid-schema"


_SEMANTIC = {
    Code.OBJECT_CLOSED,
    Code.TYPE_INFERRED,
    Code.OPTIONAL_NULL_KEPT,
    Code.STRICT_FALLBACK,
    Code.STRICT_BUDGET,
    Code.ANY_VALUE,
    Code.FREE_FORM_OBJECT,
    Code.MAP_OBJECT,
    Code.TUPLE,
    Code.RECURSION,
    Code.ROOT_UNION,
    Code.UNMERGED_ALL_OF,
    Code.LIMIT_EXCEEDED,
}
_LOSSY = {
    Code.CONSTRAINT_DROPPED,
    Code.FORMAT_DROPPED,
    Code.ONE_OF_WIDENED,
    Code.ROOT_UNION_FLATTENED,
    Code.ALL_OF_CONFLICT,
    Code.ENUM_DROPPED,
    Code.RECURSION_UNROLLED,
    Code.UNRESOLVED_REF,
    Code.MAP_DESCRIBED,
    Code.TUPLE_FLATTENED,
    Code.REQUIRED_UNDECLARED,
}
_FATAL = {Code.TOO_LARGE, Code.TOO_DEEP, Code.CIRCULAR_REF, Code.NOT_AN_OBJECT, Code.INVALID_SCHEMA}

STRICT_BLOCKERS = frozenset(
    {
        Code.ANY_VALUE,
        Code.FREE_FORM_OBJECT,
        Code.MAP_OBJECT,
        Code.TUPLE,
        Code.RECURSION,
        Code.ROOT_UNION,
        Code.UNMERGED_ALL_OF,
        Code.LIMIT_EXCEEDED,
    }
)
"""Codes that make strict mode impossible for a schema: the tool is compiled plain instead."""


def severity_of(code: Code) -> Severity:
    if code in _FATAL:
        return Severity.FATAL
    if code in _LOSSY:
        return Severity.LOSSY
    if code in _SEMANTIC:
        return Severity.SEMANTIC
    return Severity.COSMETIC


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One change: `pointer` is where in the original schema; `before`/`after` the fragments (None: absent)."""

    code: Code
    pointer: str
    before: Any
    after: Any
    detail: str = ""

    @property
    def severity(self) -> Severity:
        return severity_of(self.code)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code.value,
            "severity": self.severity.value,
            "pointer": self.pointer,
            "before": clip(self.before),
            "after": clip(self.after),
            "detail": self.detail,
        }

    def line(self) -> str:
        """`lossy constraint-dropped at /properties/q: maxLength 100 (kept as a hint)`"""
        where = self.pointer or "/"
        return f"{self.severity.value} {self.code.value} at {where}" + (f": {self.detail}" if self.detail else "")


def clip(fragment: Any, limit: int = FRAGMENT_CHARS) -> Any:
    """`fragment`, or when its JSON is over `limit` characters, its top level with inner containers elided."""
    if fragment is None or len(json.dumps(fragment, ensure_ascii=False, default=str)) <= limit:
        return fragment
    if isinstance(fragment, dict):
        return {key: ("…" if isinstance(value, dict | list) else value) for key, value in fragment.items()}
    if isinstance(fragment, list):
        return [("…" if isinstance(value, dict | list) else value) for value in fragment[:20]]
    return str(fragment)[:limit] + "…"


def pointer(base: str, *tokens: str | int) -> str:
    """The JSON pointer `base` extended by `tokens`, each escaped (RFC 6901)."""
    parts = [str(token).replace("~", "~0").replace("/", "~1") for token in tokens]
    return base + "".join(f"/{part}" for part in parts)
