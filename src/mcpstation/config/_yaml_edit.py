"""Edit YAML in place with ruamel.yaml's round trip: comments, key order, quoting and flow style stay.

ruamel.yaml writes the whole document back with one indentation setting, so the file's own is
found first: the candidates are tried on the text as read, and the one that writes it back
unchanged is kept (else the closest). The same goes for how the file writes nothing (`null`,
`~` or an empty value). New values follow the file: tables in block style, lists of plain
values in flow style (`args: ["-y", "pkg"]`), as clients write them.
"""

from __future__ import annotations

import difflib
import io
import re
from collections.abc import Mapping
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.representer import RoundTripRepresenter

from mcpstation.config._problem import Loc, Problem

WIDTH = 1 << 16  # never fold a long line: the file's own line breaks are the only ones
_INDENTS = ((2, 2), (2, 0), (4, 2), (4, 0), (4, 4), (3, 0), (2, 4))  # (mapping indent, dash offset)
_NULLS = {
    "null": re.compile(r":[ \t]+null[ \t]*(#.*)?$", re.MULTILINE),
    "~": re.compile(r":[ \t]+~[ \t]*(#.*)?$", re.M),
}


class YamlText:
    """A YAML document that can be changed and written back with everything else as it was."""

    def __init__(self, text: str) -> None:
        """Raises `Problem` when `text` is not valid YAML."""
        self._null = next((word for word, pattern in _NULLS.items() if pattern.search(text)), "")
        self._yaml = _best_writer(text, self._null)
        self.text = text
        self.data: Any = self._load(text)

    def dumps(self) -> str:
        return self.text

    def set(self, where: Loc, value: Any) -> None:
        """Put `value` at `where`, creating the tables on the way."""
        container = self.data
        for part in where[:-1]:
            if container.get(part) is None:
                container[part] = CommentedMap()
            container = container[part]
        new = where[-1] not in container
        container[where[-1]] = to_yaml(value)
        self._written()
        if new:
            self._before_trailing_comments(where)

    def append(self, where: Loc, value: Any) -> None:
        """Add `value` at the end of the list at `where` (made when missing)."""
        container = self.data
        for part in where[:-1]:
            container = container[part]
        if container.get(where[-1]) is None:
            container[where[-1]] = CommentedSeq()
        container[where[-1]].append(to_yaml(value))
        self._written()
        self._before_trailing_comments((*where, len(container[where[-1]]) - 1))

    def remove(self, where: Loc) -> None:
        """Remove the entry at `where` with the comment lines right above it; what follows keeps its own."""
        parent = self.data
        for part in where[:-1]:
            parent = parent[part]
        span = _block_span(self.text, parent, where[-1])
        if span is None:  # a flow-style table or list: ruamel.yaml rewrites that one line
            del parent[where[-1]]
            self._written()
            return
        lines = self.text.splitlines(keepends=True)
        self.text = "".join(lines[: span[0]] + lines[span[1] :])
        self.data = self._load(self.text)
        emptied = self.data
        for part in where[:-1]:
            emptied = emptied[part]
        if emptied is None:  # the last entry went: an empty table or list, as the file had one
            self.set(where[:-1], {} if isinstance(parent, Mapping) else [])

    def _before_trailing_comments(self, where: Loc) -> None:
        """Move a new last entry above the comment and blank lines that ended its block.

        ruamel.yaml keeps the lines between a block and the next key (`# Custom endpoints`) with
        the block's last value, so a new last entry lands after them; they belong to what follows.
        """
        parent = self.data
        for part in where[:-1]:
            parent = parent[part]
        span = _block_span(self.text, parent, where[-1])
        if span is None:
            return
        lines = self.text.splitlines(keepends=True)
        start = span[0]
        while start > 0 and (not lines[start - 1].strip() or _is_comment(lines[start - 1])):
            start -= 1
        if start == span[0]:
            return
        self.text = "".join(lines[:start] + lines[span[0] : span[1]] + lines[start : span[0]] + lines[span[1] :])
        self.data = self._load(self.text)

    def _written(self) -> None:
        out = io.StringIO()
        self._yaml.dump(self.data, out)
        self.text = out.getvalue()
        self.data = self._load(self.text)

    def _load(self, text: str) -> Any:
        try:
            data = self._yaml.load(text) if text.strip() else None
        except MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            raise Problem((), f"invalid YAML: {exc.problem or exc.context}.", line=line) from None
        except YAMLError:
            raise Problem((), "invalid YAML.") from None
        return CommentedMap() if data is None else data


def _block_span(text: str, parent: Any, key: str | int) -> tuple[int, int] | None:
    """The lines `[start, end)` of a block-style entry: its comment lines right above, its own lines,
    not the comment and blank lines after it (they belong to what follows)."""
    if getattr(parent, "fa", None) is not None and parent.fa.flow_style():
        return None
    lines = text.splitlines()
    if isinstance(parent, CommentedSeq):
        line, column = parent.lc.item(key)
        column = lines[line].rfind("-", 0, column + 1)  # the item's dash
        is_item = True
    else:
        line, column = parent.lc.key(key)
        is_item = False
    start = line
    while start > 0 and _is_comment(lines[start - 1]) and _indent(lines[start - 1]) >= column:
        start -= 1
    last = line
    for index in range(line + 1, len(lines)):
        current = lines[index]
        if not current.strip() or _is_comment(current):
            continue
        indent = _indent(current)
        own_list = (
            not is_item and indent == column and current.lstrip().startswith("-")
        )  # `key:` then `- x` at its column
        if indent <= column and not own_list:
            break
        last = index
    return start, last + 1


def _is_comment(line: str) -> bool:
    return line.lstrip().startswith("#")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def to_yaml(value: Any) -> Any:
    """Plain data as ruamel.yaml nodes: tables in block style, lists of plain values in flow style."""
    if isinstance(value, Mapping):
        table = CommentedMap()
        for key, item in value.items():
            table[key] = to_yaml(item)
        return table
    if isinstance(value, list | tuple):
        items = CommentedSeq(to_yaml(item) for item in value)
        if all(not isinstance(item, Mapping | list | tuple) for item in value):
            items.fa.set_flow_style()
        return items
    return value


def _writer(mapping: int, offset: int, null: str) -> YAML:
    yaml = YAML()  # round trip
    yaml.preserve_quotes = True
    yaml.width = WIDTH
    yaml.indent(mapping=mapping, sequence=offset + 2, offset=offset)
    if null:
        yaml.Representer = _null_representer(null)
    return yaml


def _best_writer(text: str, null: str) -> YAML:
    """The indentation that writes `text` back unchanged, else the closest."""
    best: tuple[float, YAML] | None = None
    for mapping, offset in _INDENTS:
        yaml = _writer(mapping, offset, null)
        try:
            data = yaml.load(text)
            out = io.StringIO()
            yaml.dump(data, out)
        except YAMLError:
            return yaml  # the text does not parse: the caller reports it
        written = out.getvalue()
        if written == text:
            return yaml
        ratio = difflib.SequenceMatcher(None, text.splitlines(), written.splitlines(), autojunk=False).ratio()
        if best is None or ratio > best[0]:
            best = (ratio, yaml)
    assert best is not None
    return best[1]


def _null_representer(null: str) -> type[RoundTripRepresenter]:
    """A representer writing nothing the way the file does (`null` or `~`; ruamel.yaml writes an empty value)."""

    class NullAsWritten(RoundTripRepresenter):
        pass

    def represent_none(representer: RoundTripRepresenter, _data: None) -> Any:
        return representer.represent_scalar("tag:yaml.org,2002:null", null)

    NullAsWritten.add_representer(type(None), represent_none)
    return NullAsWritten
