"""Typed Python stubs for tools, from their JSON Schemas: what the model reads and the type checker checks.

Each tool becomes a keyword-only `async def` whose parameters are the input schema's properties
(required ones without a default), nested objects become `TypedDict`s (optional keys
`NotRequired`), enums and consts `Literal`s, and the return type comes from the output schema
when there is one, else `Any` (the tool's JSON, decoded, or its text). The public name and server
stay in the docstring. Rendering is pure and deterministic: the same tools give the same text, so
a description built from it keeps the model's prompt cache.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any

from mcpstation.catalog import CatalogTool
from mcpstation.codemode.names import ToolNames

MAX_DEPTH = 8  # nesting rendered before a schema becomes `Any`
MAX_DOC_CHARS = 300  # of a tool's description in its docstring
MAX_PARAM_DOC_CHARS = 120  # of a parameter's description

_SCALARS = {"string": "str", "integer": "int", "number": "float", "boolean": "bool", "null": "None"}
_WORD = re.compile(r"[A-Za-z0-9]+")

PRELUDE = '''from typing import Any, Literal, NotRequired, TypedDict


async def call_tool(name: str, arguments: dict[str, Any] | None = None) -> Any:
    """Call a tool by its public name, e.g. one search_tools found."""
'''

SEARCH_STUB = '''

async def search_tools(query: str, limit: int = 5) -> list[dict[str, Any]]:
    """The best tools for what you want to do: each with `name`, `server`, `description`, `input_schema`."""
'''

CHECKER_ONLY = """
class PermissionError(OSError): ...
"""
"""Builtins the sandbox raises that its bundled type checker does not know by default."""


def _camel(*parts: str) -> str:
    words = [w for part in parts for w in _WORD.findall(part)]
    name = "".join(w[:1].upper() + w[1:] for w in words) or "Value"
    return f"T{name}" if name[0].isdigit() else name


def _literal(value: Any) -> str | None:
    if value is None or isinstance(value, bool | int | str):
        return repr(value)
    return None


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split()).replace('"""', "'''").replace("\\", "\\\\")
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


class _Renderer:
    """Renders schemas to annotations, collecting the `TypedDict`s they need."""

    def __init__(self) -> None:
        self.classes: list[str] = []
        self._taken: set[str] = set()

    def _class_name(self, wanted: str) -> str:
        name, n = wanted, 2
        while name in self._taken:
            name, n = f"{wanted}{n}", n + 1
        self._taken.add(name)
        return name

    def annotation(
        self, schema: Any, hint: str, root: Mapping[str, Any], depth: int = 0, seen: frozenset[str] = frozenset()
    ) -> str:
        if not isinstance(schema, Mapping) or depth > MAX_DEPTH:
            return "Any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = _resolve(ref, root)
            if target is None or ref in seen:
                return "Any"
            return self.annotation(target, _camel(ref.rsplit("/", 1)[-1]), root, depth + 1, seen | {ref})
        if "const" in schema and (literal := _literal(schema["const"])) is not None:
            return f"Literal[{literal}]"
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            literals = [_literal(v) for v in enum]
            if all(lit is not None for lit in literals):
                return f"Literal[{', '.join(lit for lit in literals if lit is not None)}]"
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return _union(
                    self.annotation(o, f"{hint}{i + 1}", root, depth + 1, seen) for i, o in enumerate(options)
                )
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1:
            return self.annotation(all_of[0], hint, root, depth + 1, seen)
        kind = schema.get("type")
        if isinstance(kind, list):
            return _union(self.annotation({**schema, "type": k}, hint, root, depth, seen) for k in kind)
        if kind is None and "properties" in schema:
            kind = "object"
        if isinstance(kind, str) and kind in _SCALARS:
            return _SCALARS[kind]
        if kind == "array":
            items = schema.get("items")
            return (
                f"list[{self.annotation(items, f'{hint}Item', root, depth + 1, seen) if items is not None else 'Any'}]"
            )
        if kind == "object":
            properties = schema.get("properties")
            if isinstance(properties, Mapping) and properties:
                return self._typed_dict(schema, properties, hint, root, depth, seen)
            extra = schema.get("additionalProperties")
            if isinstance(extra, Mapping) and extra:
                return f"dict[str, {self.annotation(extra, f'{hint}Value', root, depth + 1, seen)}]"
            return "dict[str, Any]"
        return "Any"

    def _typed_dict(
        self,
        schema: Mapping[str, Any],
        properties: Mapping[str, Any],
        hint: str,
        root: Mapping[str, Any],
        depth: int,
        seen: frozenset[str],
    ) -> str:
        name = self._class_name(hint)
        required = set(schema.get("required") or ())
        fields: list[tuple[str, str]] = []
        for key, sub in properties.items():
            annotation = self.annotation(sub, _camel(hint, key), root, depth + 1, seen)
            fields.append((key, annotation if key in required else f"NotRequired[{annotation}]"))
        if all(key.isidentifier() and not keyword.iskeyword(key) for key, _ in fields):
            body = "\n".join(f"    {key}: {annotation}" for key, annotation in fields)
            self.classes.append(f"class {name}(TypedDict):\n{body}\n")
        else:
            items = ", ".join(f"{key!r}: {annotation}" for key, annotation in fields)
            self.classes.append(f"{name} = TypedDict({name!r}, {{{items}}})\n")
        return name


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def _union(annotations: Any) -> str:
    unique = list(dict.fromkeys(annotations))
    return "Any" if "Any" in unique else " | ".join(unique)


def tool_stub(tool: CatalogTool, function: str, renderer: _Renderer) -> str:
    """One tool's `async def`; the `TypedDict`s it needs go to `renderer.classes`."""
    schema = tool.input_schema
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    required = set(schema.get("required") or ())
    base = _camel(function)
    params: list[str] = []
    docs: list[str] = []
    named = all(key.isidentifier() and not keyword.iskeyword(key) for key in properties)
    for key, sub in properties.items():
        annotation = renderer.annotation(sub, _camel(function, key), schema)
        if named:
            params.append(f"{key}: {annotation}" if key in required else f"{key}: {annotation} = ...")
        description = sub.get("description") if isinstance(sub, Mapping) else None
        if isinstance(description, str) and description.strip():
            docs.append(f"        {key}: {_one_line(description, MAX_PARAM_DOC_CHARS)}")
    if not named:  # a property no keyword can name: the arguments go as one dict
        args_type = renderer.annotation({**schema, "type": "object"}, f"{base}Args", schema)
        params = [f"arguments: {args_type}"]
    output = tool.definition.output_schema
    returns = renderer.annotation(output, f"{base}Result", output) if output else "Any"
    signature = f"*, {', '.join(params)}" if named and params else ", ".join(params)
    about = _one_line(tool.description, MAX_DOC_CHARS) if tool.description else ""
    doc = f"{tool.name} (server {tool.server})" + (f": {about}" if about else "")
    args = "\n    Args:\n" + "\n".join(docs) + "\n    " if docs else ""
    return f'async def {function}({signature}) -> {returns}:\n    """{doc}{args}"""\n'


def render_stubs(tools: Sequence[CatalogTool], *, search: bool = False) -> str:
    """The stub module for `tools` (and `search_tools` when tool search is on), in public-name order."""
    names = ToolNames.of(tool.name for tool in tools)
    by_public = {tool.name: tool for tool in tools}
    renderer = _Renderer()
    functions = [tool_stub(by_public[public], function, renderer) for function, public in names.by_function.items()]
    parts = [PRELUDE, SEARCH_STUB if search else ""]
    if names.uncallable:
        listed = ", ".join(names.uncallable)
        parts.append(f"\n# Reach these with call_tool(name, arguments): their Python names are taken: {listed}\n")
    if renderer.classes:
        parts.append("\n\n" + "\n\n".join(renderer.classes))
    if functions:
        parts.append("\n\n" + "\n\n".join(functions))
    return "".join(parts)
