"""Line numbers for places in a document: a flat map from `Loc` to the 1-based line of its key.

tomllib and json give no positions for values, so JSON and TOML are scanned here; YAML uses the
marks of `yaml.compose`. JSON and YAML scans also reject duplicate keys, which their parsers
would silently collapse.
"""

from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring  # type: ignore[attr-defined]  # in the stdlib, missing from its stubs
from typing import TYPE_CHECKING

from mcpstation.config._problem import Loc, Problem

if TYPE_CHECKING:
    import yaml

LineMap = dict[Loc, int]


def line_of(lines: LineMap, where: Loc) -> int | None:
    """The line of `where`, or of its nearest ancestor the map knows."""
    for end in range(len(where), 0, -1):
        line = lines.get(where[:end])
        if line is not None:
            return line
    return None


# -- JSON ---------------------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")


def json_lines(text: str) -> LineMap:
    """Scan valid JSON `text`. Raises `Problem` on a duplicate key."""
    starts = [0] + [match.end() for match in re.finditer("\n", text)]
    lines: LineMap = {}
    decoder = json.JSONDecoder()

    def line(pos: int) -> int:
        return bisect.bisect_right(starts, pos)

    def skip(pos: int) -> int:
        return _WHITESPACE.match(text, pos).end()  # type: ignore[union-attr]  # always matches

    def value(pos: int, where: Loc) -> int:
        pos = skip(pos)
        char = text[pos]
        if char == "{":
            return container(pos, where, "}", keyed=True)
        if char == "[":
            return container(pos, where, "]", keyed=False)
        if char == '"':
            end: int = scanstring(text, pos + 1)[1]
            return end
        return decoder.raw_decode(text, pos)[1]

    def container(pos: int, where: Loc, close: str, *, keyed: bool) -> int:
        pos = skip(pos + 1)
        index = 0
        while text[pos] != close:
            if keyed:
                key, end = scanstring(text, pos + 1)
                place: Loc = (*where, key)
                if place in lines:
                    raise Problem(place, "duplicate key.", line=line(pos))
                lines[place] = line(pos)
                pos = skip(end) + 1  # past ':'
            else:
                pos = skip(pos)
                place = (*where, index)
                lines[place] = line(pos)
                index += 1
            pos = skip(value(pos, place))
            if text[pos] == ",":
                pos = skip(pos + 1)
        return pos + 1

    value(0, ())
    return lines


# -- YAML ---------------------------------------------------------------------------------------


def yaml_lines(text: str) -> LineMap:
    """Scan valid YAML `text` through its node tree. Raises `Problem` on a duplicate key."""
    import yaml  # loaded only when a YAML file is read

    lines: LineMap = {}
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if root is not None:
        _walk_yaml(root, (), lines)
    return lines


def _walk_yaml(node: yaml.Node, where: Loc, lines: LineMap) -> None:
    import yaml

    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            place: Loc = (*where, str(key_node.value))
            if place in lines:
                raise Problem(place, "duplicate key.", line=key_node.start_mark.line + 1)
            lines[place] = key_node.start_mark.line + 1
            _walk_yaml(value_node, place, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*where, index)] = item.start_mark.line + 1
            _walk_yaml(item, (*where, index), lines)


# -- TOML ---------------------------------------------------------------------------------------

_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')"""
_HEADER = re.compile(rf"^\s*(\[\[?)\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*\]\]?\s*(?:#.*)?$")
_ASSIGNMENT = re.compile(rf"^\s*({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=")
_PART = re.compile(_KEY_PART)


def toml_lines(text: str) -> LineMap:
    """Scan valid TOML `text`: table headers (counting `[[array]]` elements) and `key =` lines."""
    lines: LineMap = {}
    counts: dict[tuple[str, ...], int] = {}
    table: Loc = ()
    in_multiline = False
    for number, raw in enumerate(text.splitlines(), start=1):
        quotes = raw.count('"""') + raw.count("'''")
        if in_multiline:
            in_multiline = quotes % 2 == 0
            continue
        header = _HEADER.match(raw)
        if header:
            parts = _split_key(header.group(2))
            if header.group(1) == "[[":
                counts[parts] = counts.get(parts, -1) + 1
            table = _resolve(parts, counts)
            lines.setdefault(table, number)
            continue
        assignment = _ASSIGNMENT.match(raw)
        if assignment:
            lines.setdefault((*table, *_split_key(assignment.group(1))), number)
        in_multiline = quotes % 2 == 1
    return lines


def _split_key(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in _PART.findall(dotted))


def _resolve(parts: tuple[str, ...], counts: dict[tuple[str, ...], int]) -> Loc:
    """Insert the current element index after every array-of-tables prefix."""
    resolved: list[str | int] = []
    for end in range(1, len(parts) + 1):
        resolved.append(parts[end - 1])
        index = counts.get(parts[:end])
        if index is not None:
            resolved.append(index)
    return tuple(resolved)
