"""The intersection of two schemas written as one: how `allOf` and a `$ref`'s siblings are compiled.

`intersect(a, b)` accepts exactly what both accept, or says it cannot be written without
`allOf` (a conflict: two patterns, two formats, two unions). With `lossy=True` it writes it anyway:
the conflicting keywords of `b` are dropped and named, so the result accepts more than both do.
Annotations (description, title, default...) are taken from `a` first: callers pass the more
specific schema (the siblings of a `$ref`) as `a`. Neither input is changed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mcpstation.catalog.compile._keywords import ANNOTATIONS

_TAKE_MAX = frozenset({"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"})
_TAKE_MIN = frozenset({"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"})


@dataclass(slots=True)
class Merged:
    schema: Any  # a schema dict, or False where nothing fits
    conflicts: list[str] = field(default_factory=list)


def json_key(value: Any) -> str:
    """A key equal for equal JSON values (so `1` and `true` differ, as JSON Schema says they do)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def type_set(schema: dict[str, Any]) -> set[str] | None:
    """The schema's `type` as a set; None when it has none (every type)."""
    value = schema.get("type")
    if value is None:
        return None
    return {value} if isinstance(value, str) else {str(item) for item in value}


def _types_meet(a: set[str], b: set[str]) -> list[str]:
    both = a & b
    if ("integer" in a and "number" in b) or ("number" in a and "integer" in b):
        both.add("integer")
    order = ("object", "array", "string", "number", "integer", "boolean", "null")
    return [name for name in order if name in both]


def intersect(a: dict[str, Any], b: dict[str, Any], *, lossy: bool = False) -> Merged | None:
    """One schema accepting what `a` and `b` both accept; None when there is a conflict and not `lossy`."""
    if "$ref" in a or "$ref" in b:
        return Merged(dict(a), ["$ref"]) if lossy else None
    out = dict(a)
    conflicts: list[str] = []
    for key, right in b.items():
        if key not in out:
            out[key] = right
            continue
        left = out[key]
        if json_key(left) == json_key(right) or key in ANNOTATIONS:
            continue
        merged = _keyword(key, left, right, lossy=lossy)
        if merged is None:
            if not lossy:
                return None
            conflicts.append(key)
        else:
            out[key], inner = merged
            conflicts.extend(f"{key}/{path}" for path in inner)
    if not _close_properties(out, a, b, lossy=lossy, conflicts=conflicts):
        return None
    if "const" in out and "enum" in out:
        if json_key(out["const"]) in {json_key(value) for value in out["enum"]}:
            del out["enum"]
        elif lossy:
            del out["enum"]
            conflicts.append("enum")
        else:
            return None
    return Merged(out, conflicts)


def _keyword(key: str, left: Any, right: Any, *, lossy: bool) -> tuple[Any, list[str]] | None:
    """The two values of `key` as one; None on a conflict."""
    if key in _TAKE_MAX and _numbers(left, right):
        return max(left, right), []
    if key in _TAKE_MIN and _numbers(left, right):
        return min(left, right), []
    if key == "type":
        left_set = {left} if isinstance(left, str) else set(left)
        right_set = {right} if isinstance(right, str) else set(right)
        both = _types_meet(left_set, right_set)
        if not both:
            return None
        return (both[0] if len(both) == 1 else both), []
    if key == "enum" and isinstance(left, list) and isinstance(right, list):
        keys = {json_key(value) for value in right}
        kept = [value for value in left if json_key(value) in keys]
        return (kept, []) if kept else None
    if key == "required" and isinstance(left, list) and isinstance(right, list):
        return [*left, *(name for name in right if name not in left)], []
    if key == "uniqueItems":
        return bool(left) or bool(right), []
    if key == "not" and isinstance(left, dict) and isinstance(right, dict):
        return {"anyOf": [left, right]}, []  # not L and not R: not (L or R)
    if key in ("properties", "dependentSchemas") and isinstance(left, dict) and isinstance(right, dict):
        out = dict(left)
        inner: list[str] = []
        for name, schema in right.items():
            if name not in out:
                out[name] = schema
                continue
            merged = _schemas(out[name], schema, lossy=lossy)
            if merged is None:
                return None
            out[name] = merged.schema
            inner.extend(f"{name}/{path}" for path in merged.conflicts)
        return out, inner
    if key == "dependentRequired" and isinstance(left, dict) and isinstance(right, dict):
        out = {name: list(names) for name, names in left.items()}
        for name, names in right.items():
            out[name] = [*out.get(name, []), *(item for item in names if item not in out.get(name, []))]
        return out, []
    if key in ("items", "additionalProperties", "contains", "propertyNames", "unevaluatedProperties"):
        merged = _schemas(left, right, lossy=lossy)
        return None if merged is None else (merged.schema, merged.conflicts)
    return None


def _schemas(left: Any, right: Any, *, lossy: bool) -> Merged | None:
    """Two subschemas (booleans allowed) as one."""
    if left is False or right is False:
        return Merged(False)
    if left is True or left == {}:
        return Merged(right)
    if right is True or right == {}:
        return Merged(left)
    if isinstance(left, dict) and isinstance(right, dict):
        return intersect(left, right, lossy=lossy)
    return None


def _numbers(left: Any, right: Any) -> bool:
    return all(isinstance(value, int | float) and not isinstance(value, bool) for value in (left, right))


def _close_properties(
    out: dict[str, Any], a: dict[str, Any], b: dict[str, Any], *, lossy: bool, conflicts: list[str]
) -> bool:
    """Apply each side's `additionalProperties` to the properties only the other side declares.

    `{"properties": {"a"}, "additionalProperties": false}` and `{"properties": {"b"}}` together
    allow no `b`: it is removed (and when it is required, nothing fits: a conflict).
    """
    for this, other in ((a, b), (b, a)):
        extra = this.get("additionalProperties")
        if extra is None or extra is True or extra == {}:
            continue
        if "patternProperties" in this:
            if not lossy:
                return False
            conflicts.append("patternProperties")
            continue
        declared = set(this.get("properties") or {})
        newcomers = [name for name in (other.get("properties") or {}) if name not in declared]
        if not newcomers:
            continue
        properties = dict(out.get("properties") or {})
        for name in newcomers:
            if extra is False:
                properties.pop(name, None)
                if name in (out.get("required") or []):
                    if not lossy:
                        return False
                    conflicts.append(f"required/{name}")
            else:
                merged = _schemas(properties.get(name, {}), extra, lossy=lossy)
                if merged is None:
                    return False
                properties[name] = merged.schema
        out["properties"] = properties
    return True
