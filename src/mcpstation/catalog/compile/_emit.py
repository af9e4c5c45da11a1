"""The second pass: a normalized tree written in one target's subset, as its `Profile` says.

Each change is a diagnostic. In a strict profile, a change strict mode cannot make (a blocker)
marks the result `blocked`; the caller then compiles the plain twin instead. Output nodes are new
dicts: nothing of the normalized tree (or of the input) is shared with the result.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from mcpstation.catalog.compile._keywords import (
    ANNOTATIONS,
    ARRAY_KEYWORDS,
    BY_TYPE,
    CONSTRAINTS,
    KNOWN,
    OBJECT_KEYWORDS,
    SCHEMA_MAPS,
    SCHEMA_VALUED,
    TYPED,
)
from mcpstation.catalog.compile._merge import intersect, json_key, type_set
from mcpstation.catalog.compile._normalize import MAX_EXPANDED_DEPTH, MAX_EXPANDED_NODES, Fatal, Normalized
from mcpstation.catalog.compile._profile import Handling, Nulls, Profile
from mcpstation.catalog.compile.diagnostics import STRICT_BLOCKERS, Code, Diagnostic, pointer

RECURSION_UNROLL_LEVELS: Final = 3  # times a recursive definition is written out where the target has no $ref
_UNION_KEYS = ("anyOf", "oneOf", "allOf")
_HANDLED_HERE = frozenset(
    {"type", "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "nullable", "items", "prefixItems"}
    | {"properties", "required", "additionalProperties", "patternProperties"}
)
_OBJECT_STRUCTURE = frozenset({"properties", "required", "additionalProperties", "patternProperties"})
_ARRAY_STRUCTURE = frozenset({"items", "prefixItems"})


@dataclass(slots=True)
class Emitted:
    schema: dict[str, Any]
    diagnostics: list[Diagnostic]
    blocked: bool
    added_nulls: frozenset[str]
    optional: int = 0  # optional properties, at any depth
    unions: int = 0  # properties whose schema is a union (anyOf or a type list), at any depth


@dataclass(slots=True)
class _Context:
    depth: int = 0
    unroll: tuple[str, ...] = ()
    root: bool = False


@dataclass(slots=True)
class _Emitter:
    tree: Normalized
    profile: Profile
    diagnostics: list[Diagnostic] = field(default_factory=list)
    seen: set[tuple[Code, str, str]] = field(default_factory=set)
    blocked: bool = False
    added_nulls: set[str] = field(default_factory=set)
    defs: dict[str, dict[str, Any]] = field(default_factory=dict)
    def_names: dict[str, str] = field(default_factory=dict)
    nodes: int = 0
    optional: int = 0
    unions: int = 0

    # -- bookkeeping --------------------------------------------------------------------------------

    def note(self, code: Code, at: str, before: Any, after: Any, detail: str = "") -> None:
        if (code, at, detail) in self.seen:
            return
        self.seen.add((code, at, detail))
        self.diagnostics.append(Diagnostic(code, at, before, after, detail))
        if code in STRICT_BLOCKERS and self.profile.strict:
            self.blocked = True

    def src(self, node: dict[str, Any]) -> str:
        return self.tree.source(node)

    # -- the root -----------------------------------------------------------------------------------

    def run(self) -> Emitted:
        root = self._root(self.tree.root)
        schema = self.emit(root, "", _Context(root=True))
        if self.defs:
            schema["$defs"] = dict(sorted(self.defs.items()))
        if self.profile.limits is not None and not self.blocked:
            for diagnostic in self.profile.limits(schema):
                self.note(diagnostic.code, diagnostic.pointer, diagnostic.before, diagnostic.after, diagnostic.detail)
        return Emitted(schema, self.diagnostics, self.blocked, frozenset(self.added_nulls), self.optional, self.unions)

    def _root(self, node: dict[str, Any]) -> dict[str, Any]:
        at = self.src(node)
        if "$ref" in node:
            node = self.tree.recursive.get(node["$ref"], {})
        types = type_set(node)
        if types is not None and "object" not in types:
            raise Fatal(
                Diagnostic(Code.NOT_AN_OBJECT, at, {"type": node.get("type")}, None, "tool arguments are an object")
            )
        if any(key in node for key in _UNION_KEYS):
            if self.profile.strict:
                self.note(
                    Code.ROOT_UNION,
                    at,
                    {key: node[key] for key in _UNION_KEYS if key in node},
                    None,
                    "strict mode needs one object at the root",
                )
                return {key: value for key, value in node.items() if key not in _UNION_KEYS}
            node = self._flatten(node, at)
        if node.get("type") != "object":
            self.note(Code.ROOT_OBJECT_ADDED, at, {"type": node.get("type")}, {"type": "object"})
            node = {**node, "type": "object"}
        return node

    def _flatten(self, node: dict[str, Any], at: str) -> dict[str, Any]:
        """A root union as one object: every branch's properties, required only where all require it."""
        base = {key: value for key, value in node.items() if key not in _UNION_KEYS}
        before = {key: node[key] for key in _UNION_KEYS if key in node}
        for branch in node.get("allOf", []):
            merged = intersect(base, self._body(branch), lossy=True)
            if merged is not None:
                base = merged.schema
        for key in ("anyOf", "oneOf"):
            branches = [self._body(branch) for branch in node.get(key, [])]
            objects = [branch for branch in branches if (type_set(branch) or {"object"}) & {"object"}]
            if not branches:
                continue
            if not objects:
                raise Fatal(
                    Diagnostic(Code.NOT_AN_OBJECT, at, before, None, f"no branch of the root {key} is an object")
                )
            properties: dict[str, list[Any]] = {}
            for branch in objects:
                for name, schema in (branch.get("properties") or {}).items():
                    found = properties.setdefault(name, [])
                    if json_key(schema) not in {json_key(item) for item in found}:
                        found.append(schema)
            required = [
                name for name in properties if all(name in (branch.get("required") or []) for branch in objects)
            ]
            union: dict[str, Any] = {
                "properties": {
                    name: found[0] if len(found) == 1 else {"anyOf": found} for name, found in properties.items()
                }
            }
            if required:
                union["required"] = required
            if all(branch.get("additionalProperties") is False for branch in objects):
                union["additionalProperties"] = False
            merged = intersect(base, union, lossy=True)
            if merged is not None:
                base = merged.schema
        base["type"] = "object"
        self.note(
            Code.ROOT_UNION_FLATTENED,
            at,
            before,
            {"properties": sorted(base.get("properties") or {}), "required": base.get("required", [])},
            "one object with every branch's properties; which combinations are allowed is checked at the call",
        )
        return base

    def _body(self, node: Any) -> dict[str, Any]:
        if isinstance(node, dict) and "$ref" in node:
            return self.tree.recursive.get(node["$ref"], {})
        return node if isinstance(node, dict) else {}

    # -- one node -----------------------------------------------------------------------------------

    def emit(self, node: Any, out: str, ctx: _Context) -> dict[str, Any]:
        self.nodes += 1
        if self.nodes > MAX_EXPANDED_NODES:
            raise Fatal(
                Diagnostic(
                    Code.TOO_LARGE,
                    "",
                    None,
                    None,
                    f"more than {MAX_EXPANDED_NODES} schema nodes once $refs are inlined",
                )
            )
        if ctx.depth > MAX_EXPANDED_DEPTH:
            raise Fatal(
                Diagnostic(
                    Code.TOO_DEEP,
                    self.src(node) if isinstance(node, dict) else "",
                    None,
                    None,
                    f"nested deeper than {MAX_EXPANDED_DEPTH} levels",
                )
            )
        if not isinstance(node, dict):
            return {}
        if "$ref" in node:
            return self._ref(node, out, ctx)
        at = self.src(node)
        node = self._all_of(node, at, out, ctx)
        node = self._openapi_nulls(node, at)
        types = type_set(node)
        declared = node.get("type")
        ordered = [declared] if isinstance(declared, str) else list(declared or ())
        nonnull = [name for name in ordered if name != "null"]  # in the schema's order: output never depends on hashing
        if len(nonnull) > 1 and not self.profile.type_lists:
            return self._split(node, at, out, ctx, nonnull, nullable=types is not None and "null" in types)
        node = self._infer(node, at, types)
        types = type_set(node)
        result: dict[str, Any] = {}
        hints: dict[str, Any] = {}
        self._type(node, at, result, types)
        self._literals(node, at, result, hints)
        if ctx.root or _may_be(types, "object", node, _OBJECT_STRUCTURE):
            self._object(node, at, out, ctx, result, hints)
        if _may_be(types, "array", node, _ARRAY_STRUCTURE):
            self._array(node, at, out, ctx, result, hints, is_array=types is not None and "array" in types)
        self._unions(node, at, out, ctx, result)
        self._rest(node, at, out, ctx, result, hints)
        self._describe(result, hints)
        if self.profile.any_of_alone and "anyOf" in result and len(result) > 1:
            result = self._alone(result, at)
        return result

    def _child(self, node: Any, out: str, ctx: _Context, *tokens: str | int) -> dict[str, Any]:
        return self.emit(node, pointer(out, *tokens), _Context(ctx.depth + 1, ctx.unroll))

    # -- $ref (recursion) -----------------------------------------------------------------------------

    def _ref(self, node: dict[str, Any], out: str, ctx: _Context) -> dict[str, Any]:
        key = node["$ref"]
        at = self.src(node)
        body = self.tree.recursive.get(key, {})
        siblings = {name: value for name, value in node.items() if name != "$ref"}
        if self.profile.recursion is Handling.BLOCK:
            self.note(Code.RECURSION, at, {"$ref": key}, None, "the target takes no recursive schemas")
            return {}
        if self.profile.recursion is Handling.REWRITE:
            if ctx.unroll.count(key) >= RECURSION_UNROLL_LEVELS:
                self.note(
                    Code.RECURSION_UNROLLED,
                    at,
                    {"$ref": key},
                    {},
                    f"written out {RECURSION_UNROLL_LEVELS} levels deep; any value below",
                )
                return {"description": siblings.get("description", "Any value (nested too deep to describe).")}
            merged = {**body, **siblings}
            self.tree.register(merged, self.src(body))
            return self.emit(merged, out, _Context(ctx.depth + 1, (*ctx.unroll, key)))
        name = self._def_name(key, body, ctx)
        result: dict[str, Any] = {"$ref": f"#/$defs/{name}"}
        if siblings and self.profile.ref_siblings:
            result.update(siblings)
        elif siblings:
            self.note(Code.ANNOTATION_REMOVED, at, siblings, None, "the target takes nothing beside $ref")
        return result

    def _def_name(self, key: str, body: dict[str, Any], ctx: _Context) -> str:
        if key in self.def_names:
            return self.def_names[key]
        stem = re.sub(r"[^A-Za-z0-9_.-]", "_", key.rsplit("/", 1)[-1] if key != "#" else "root") or "def"
        name, count = stem, 1
        while name in self.defs:
            count += 1
            name = f"{stem}_{count}"
        self.def_names[key] = name
        self.defs[name] = {}
        self.defs[name] = self.emit(body, pointer("", "$defs", name), _Context(ctx.depth + 1, ctx.unroll))
        return name

    # -- allOf, nulls, type lists, inference --------------------------------------------------------

    def _all_of(self, node: dict[str, Any], at: str, out: str, ctx: _Context) -> dict[str, Any]:
        if "allOf" not in node or self.profile.all_of is Handling.KEEP:
            return node
        if self.profile.all_of is Handling.BLOCK:
            self.note(
                Code.UNMERGED_ALL_OF,
                at,
                {"allOf": node["allOf"]},
                None,
                "its branches conflict and strict mode has no allOf",
            )
            return {key: value for key, value in node.items() if key != "allOf"}
        result = {key: value for key, value in node.items() if key != "allOf"}
        dropped: list[str] = []
        for branch in node["allOf"]:
            merged = intersect(result, self._body(branch), lossy=True)
            if merged is not None:
                result = merged.schema
                dropped.extend(merged.conflicts)
        self.tree.register(result, at)
        self.note(
            Code.ALL_OF_CONFLICT,
            at,
            {"allOf": node["allOf"]},
            None,
            f"merged; dropped the conflicting {', '.join(dropped) or 'keywords'}",
        )
        return result

    def _openapi_nulls(self, node: dict[str, Any], at: str) -> dict[str, Any]:
        """OpenAPI targets: a null branch of anyOf becomes `nullable` (one remaining branch is merged in)."""
        if self.profile.nulls is not Nulls.OPENAPI or not isinstance(node.get("anyOf"), list):
            return node
        branches = node["anyOf"]
        others = [
            branch
            for branch in branches
            if not (isinstance(branch, dict) and branch.get("type") == "null" and len(branch) == 1)
        ]
        if len(others) == len(branches) or not others:
            return node
        rest = {key: value for key, value in node.items() if key != "anyOf"}
        merged = intersect(rest, self._body(others[0])) if len(others) == 1 else None
        result = merged.schema if merged is not None else {**rest, "anyOf": others}
        result = {**result, "nullable": True}
        self.tree.register(result, at)
        self.note(Code.NULLABLE_REWRITTEN, at, {"anyOf": branches}, {"nullable": True})
        return result

    def _split(
        self, node: dict[str, Any], at: str, out: str, ctx: _Context, nonnull: list[str], *, nullable: bool
    ) -> dict[str, Any]:
        """A list of types as anyOf branches, each with the keywords of its type."""
        common = {
            key: value for key, value in node.items() if key not in TYPED and key != "type" and key not in ANNOTATIONS
        }
        branches: list[dict[str, Any]] = []
        for name in nonnull:
            branch = {
                "type": name,
                **common,
                **{key: value for key, value in node.items() if key in BY_TYPE.get(name, ())},
            }
            self.tree.register(branch, at)
            branches.append(branch)
        if nullable:
            branches.append({"type": "null"})
        rewritten: dict[str, Any] = {key: value for key, value in node.items() if key in ANNOTATIONS}
        rewritten["anyOf"] = branches
        self.tree.register(rewritten, at)
        self.note(Code.TYPE_LIST_SPLIT, at, {"type": node["type"]}, {"anyOf": [{"type": b["type"]} for b in branches]})
        return self.emit(rewritten, out, ctx)

    def _infer(self, node: dict[str, Any], at: str, types: set[str] | None) -> dict[str, Any]:
        if types is not None or any(key in node for key in ("anyOf", "oneOf", "allOf", "enum", "const")):
            return node
        if not self.profile.infer_types:
            if not self.profile.any_value:
                self.note(Code.ANY_VALUE, at, _brief(node), None, "strict mode needs a type")
            return node
        for name, keywords in (("object", OBJECT_KEYWORDS), ("array", ARRAY_KEYWORDS | {"prefixItems"})):
            if any(key in node for key in keywords):
                self.note(Code.TYPE_INFERRED, at, _brief(node), {"type": name}, f"typeless, with {name} keywords")
                inferred = {"type": name, **node}
                self.tree.register(inferred, at)
                return inferred
        if not self.profile.any_value:
            self.note(Code.ANY_VALUE, at, _brief(node), None, "strict mode needs a type")
        return node

    def _type(self, node: dict[str, Any], at: str, result: dict[str, Any], types: set[str] | None) -> None:
        value = node.get("type")
        if value is None:
            if node.get("nullable") is True and self.profile.nulls is Nulls.OPENAPI:
                result["nullable"] = True
            return
        names = [value] if isinstance(value, str) else list(value)
        nonnull = [name for name in names if name != "null"]
        nullable = "null" in names or (node.get("nullable") is True and self.profile.nulls is Nulls.OPENAPI)
        if self.profile.nulls is Nulls.OPENAPI:
            if nonnull:
                result["type"] = nonnull[0] if len(nonnull) == 1 else nonnull
            else:
                result["type"] = "null"
            if nullable and nonnull:
                result["nullable"] = True
                if "null" in names:
                    self.note(Code.NULLABLE_REWRITTEN, at, {"type": value}, {"type": nonnull[0], "nullable": True})
            return
        result["type"] = value if isinstance(value, str) else list(value)

    # -- enum and const -----------------------------------------------------------------------------

    def _literals(self, node: dict[str, Any], at: str, result: dict[str, Any], hints: dict[str, Any]) -> None:
        values: list[Any] | None = None
        if "const" in node:
            if self.profile.const and not self.profile.string_enums:
                if self._literal_ok([node["const"]], at, "const", hints):
                    result["const"] = node["const"]
                return
            self.note(Code.CONST_AS_ENUM, pointer(at, "const"), {"const": node["const"]}, {"enum": [node["const"]]})
            values = [node["const"]]
            if "enum" in node:
                keys = {json_key(value) for value in node["enum"]}
                values = [value for value in values if json_key(value) in keys]
        elif isinstance(node.get("enum"), list):
            values = list(node["enum"])
        if values is None:
            return
        if self.profile.string_enums:
            strings = [value for value in values if value is not None]
            if all(isinstance(value, str) for value in strings) and strings:
                result["enum"] = strings
                if "type" not in result:
                    result["type"] = "string"
                if len(strings) < len(values) and self.profile.nulls is Nulls.OPENAPI:
                    result["nullable"] = True
                return
            self.note(
                Code.ENUM_DROPPED, pointer(at, "enum"), {"enum": values}, None, "the target takes string enums only"
            )
            hints["enum"] = values
            return
        if self._literal_ok(values, at, "enum", hints):
            result["enum"] = values

    def _literal_ok(self, values: list[Any], at: str, key: str, hints: dict[str, Any]) -> bool:
        if not self.profile.primitive_enums or all(not isinstance(value, dict | list) for value in values):
            return True
        self.note(
            Code.ENUM_DROPPED,
            pointer(at, key),
            {key: values},
            None,
            "the target takes enums of strings, numbers and booleans only",
        )
        hints[key] = values
        return False

    # -- objects ------------------------------------------------------------------------------------

    def _object(
        self, node: dict[str, Any], at: str, out: str, ctx: _Context, result: dict[str, Any], hints: dict[str, Any]
    ) -> None:
        profile = self.profile
        declared: dict[str, Any] = node.get("properties") or {}
        properties = {name: self._child(schema, out, ctx, "properties", name) for name, schema in declared.items()}
        required = [name for name in node.get("required") or [] if isinstance(name, str)]
        for name in declared:
            if name not in required:
                self.optional += 1
            if _is_union(declared[name]):
                self.unions += 1
        undeclared = [name for name in required if name not in declared]
        if undeclared:
            if profile.close_objects:
                self.note(
                    Code.ANY_VALUE,
                    pointer(at, "required"),
                    {"required": undeclared},
                    None,
                    "required but not declared: any value",
                )
            elif profile.string_enums:
                self.note(
                    Code.REQUIRED_UNDECLARED,
                    pointer(at, "required"),
                    {"required": undeclared},
                    None,
                    "required names with no property",
                )
                required = [name for name in required if name in declared]
        extra = node.get("additionalProperties")
        patterns = node.get("patternProperties")
        if profile.close_objects:
            if patterns or (isinstance(extra, dict) and extra):
                what = {"patternProperties": patterns} if patterns else {"additionalProperties": extra}
                self.note(Code.MAP_OBJECT, at, what, None, "strict mode closes every object")
            elif not declared and not ctx.root:
                self.note(Code.FREE_FORM_OBJECT, at, _brief(node), None, "strict mode needs the object's properties")
            elif extra is not False:
                self.note(Code.OBJECT_CLOSED, at, {"additionalProperties": extra}, {"additionalProperties": False})
        if declared or profile.close_objects or "properties" in node or ctx.root:
            result["properties"] = properties  # OpenAI refuses an object parameter schema without properties
        if profile.require_all:
            for name in declared:
                if name in required:
                    continue
                here = pointer(out, "properties", name)
                if self._accepts_null(properties[name]):
                    self.note(
                        Code.OPTIONAL_NULL_KEPT,
                        pointer(at, "properties", name),
                        None,
                        None,
                        "the model sends null instead of leaving it out",
                    )
                else:
                    properties[name] = _add_null(properties[name])
                    self.added_nulls.add(here)
                    self.note(
                        Code.OPTIONAL_MADE_NULLABLE,
                        pointer(at, "properties", name),
                        {"required": False},
                        {"required": True, "null": True},
                    )
            required = list(declared)
        if required or profile.require_all:
            result["required"] = required
        if profile.close_objects:
            result["additionalProperties"] = False
            return
        if extra is False:
            if profile.closed_false:
                result["additionalProperties"] = False
            else:
                self.note(
                    Code.CONSTRAINT_DROPPED,
                    pointer(at, "additionalProperties"),
                    {"additionalProperties": False},
                    None,
                    "the target cannot forbid other keys",
                )
        elif isinstance(extra, dict) and extra:
            if profile.maps is Handling.KEEP:
                result["additionalProperties"] = self._child(extra, out, ctx, "additionalProperties")
            else:
                self.note(
                    Code.MAP_DESCRIBED,
                    pointer(at, "additionalProperties"),
                    {"additionalProperties": extra},
                    None,
                    "described in the description",
                )
                hints["additionalProperties"] = extra
        elif extra is not None and profile.maps is Handling.KEEP and profile.closed_false:
            result["additionalProperties"] = True if extra is True else {}
        if patterns:
            if profile.maps is Handling.KEEP and profile.pattern_properties:
                result["patternProperties"] = {
                    key: self._child(value, out, ctx, "patternProperties", key) for key, value in patterns.items()
                }
            else:
                self.note(
                    Code.MAP_DESCRIBED,
                    pointer(at, "patternProperties"),
                    {"patternProperties": patterns},
                    None,
                    "described in the description",
                )
                hints["patternProperties"] = patterns

    def _accepts_null(self, schema: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
        """Whether `schema` (written or normalized) accepts null; a $ref is judged by its normalized body."""
        if "$ref" in schema:
            ref = str(schema["$ref"])
            key = next((key for key, name in self.def_names.items() if f"#/$defs/{name}" == ref), ref)
            body = self.tree.recursive.get(key)
            return body is not None and key not in seen and self._accepts_null(body, seen | {key})
        if "enum" in schema and None not in schema["enum"]:
            return False
        if "const" in schema and schema["const"] is not None:
            return False
        if "anyOf" in schema:
            return any(self._accepts_null(branch, seen) for branch in schema["anyOf"] if isinstance(branch, dict))
        types = type_set(schema)
        return types is None or "null" in types

    # -- arrays -------------------------------------------------------------------------------------

    def _array(
        self,
        node: dict[str, Any],
        at: str,
        out: str,
        ctx: _Context,
        result: dict[str, Any],
        hints: dict[str, Any],
        *,
        is_array: bool,
    ) -> None:
        prefix = node.get("prefixItems")
        items = node.get("items")
        if isinstance(prefix, list):
            if self.profile.tuples is Handling.KEEP:
                result["prefixItems"] = [
                    self._child(item, out, ctx, "prefixItems", index) for index, item in enumerate(prefix)
                ]
            elif self.profile.tuples is Handling.BLOCK:
                self.note(
                    Code.TUPLE, pointer(at, "prefixItems"), {"prefixItems": prefix}, None, "strict mode has no tuples"
                )
            else:
                positions = [*prefix, *([items] if isinstance(items, dict) else [])]
                unique: list[Any] = []
                for schema in positions:
                    if json_key(schema) not in {json_key(seen) for seen in unique}:
                        unique.append(schema)
                merged = unique[0] if len(unique) == 1 else {"anyOf": unique}
                self.tree.register(merged, pointer(at, "prefixItems"))
                result["items"] = self._child(merged, out, ctx, "items")
                if items is False:
                    result["maxItems"] = min(node.get("maxItems", len(prefix)), len(prefix))
                self.note(
                    Code.TUPLE_FLATTENED,
                    pointer(at, "prefixItems"),
                    {"prefixItems": prefix},
                    {"items": merged},
                    "each position may take any of the positions' schemas",
                )
                return
        if items is False:
            if self.profile.tuples is Handling.KEEP:
                result["items"] = False
            else:
                result["maxItems"] = len(prefix) if isinstance(prefix, list) else 0
        elif isinstance(items, dict):
            result["items"] = self._child(items, out, ctx, "items")
        elif is_array and self.profile.array_items:
            if not self.profile.any_value:
                self.note(Code.ANY_VALUE, pointer(at, "items"), None, None, "an array of any values")
            result["items"] = {}

    # -- unions -------------------------------------------------------------------------------------

    def _unions(self, node: dict[str, Any], at: str, out: str, ctx: _Context, result: dict[str, Any]) -> None:
        if isinstance(node.get("anyOf"), list):
            result["anyOf"] = [
                self._child(branch, out, ctx, "anyOf", index) for index, branch in enumerate(node["anyOf"])
            ]
        if isinstance(node.get("allOf"), list):  # kept: the profile writes allOf
            result["allOf"] = [
                self._child(branch, out, ctx, "allOf", index) for index, branch in enumerate(node["allOf"])
            ]
        one_of = node.get("oneOf")
        if not isinstance(one_of, list):
            return
        if self.profile.one_of:
            result["oneOf"] = [self._child(branch, out, ctx, "oneOf", index) for index, branch in enumerate(one_of)]
            return
        disjoint = _disjoint([self._body(branch) for branch in one_of])
        code = Code.ONE_OF_AS_ANY_OF if disjoint else Code.ONE_OF_WIDENED
        detail = "the branches cannot overlap" if disjoint else "a value matching two branches is accepted"
        if "anyOf" in result:
            self.note(Code.ONE_OF_WIDENED, pointer(at, "oneOf"), {"oneOf": one_of}, None, "dropped beside anyOf")
            return
        self.note(code, pointer(at, "oneOf"), {"oneOf": one_of}, {"anyOf": one_of}, detail)
        result["anyOf"] = [self._child(branch, out, ctx, "oneOf", index) for index, branch in enumerate(one_of)]

    def _alone(self, result: dict[str, Any], at: str) -> dict[str, Any]:
        """anyOf with no siblings: the siblings go into every branch (exact), the description too."""
        siblings = {key: value for key, value in result.items() if key != "anyOf"}
        branches: list[dict[str, Any]] = []
        for branch in result["anyOf"]:
            merged = intersect(siblings, branch, lossy=True)
            combined = merged.schema if merged is not None else branch
            if merged is not None and merged.conflicts:
                self.note(Code.ALL_OF_CONFLICT, at, siblings, None, f"kept the branch's {', '.join(merged.conflicts)}")
            if "description" in branch:
                combined["description"] = branch["description"]
            branches.append(combined)
        self.note(Code.SIBLINGS_DISTRIBUTED, at, sorted(siblings), None, "the target allows nothing beside anyOf")
        return {"anyOf": branches}

    # -- everything else ----------------------------------------------------------------------------

    def _rest(
        self, node: dict[str, Any], at: str, out: str, ctx: _Context, result: dict[str, Any], hints: dict[str, Any]
    ) -> None:
        profile = self.profile
        for key, value in node.items():
            if key in _HANDLED_HERE:
                continue
            here = pointer(at, key)
            if key in ANNOTATIONS:
                if key == "description" or profile.annotations is None or key in profile.annotations:
                    result[key] = value
                elif key in profile.moved:
                    hints[key] = value
                    self.note(Code.ANNOTATION_MOVED, here, {key: value}, None, "moved into the description")
                else:
                    self.note(Code.ANNOTATION_REMOVED, here, {key: value}, None)
                continue
            if key in CONSTRAINTS:
                kept = self._constraint_kept(key, value)
                if kept:
                    result[key] = self._constraint_value(key, value, out, ctx)
                else:
                    code = Code.FORMAT_DROPPED if key == "format" else Code.CONSTRAINT_DROPPED
                    self.note(code, here, {key: value}, None, "kept as a hint in the description")
                    hints[key] = value
                continue
            if key in KNOWN:
                continue
            if profile.keep_unknown:
                result[key] = value
            else:
                self.note(Code.UNKNOWN_KEYWORD_REMOVED, here, {key: value}, None)

    def _constraint_kept(self, key: str, value: Any) -> bool:
        profile = self.profile
        if key == "format":
            return profile.formats is None or value in profile.formats
        if profile.constraints is not None and key not in profile.constraints:
            return False
        if key == "pattern" and profile.pattern_ok is not None:
            return isinstance(value, str) and profile.pattern_ok(value)
        if key == "minItems" and profile.min_items_at_most is not None:
            return isinstance(value, int) and value <= profile.min_items_at_most
        return True

    def _constraint_value(self, key: str, value: Any, out: str, ctx: _Context) -> Any:
        if key in SCHEMA_VALUED and isinstance(value, dict):
            return self._child(value, out, ctx, key)
        if key in SCHEMA_MAPS and isinstance(value, dict):
            return {name: self._child(item, out, ctx, key, name) for name, item in value.items()}
        return value

    def _describe(self, result: dict[str, Any], hints: dict[str, Any]) -> None:
        if not hints:
            return
        text = (
            "{"
            + ", ".join(
                f"{key}: {json.dumps(value, ensure_ascii=False, separators=(',', ':'))}" for key, value in hints.items()
            )
            + "}"
        )
        description = result.get("description")
        result["description"] = f"{description}\n\n{text}" if description else text


def _may_be(types: set[str] | None, kind: str, node: dict[str, Any], structure: frozenset[str]) -> bool:
    """Whether `node` describes values of `kind`: it says so, or says no type and has `kind`'s keywords."""
    if types is not None:
        return kind in types
    return bool(structure & node.keys())


def _brief(node: dict[str, Any]) -> dict[str, Any]:
    return {key: ("…" if isinstance(value, dict | list) else value) for key, value in node.items()}


def _is_union(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kinds = schema.get("type")
    return "anyOf" in schema or "oneOf" in schema or (isinstance(kinds, list) and len(kinds) > 1)


def _add_null(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` that also accepts null. The type list, enum and anyOf each gain null, so the pointers
    of everything inside stay the same; a `$ref` is wrapped in an anyOf."""
    if "$ref" in schema:
        return {"anyOf": [schema, {"type": "null"}]}
    widened = dict(schema)
    kinds = widened.get("type")
    if kinds is not None:
        widened["type"] = [kinds, "null"] if isinstance(kinds, str) else [*kinds, "null"]
    if "enum" in widened:
        widened["enum"] = [*widened["enum"], None]
    if "anyOf" in widened:
        widened["anyOf"] = [*widened["anyOf"], {"type": "null"}]
    return widened


def _disjoint(branches: list[dict[str, Any]]) -> bool:
    """Whether no value can match two of `branches`: different types, or a required discriminator
    with different constants."""
    types = [type_set(branch) for branch in branches]
    if all(found is not None for found in types):
        expanded = [found | ({"integer"} if "number" in found else set()) for found in types if found is not None]
        if all(not (expanded[i] & expanded[j]) for i in range(len(expanded)) for j in range(i + 1, len(expanded))):
            return True
    literals = [_literal_set(branch) for branch in branches]
    if all(found is not None for found in literals):
        sets = [found for found in literals if found is not None]
        if all(not (sets[i] & sets[j]) for i in range(len(sets)) for j in range(i + 1, len(sets))):
            return True
    for name in (branches[0].get("properties") or {}) if branches else ():
        values = []
        for branch in branches:
            if name not in (branch.get("required") or []):
                break
            found = _literal_set((branch.get("properties") or {}).get(name, {}))
            if found is None:
                break
            values.append(found)
        else:
            if all(not (values[i] & values[j]) for i in range(len(values)) for j in range(i + 1, len(values))):
                return True
    return False


def _literal_set(schema: Any) -> set[str] | None:
    if not isinstance(schema, dict):
        return None
    if "const" in schema:
        return {json_key(schema["const"])}
    if isinstance(schema.get("enum"), list):
        return {json_key(value) for value in schema["enum"]}
    return None


def emit(tree: Normalized, profile: Profile) -> Emitted:
    """`tree` written in `profile`'s subset.

    Raises:
        Fatal: the root cannot be an object, or the written schema would be too large or deep.
    """
    return _Emitter(tree, profile).run()
