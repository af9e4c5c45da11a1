"""Tool definitions judged before anything parses them whole: size, depth, count and `$ref`s.

A `tools/list` result is split into one raw byte span per tool (`msgspec.Raw`), so a tool over
the size budget is dropped without ever becoming Python objects, and holding a hostile listing
costs its bytes, not the tenfold a parsed JSON tree costs. A kept tool must also nest no deeper
than the depth budget, and its schemas' `$ref`s must stay inside the schema (nothing ever
fetches a URL) and must not loop without descending into the instance (`{"$ref": "#"}`), which
would send any validator into endless recursion. `$schema` URLs are left alone: they only name
a dialect and nothing follows them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import msgspec

from mcpstation.connection._wire import decode, decode_members

DEFAULT_MAX_TOOL_BYTES = 256 * 1024  # one tool's JSON; real ones are 1-20 KiB, bombs are megabytes
DEFAULT_MAX_TOOL_DEPTH = 40  # JSON nesting inside one tool; about 18 levels of nested object schemas
DEFAULT_MAX_TOOLS_PER_PAGE = 10_000  # tools one listing page may carry

__all__ = [
    "DEFAULT_MAX_TOOLS_PER_PAGE",
    "DEFAULT_MAX_TOOL_BYTES",
    "DEFAULT_MAX_TOOL_DEPTH",
    "DropReason",
    "DroppedTool",
    "ToolBudget",
    "screen_tools_page",
]

_ITEMS = msgspec.json.Decoder(list[msgspec.Raw])
# Keywords whose subschemas apply to the same instance: a `$ref` loop through only these never ends.
_SAME_INSTANCE_ONE = ("not", "if", "then", "else")
_SAME_INSTANCE_MANY = ("allOf", "anyOf", "oneOf")


class _NameOnly(msgspec.Struct):
    name: Any = None


_NAME_ONLY = msgspec.json.Decoder(_NameOnly)


class DropReason(enum.StrEnum):
    """Why a tool definition was left out of the listing."""

    TOO_LARGE = "too_large"
    TOO_DEEP = "too_deep"
    TOO_MANY = "too_many"
    NOT_A_TOOL = "not_a_tool"  # a shape every protocol era rejects (it would fail the whole page)
    REMOTE_REF = "remote_ref"
    CYCLIC_REF = "cyclic_ref"


@dataclass(frozen=True, slots=True)
class DroppedTool:
    """One tool the transport left out of a listing, and why (`name` is None when unreadable)."""

    name: str | None
    reason: DropReason
    detail: str

    def describe(self, server: str) -> str:
        what = f"tool {self.name!r}" if self.name is not None else "a tool"
        return f"server {server!r}: {what} was dropped from the listing ({self.reason}: {self.detail})"


@dataclass(frozen=True, slots=True)
class ToolBudget:
    """Bounds on each tool definition of a listing page."""

    max_bytes: int = DEFAULT_MAX_TOOL_BYTES
    max_depth: int = DEFAULT_MAX_TOOL_DEPTH
    max_tools: int = DEFAULT_MAX_TOOLS_PER_PAGE


def screen_tools_page(result: bytes | msgspec.Raw, budget: ToolBudget) -> tuple[Any, list[DroppedTool]]:
    """The decoded `tools/list` result with every tool over `budget` left out, and those left out.

    A result whose `tools` is not an array comes back decoded as is, for the session to reject.

    Raises:
        msgspec.DecodeError, msgspec.ValidationError, RecursionError: the result cannot be read.
    """
    members = decode_members(result)
    page: dict[str, Any] = {key: decode(raw) for key, raw in members.items() if key != "tools"}
    tools_raw = members.get("tools")
    if tools_raw is None:
        return page, []
    try:
        items = _ITEMS.decode(tools_raw)
    except msgspec.ValidationError:
        page["tools"] = decode(tools_raw)
        return page, []
    kept: list[Any] = []
    dropped: list[DroppedTool] = []
    for index, raw in enumerate(items):
        if len(kept) >= budget.max_tools:
            detail = f"{len(items) - index:,} more beyond {budget.max_tools:,} on a page"
            dropped.append(DroppedTool(None, DropReason.TOO_MANY, detail))
            break
        verdict = _judge(raw, budget)
        if isinstance(verdict, DroppedTool):
            dropped.append(verdict)
        else:
            kept.append(verdict)
    page["tools"] = kept
    return page, dropped


def _judge(raw: msgspec.Raw, budget: ToolBudget) -> Any:
    size = len(raw)
    if size > budget.max_bytes:
        return DroppedTool(_name_of(raw), DropReason.TOO_LARGE, f"{size:,} bytes > {budget.max_bytes:,}")
    tool = decode(raw)
    if not isinstance(tool, dict):
        return DroppedTool(None, DropReason.NOT_A_TOOL, f"a JSON {type(tool).__name__}, not an object")
    name = tool.get("name") if isinstance(tool.get("name"), str) else None
    shape = _shape_problem(tool)
    if shape is not None:
        return DroppedTool(name, DropReason.NOT_A_TOOL, shape)
    depth = _depth(tool, budget.max_depth)
    if depth > budget.max_depth:
        return DroppedTool(name, DropReason.TOO_DEEP, f"nested more than {budget.max_depth} levels")
    for key in ("inputSchema", "outputSchema"):
        schema = tool.get(key)
        if isinstance(schema, dict):
            problem = _ref_problem(schema)
            if problem is not None:
                reason, detail = problem
                return DroppedTool(name, reason, f"{key}: {detail}")
    return tool


def _shape_problem(tool: dict[str, Any]) -> str | None:
    """What makes every era's `Tool` model reject this definition (and with it the whole page)."""
    if not isinstance(tool.get("name"), str):
        return "its name is not a string"
    schema = tool.get("inputSchema")
    if not isinstance(schema, dict) or "type" not in schema:
        return "its inputSchema is not a JSON Schema object with a type"
    output = tool.get("outputSchema")
    if output is not None and not (isinstance(output, dict) and "type" in output):
        return "its outputSchema is not a JSON Schema object with a type"
    return None


def _name_of(raw: msgspec.Raw) -> str | None:
    try:
        name = _NAME_ONLY.decode(raw).name
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    return name if isinstance(name, str) else None


def _depth(value: Any, limit: int) -> int:
    """The nesting depth of `value` (a scalar is 0), counting no further than `limit + 1`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return deepest


def _nodes(root: dict[str, Any]) -> Iterator[dict[str, Any]]:
    stack: list[Any] = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            yield node
            stack.extend(child for child in node.values() if isinstance(child, dict | list))
        else:
            stack.extend(child for child in node if isinstance(child, dict | list))


def _resolve(root: dict[str, Any], ref: str) -> Any:
    """The subschema a local `#/...` pointer names, or None (anchors and misses are not followed)."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for token in ref[2:].split("/"):
        token = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict):
            node = node.get(token)
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def _same_instance_subschemas(root: dict[str, Any], node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    ref = node.get("$ref")
    if isinstance(ref, str) and isinstance(target := _resolve(root, ref), dict):
        yield target
    for key in _SAME_INSTANCE_ONE:
        if isinstance(sub := node.get(key), dict):
            yield sub
    for key in _SAME_INSTANCE_MANY:
        if isinstance(subs := node.get(key), list):
            yield from (sub for sub in subs if isinstance(sub, dict))
    if isinstance(dependent := node.get("dependentSchemas"), dict):
        yield from (sub for sub in dependent.values() if isinstance(sub, dict))


def _ref_problem(root: dict[str, Any]) -> tuple[DropReason, str] | None:
    nodes = list(_nodes(root))
    for node in nodes:
        ref = node.get("$ref")
        if isinstance(ref, str) and not ref.startswith("#"):
            return DropReason.REMOTE_REF, f"$ref {ref[:120]!r} points outside the schema; it is never fetched"
    # A cycle among subschemas that apply to one and the same instance: depth-first, grey = on the path.
    grey, black = 1, 2
    colour: dict[int, int] = {}
    for start in nodes:
        if id(start) in colour:
            continue
        colour[id(start)] = grey
        path: list[tuple[dict[str, Any], Iterator[dict[str, Any]]]] = [(start, _same_instance_subschemas(root, start))]
        while path:
            node, successors = path[-1]
            successor = next(successors, None)
            if successor is None:
                colour[id(node)] = black
                path.pop()
                continue
            state = colour.get(id(successor))
            if state == grey:
                return DropReason.CYCLIC_REF, "its $refs loop without descending into the instance"
            if state is None:
                colour[id(successor)] = grey
                path.append((successor, _same_instance_subschemas(root, successor)))
    return None
