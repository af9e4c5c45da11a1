"""The shared first pass: one input schema as a bounded, self-contained 2020-12 tree every target starts from.

- Sizes are bounded before anything else is read (`measure`).
- Boolean schemas become objects (`true`: `{}`, `false`: `{"not": {}}`), except `additionalProperties`,
  `items` and `unevaluated*`, where `false` keeps its usual spelling.
- Draft-04/07 forms are written the 2020-12 way (tuple `items`, boolean exclusive bounds, `dependencies`).
- Local `$ref`s are inlined (the same normalized node is shared, never copied); a `$ref` back into
  a definition being expanded stays a marker `{"$ref": "#/..."}` (recursion) and its body is kept in
  `Normalized.recursive`. A cycle that passes no property or item is circular: fatal.
- A `$ref`'s siblings and `allOf` branches are merged into one schema where the intersection can be
  written exactly; what cannot stays in `allOf`.
- Meta keywords (`$schema`, `$id`, ...) are removed.

Nodes are never changed after they are built; `sources` maps each node (by `id`) to its pointer
in the original schema, for diagnostics.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

from mcpstation.catalog.compile._keywords import (
    DEFINITIONS,
    META,
    SCHEMA_LISTS,
    SCHEMA_MAPS,
    SCHEMA_VALUED,
    STRUCTURAL,
)
from mcpstation.catalog.compile._merge import intersect
from mcpstation.catalog.compile.diagnostics import Code, Diagnostic, pointer

MAX_SCHEMA_NODES: Final = 10_000  # objects and arrays in one input schema (the largest real tool seen has ~600)
MAX_SCHEMA_DEPTH: Final = 64  # containers nested in one input schema
MAX_SCHEMA_CHARS: Final = 1_000_000  # compact JSON of one input schema
MAX_EXPANDED_DEPTH: Final = 128  # schemas nested once `$ref`s are inlined (a chain of definitions stops here)
MAX_EXPANDED_NODES: Final = 20_000  # schema nodes once `$ref`s are inlined (a reference bomb stops here)

_BOOLEAN_KEPT = frozenset({"additionalProperties", "items", "unevaluatedProperties", "unevaluatedItems"})


class Fatal(Exception):
    """The schema cannot be compiled for any target; carries the diagnostic that says why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        super().__init__(diagnostic.detail)
        self.diagnostic = diagnostic


@dataclass(slots=True)
class Normalized:
    root: dict[str, Any]
    recursive: dict[str, dict[str, Any]] = field(default_factory=dict)  # "#/..." -> body of a recursive definition
    sources: dict[int, tuple[object, str]] = field(default_factory=dict)  # id -> (the node, kept alive; its pointer)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def source(self, node: object) -> str:
        entry = self.sources.get(id(node))
        return entry[1] if entry is not None and entry[0] is node else ""

    def register(self, node: object, at: str) -> None:
        """Remember where `node` came from (its first registration wins)."""
        entry = self.sources.get(id(node))
        if entry is None or entry[0] is not node:
            self.sources[id(node)] = (node, at)


def measure(schema: object) -> None:
    """Check the input's size before it is walked.

    Raises:
        Fatal: more than `MAX_SCHEMA_NODES` containers, deeper than `MAX_SCHEMA_DEPTH`, or longer
            than `MAX_SCHEMA_CHARS` as JSON.
    """
    nodes = 0
    stack: list[tuple[object, int]] = [(schema, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise Fatal(Diagnostic(Code.TOO_LARGE, "", None, None, f"more than {MAX_SCHEMA_NODES} schema nodes"))
        if depth > MAX_SCHEMA_DEPTH:
            raise Fatal(Diagnostic(Code.TOO_DEEP, "", None, None, f"nested deeper than {MAX_SCHEMA_DEPTH} levels"))
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)
    try:
        size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False))
    except (TypeError, ValueError) as exc:
        raise Fatal(Diagnostic(Code.INVALID_SCHEMA, "", None, None, f"not JSON: {exc}")) from None
    if size > MAX_SCHEMA_CHARS:
        raise Fatal(
            Diagnostic(Code.TOO_LARGE, "", None, None, f"{size:,} characters of JSON (at most {MAX_SCHEMA_CHARS:,})")
        )


def normalize(schema: Mapping[str, Any]) -> Normalized:
    """The normalized tree of `schema` (a JSON object); the input is not changed.

    Raises:
        Fatal: too large or deep (before or after `$ref`s are inlined), a circular `$ref`, or not a schema.
    """
    measure(schema)
    if not isinstance(schema, Mapping):
        raise Fatal(Diagnostic(Code.INVALID_SCHEMA, "", None, None, "the schema is not a JSON object"))
    return _Normalizer(dict(schema)).run()


def copy_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: copy_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) for item in value]
    return value


class _Normalizer:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.out = Normalized(root={})
        self.memo: dict[str, dict[str, Any]] = {}
        self.expanding: dict[str, int] = {}  # "#/..." being expanded -> structural depth at its start
        self.anchors: dict[str, str] | None = None

    def run(self) -> Normalized:
        self.expanding["#"] = 0
        root = self.node(self.root, "", depth=0, structural=0)
        self.expanding.pop("#")
        if "#" in self.out.recursive:
            self.out.recursive["#"] = root
        self.out.root = root
        size = _expanded_size(root, {}) + sum(_expanded_size(body, {}) for body in self.out.recursive.values())
        if size > MAX_EXPANDED_NODES:
            raise Fatal(
                Diagnostic(
                    Code.TOO_LARGE,
                    "",
                    None,
                    None,
                    f"more than {MAX_EXPANDED_NODES:,} schema nodes once $refs are inlined",
                )
            )
        return self.out

    def note(self, code: Code, at: str, before: Any, after: Any, detail: str = "") -> None:
        self.out.diagnostics.append(Diagnostic(code, at, before, after, detail))

    # -- one schema ---------------------------------------------------------------------------------

    def schema(self, raw: Any, at: str, *, depth: int, structural: int, keyword: str = "") -> Any:
        """A subschema: booleans become objects except where `false` keeps its spelling."""
        if raw is True:
            return self._made({}, at) if keyword not in _BOOLEAN_KEPT else True
        if raw is False:
            return False if keyword in _BOOLEAN_KEPT else self._made({"not": {}}, at)
        if not isinstance(raw, Mapping):
            raise Fatal(
                Diagnostic(
                    Code.INVALID_SCHEMA,
                    at,
                    raw,
                    None,
                    f"a schema must be an object or a boolean, got {type(raw).__name__}",
                )
            )
        return self.node(raw, at, depth=depth, structural=structural)

    def _made(self, node: dict[str, Any], at: str) -> dict[str, Any]:
        self.out.register(node, at)
        return node

    def node(self, raw: Mapping[str, Any], at: str, *, depth: int, structural: int) -> dict[str, Any]:
        if depth > MAX_EXPANDED_DEPTH:
            raise Fatal(
                Diagnostic(
                    Code.TOO_DEEP,
                    at,
                    None,
                    None,
                    f"nested deeper than {MAX_EXPANDED_DEPTH} levels once $refs are inlined",
                )
            )
        raw = self._upgrade(raw, at)
        own: dict[str, Any] = {}
        for key, value in raw.items():
            if key in META:
                self.note(Code.META_REMOVED, pointer(at, key), {key: value}, None)
                continue
            if key in DEFINITIONS or key in ("$ref", "allOf"):
                continue
            inner = structural + 1 if key in STRUCTURAL else structural
            if key in SCHEMA_VALUED:
                own[key] = self.schema(value, pointer(at, key), depth=depth + 1, structural=inner, keyword=key)
            elif key in SCHEMA_LISTS and isinstance(value, list):
                own[key] = [
                    self.schema(item, pointer(at, key, index), depth=depth + 1, structural=inner)
                    for index, item in enumerate(value)
                ]
            elif key in SCHEMA_MAPS and isinstance(value, Mapping):
                own[key] = {
                    name: self.schema(item, pointer(at, key, name), depth=depth + 1, structural=inner)
                    for name, item in value.items()
                }
            elif key == "type" and isinstance(value, list) and len(value) == 1:
                own[key] = value[0]
            else:
                own[key] = copy_json(value)
        self._made(own, at)
        result = own
        if "$ref" in raw:
            result = self._with_ref(raw["$ref"], own, at, depth=depth, structural=structural)
        if isinstance(raw.get("allOf"), list):
            result = self._with_all_of(raw["allOf"], result, at, depth=depth, structural=structural)
        return result

    def _upgrade(self, raw: Mapping[str, Any], at: str) -> Mapping[str, Any]:
        """Draft-04/07 spellings rewritten in 2020-12 (a new mapping when anything changed)."""
        changed: dict[str, Any] | None = None

        def edit() -> dict[str, Any]:
            nonlocal changed
            if changed is None:
                changed = dict(raw)
            return changed

        if isinstance(raw.get("items"), list):
            out = edit()
            out["prefixItems"] = out.pop("items")
            if "additionalItems" in out:
                out["items"] = out.pop("additionalItems")
            self.note(Code.DRAFT_UPGRADED, pointer(at, "items"), {"items": raw["items"]}, {"prefixItems": raw["items"]})
        elif "additionalItems" in raw:
            edit().pop("additionalItems")  # ignored beside a schema-valued `items`, in every draft
            self.note(
                Code.DRAFT_UPGRADED, pointer(at, "additionalItems"), {"additionalItems": raw["additionalItems"]}, None
            )
        for bound, limit in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(raw.get(bound), bool):
                out = edit()
                flag = out.pop(bound)
                if flag and limit in out:
                    out[bound] = out.pop(limit)
                self.note(
                    Code.DRAFT_UPGRADED,
                    pointer(at, bound),
                    {bound: flag, limit: raw.get(limit)},
                    {k: out.get(k) for k in (bound, limit) if k in out} or None,
                )
        if isinstance(raw.get("dependencies"), Mapping):
            out = edit()
            dependencies = out.pop("dependencies")
            names = {key: value for key, value in dependencies.items() if isinstance(value, list)}
            schemas = {key: value for key, value in dependencies.items() if not isinstance(value, list)}
            if names:
                out["dependentRequired"] = names
            if schemas:
                out["dependentSchemas"] = schemas
            self.note(Code.DRAFT_UPGRADED, pointer(at, "dependencies"), {"dependencies": dependencies}, None)
        return changed if changed is not None else raw

    # -- $ref and allOf -----------------------------------------------------------------------------

    def _with_ref(self, ref: Any, siblings: dict[str, Any], at: str, *, depth: int, structural: int) -> dict[str, Any]:
        target = self._resolve_ref(ref, pointer(at, "$ref"), depth=depth, structural=structural)
        if not siblings:
            return target
        if "$ref" in target:  # a recursive marker: siblings can only sit beside it
            if all(key in ("description", "title") for key in siblings):
                return self._made({**target, **siblings}, at)
            return self._made({"allOf": [target, siblings]}, at)
        merged = intersect(siblings, target)
        if merged is None:
            return self._made({"allOf": [target, siblings]}, at)
        constraints = {
            key: value for key, value in siblings.items() if key not in ("description", "title", "default", "examples")
        }
        if constraints:
            self.note(
                Code.REF_SIBLINGS_MERGED,
                at,
                {"$ref": ref, **constraints},
                {key: merged.schema.get(key) for key in constraints if key in merged.schema},
                "the siblings of $ref and its target both apply",
            )
        return self._made(merged.schema, at)

    def _resolve_ref(self, ref: Any, at: str, *, depth: int, structural: int) -> dict[str, Any]:
        key = self._ref_key(ref)
        if key is None:
            self.note(Code.UNRESOLVED_REF, at, {"$ref": ref}, {}, "only references inside the schema are followed")
            return self._made({}, at)
        if key in self.expanding:
            if self.expanding[key] == structural:
                raise Fatal(
                    Diagnostic(
                        Code.CIRCULAR_REF,
                        at,
                        {"$ref": ref},
                        None,
                        f"{key} refers back to itself with nothing in between",
                    )
                )
            self.out.recursive.setdefault(key, {})
            return self._made({"$ref": key}, at)
        if key in self.memo:
            return self.memo[key]
        raw = self._lookup(key)
        if raw is None:
            self.note(Code.UNRESOLVED_REF, at, {"$ref": ref}, {}, f"{ref} points at nothing in the schema")
            return self._made({}, at)
        self.expanding[key] = structural
        try:
            made = self.schema(raw, key.removeprefix("#"), depth=depth + 1, structural=structural)
        finally:
            del self.expanding[key]
        body: dict[str, Any] = made if isinstance(made, dict) else self._made({}, at)
        self.memo[key] = body
        if key in self.out.recursive:
            self.out.recursive[key] = body
        return body

    def _ref_key(self, ref: Any) -> str | None:
        """`"#/json/pointer"` for a local reference (anchors resolved); None for any other."""
        if not isinstance(ref, str) or not ref.startswith("#"):
            return None
        fragment = unquote(ref[1:])
        if fragment == "" or fragment.startswith("/"):
            return "#" + fragment
        found = self._anchor(fragment)
        return None if found is None else "#" + found

    def _anchor(self, name: str) -> str | None:
        if self.anchors is None:
            self.anchors = {}
            stack: list[tuple[Any, str]] = [(self.root, "")]
            while stack:
                value, at = stack.pop()
                if isinstance(value, dict):
                    if isinstance(value.get("$anchor"), str):
                        self.anchors.setdefault(value["$anchor"], at)
                    stack.extend((item, pointer(at, key)) for key, item in value.items())
                elif isinstance(value, list):
                    stack.extend((item, pointer(at, index)) for index, item in enumerate(value))
        return self.anchors.get(name)

    def _lookup(self, key: str) -> Any:
        value: Any = self.root
        for token in key.removeprefix("#").split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(value, Mapping) and token in value:
                value = value[token]
            elif isinstance(value, list) and token.isdigit() and int(token) < len(value):
                value = value[int(token)]
            else:
                return None
        return value

    def _with_all_of(
        self, branches: list[Any], base: dict[str, Any], at: str, *, depth: int, structural: int
    ) -> dict[str, Any]:
        normalized = [
            self.schema(item, pointer(at, "allOf", index), depth=depth + 1, structural=structural)
            for index, item in enumerate(branches)
        ]
        merged_any = False
        left: list[Any] = []
        result = base
        for branch in normalized:
            merged = intersect(result, branch) if isinstance(branch, dict) else None
            if merged is None:
                left.append(branch)
            else:
                result, merged_any = merged.schema, True
        if merged_any:
            self.note(
                Code.ALL_OF_MERGED,
                pointer(at, "allOf"),
                {"allOf": branches},
                None if left else "merged into one schema",
            )
        if left:
            result = {**result, "allOf": left}
        return self._made(result, at)


def _expanded_size(node: Any, sizes: dict[int, int]) -> int:
    """Schema nodes under `node` once every shared (inlined) node is written out; counted on the
    shared tree in time linear in its size, so a reference bomb is measured without being built."""
    if not isinstance(node, dict | list):
        return 0
    known = sizes.get(id(node))
    if known is not None:
        return known
    children = node.values() if isinstance(node, dict) else node
    size = (1 if isinstance(node, dict) else 0) + sum(_expanded_size(child, sizes) for child in children)
    sizes[id(node)] = min(size, MAX_EXPANDED_NODES + 1)
    return sizes[id(node)]
