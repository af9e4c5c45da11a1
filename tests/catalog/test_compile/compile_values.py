"""Hypothesis strategies for the values a compiled schema accepts, and the validators to check them with.

`values(schema)` builds arguments from a compiled schema's structure (types, properties, items,
unions, enums, bounds, patterns); the tests keep only those the compiled schema's validator
accepts, so a weak spot here can only make a test see fewer values, never a wrong one.
Gemini's OpenAPI subset (`nullable`) is read as the JSON Schema it means (`as_json_schema`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
from hypothesis import strategies as st
from referencing import Registry
from referencing.exceptions import NoSuchResource

MAX_DEPTH = 5  # levels of values built; below, only what is required
GIVE_UP_DEPTH = 12  # levels past which nothing is built (a required recursion with no way out)
MAX_ITEMS = 4

_SCALARS = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8)
ANY_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _no_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)


NO_NETWORK = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


def validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """The validator the schema's `$schema` names (2020-12 when none), never fetching anything."""
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, registry=NO_NETWORK)


def as_json_schema(schema: Any) -> Any:
    """An OpenAPI-subset schema (Gemini `parameters`) as JSON Schema: `nullable: true` as a null union."""
    if isinstance(schema, list):
        return [as_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: as_json_schema(value) for key, value in schema.items() if key != "nullable"}
    if schema.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    return _Builder(schema).build(schema, 0)


class _Builder:
    def __init__(self, root: dict[str, Any]) -> None:
        self.defs = root.get("$defs") or {}
        self.root = root

    def build(self, schema: Any, depth: int) -> st.SearchStrategy[Any]:
        if depth > GIVE_UP_DEPTH:
            return st.nothing()
        if schema is True or schema == {}:
            return ANY_JSON
        if not isinstance(schema, dict):
            return st.nothing()
        if "$ref" in schema:
            ref = schema["$ref"]
            target = self.root if ref == "#" else self.defs.get(ref.rsplit("/", 1)[-1], {})
            return self.build({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, depth + 1)
        if "const" in schema:
            return st.just(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return st.sampled_from(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                rest = {k: v for k, v in schema.items() if k != key}
                return st.one_of([self.build(_meet(rest, branch), depth) for branch in schema[key]])
        if isinstance(schema.get("allOf"), list) and schema["allOf"]:
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            merged = rest
            for branch in schema["allOf"]:
                merged = _meet(merged, branch)
            return self.build(merged, depth)
        kinds = schema.get("type")
        if kinds is None:
            if "properties" in schema:
                kinds = "object"
            elif "items" in schema or "prefixItems" in schema:
                kinds = "array"
            else:
                return ANY_JSON
        if isinstance(kinds, list):
            return st.one_of([self.build({**schema, "type": kind}, depth) for kind in kinds])
        return self.typed(kinds, schema, depth)

    def typed(self, kind: str, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
        if kind == "null":
            return st.none()
        if kind == "boolean":
            return st.booleans()
        if kind == "integer":
            low, high = _bounds(schema, integer=True)
            return st.integers(low, high)
        if kind == "number":
            low, high = _bounds(schema, integer=False)
            return st.integers(math.ceil(low), math.floor(high)) | st.floats(
                low, high, allow_nan=False, allow_infinity=False
            )
        if kind == "string":
            return self.string(schema)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "object":
            return self.object(schema, depth)
        return st.nothing()

    def string(self, schema: dict[str, Any]) -> st.SearchStrategy[str]:
        low = schema.get("minLength", 0)
        high = schema.get("maxLength", max(low, 12))
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                return st.from_regex(pattern).filter(lambda text: low <= len(text) <= high)
            except Exception:  # boundary: a pattern Python's re cannot read: plain text, filtered by the validator
                pass
        return st.text(st.characters(codec="utf-8"), min_size=low, max_size=high)

    def array(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[list[Any]]:
        low = schema.get("minItems", 0)
        high = min(schema.get("maxItems", MAX_ITEMS), max(low, MAX_ITEMS))
        if depth >= MAX_DEPTH and low == 0:
            return st.just([])
        if depth >= MAX_DEPTH:
            high = low
        prefix = schema.get("prefixItems")
        items = schema.get("items", {})
        if isinstance(prefix, list):
            head = st.tuples(*[self.build(item, depth + 1) for item in prefix]).map(list)
            if items is False:
                return head
            return st.tuples(head, st.lists(self.build(items, depth + 1), max_size=1)).map(
                lambda pair: pair[0] + pair[1]
            )
        unique = bool(schema.get("uniqueItems"))
        element = self.build(items, depth + 1)
        if unique:
            return st.lists(element, min_size=low, max_size=high, unique_by=_json_identity)
        return st.lists(element, min_size=low, max_size=high)

    def object(self, schema: dict[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
        properties: dict[str, Any] = schema.get("properties") or {}
        required = [name for name in schema.get("required") or [] if isinstance(name, str)]
        must = {name: self.build(properties.get(name, {}), depth + 1) for name in required}
        optional = (
            {}
            if depth >= MAX_DEPTH
            else {name: self.build(sub, depth + 1) for name, sub in properties.items() if name not in must}
        )
        fixed = st.fixed_dictionaries(must, optional=optional)
        extra = schema.get("additionalProperties", True)
        if depth >= MAX_DEPTH or extra is False:
            return fixed
        extra_values = ANY_JSON if extra is True else self.build(extra, depth + 1)
        more = st.dictionaries(st.text(max_size=6).filter(lambda key: key not in properties), extra_values, max_size=2)
        return st.tuples(fixed, more).map(lambda pair: {**pair[1], **pair[0]})


def _meet(base: dict[str, Any], branch: Any) -> Any:
    if not isinstance(branch, dict):
        return branch
    if "$ref" in branch:
        return branch
    merged = {**base, **branch}
    if "properties" in base and "properties" in branch:
        merged["properties"] = {**base["properties"], **branch["properties"]}
    return merged


def _bounds(schema: dict[str, Any], *, integer: bool) -> tuple[float, float]:
    low: float = schema.get("minimum", -10_000)
    high: float = schema.get("maximum", 10_000)
    if "exclusiveMinimum" in schema and isinstance(schema["exclusiveMinimum"], int | float):
        low = max(low, schema["exclusiveMinimum"] + (1 if integer else 1e-6))
    if "exclusiveMaximum" in schema and isinstance(schema["exclusiveMaximum"], int | float):
        high = min(high, schema["exclusiveMaximum"] - (1 if integer else 1e-6))
    if integer:
        return math.ceil(low), math.floor(high)
    return low, high


def _json_identity(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
