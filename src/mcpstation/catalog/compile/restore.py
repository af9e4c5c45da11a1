"""Arguments on their way back: the nulls OpenAI strict mode made the model send are removed.

Strict mode makes every property required and an optional one nullable, so a model that means
"left out" sends `null`. The compiler records where it added those nulls (pointers into the
compiled schema); here the arguments are walked along the compiled schema and a `null` at such a
place is dropped, so the server sees the property left out, as the original schema allows. Any
other value, and a null the original schema accepts, is passed on as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcpstation.catalog.compile._merge import json_key, type_set
from mcpstation.catalog.compile.diagnostics import pointer

MAX_RESTORE_DEPTH: Final = 64  # levels of arguments walked; deeper values pass on as they are

_JSON_TYPE = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}


def strip_added_nulls(arguments: Mapping[str, Any], schema: Mapping[str, Any], added: frozenset[str]) -> dict[str, Any]:
    """`arguments` with every null at a pointer in `added` removed (a new dict; the input is not changed)."""
    if not added:
        return dict(arguments)
    walker = _Walker(schema, added)
    result = walker.walk(dict(arguments), schema, "", 0)
    return result if isinstance(result, dict) else dict(arguments)


class _Walker:
    def __init__(self, root: Mapping[str, Any], added: frozenset[str]) -> None:
        self.defs: Mapping[str, Any] = root.get("$defs") or {}
        self.added = added

    def resolve(self, schema: Mapping[str, Any], at: str) -> tuple[Mapping[str, Any], str]:
        for _ in range(MAX_RESTORE_DEPTH):
            ref = schema.get("$ref")
            if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
                break
            name = ref.removeprefix("#/$defs/")
            body = self.defs.get(name)
            if not isinstance(body, Mapping):
                break
            schema, at = body, pointer("", "$defs", name)
        return schema, at

    def walk(self, value: Any, schema: Mapping[str, Any], at: str, depth: int) -> Any:
        if depth > MAX_RESTORE_DEPTH or not isinstance(schema, Mapping):
            return value
        schema, at = self.resolve(schema, at)
        branches = schema.get("anyOf")
        if isinstance(branches, list) and isinstance(value, dict | list):
            return self.branch(value, branches, at, depth)
        if isinstance(value, dict):
            properties = schema.get("properties") or {}
            out: dict[str, Any] = {}
            for key, item in value.items():
                here = pointer(at, "properties", key)
                if item is None and here in self.added:
                    continue
                out[key] = self.walk(item, properties[key], here, depth + 1) if key in properties else item
            return out
        if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
            return [self.walk(item, schema["items"], pointer(at, "items"), depth + 1) for item in value]
        return value

    def branch(self, value: Any, branches: list[Any], at: str, depth: int) -> Any:
        """The value walked along every branch it fits; used only when they all agree."""
        results = [
            self.walk(value, branch, pointer(at, "anyOf", index), depth + 1)
            for index, branch in enumerate(branches)
            if isinstance(branch, Mapping) and self.fits(value, branch, at)
        ]
        if results and all(json_key(result) == json_key(results[0]) for result in results):
            return results[0]
        return value

    def fits(self, value: Any, schema: Mapping[str, Any], at: str) -> bool:
        schema, _ = self.resolve(schema, at)
        types = type_set(dict(schema))
        kind = _JSON_TYPE.get(type(value), "number")
        if types is not None and kind not in types and not (kind == "number" and "integer" in types):
            return False
        if isinstance(value, dict) and schema.get("additionalProperties") is False:
            return set(value) <= set(schema.get("properties") or {})
        return True
