"""Edit JSON (and JSONC) text in place: change one value, add or remove one member, keep the rest byte for byte.

The editor never re-serialises the whole file: it splices the text at the spans of the values
it changes, so every key it does not own, every comment, the indentation and the key order
stay as the user (or their client) wrote them. New values are rendered in the file's indent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]  # public, but missing from the stubs
from typing import Any

from mcpstation.config._jsonc import blank_comments, blank_jsonc
from mcpstation.config._problem import Loc, Problem

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_INDENT = re.compile(r"\n([ \t]+)\S")


@dataclass(frozen=True)
class Span:
    """Where a value sits: `[start, end)`, and for an object member where its key starts."""

    key_start: int | None
    start: int
    end: int


class JsonText:
    """A JSON or JSONC document as text, with the span of every value."""

    def __init__(self, text: str, *, comments: bool) -> None:
        """Raises `Problem` when `text` is not valid JSON (JSONC with `comments`)."""
        self.text = text
        self.comments = comments
        self._blank = blank_jsonc(text) if comments else text
        self._commas = blank_comments(text) if comments else text  # comments blanked, commas kept
        try:
            self.data: Any = json.loads(self._blank) if self._blank.strip() else {}
        except json.JSONDecodeError as exc:
            raise Problem((), f"invalid JSON: {exc.msg}.", line=exc.lineno) from None
        self._spans = _scan(self._blank) if self._blank.strip() else {}
        indent = _INDENT.search(text)
        self._unit = indent.group(1) if indent else "  "

    def get(self, where: Loc) -> Any:
        value = self.data
        for part in where:
            value = value[part]
        return value

    def has(self, where: Loc) -> bool:
        return where in self._spans

    def set(self, where: Loc, value: Any) -> JsonText:
        """The document with `value` at `where`, creating missing tables on the way."""
        if not self._spans:
            nested: Any = value
            for part in reversed(where):
                nested = {part: nested}
            return JsonText(_dump(nested, "", self._unit) + "\n", comments=self.comments)
        if where in self._spans:
            span = self._spans[where]
            rendered = _dump(value, self._line_indent(span.key_start or span.start), self._unit)
            return self._spliced(span.start, span.end, rendered)
        for end in range(len(where) - 1, -1, -1):
            parent = where[:end]
            if parent in self._spans:
                nested = value
                for part in reversed(where[end + 1 :]):
                    nested = {part: nested}
                return self.insert(parent, where[end], nested)
        raise KeyError(where)  # pragma: no cover  # the root is always known

    def insert(self, container: Loc, key: str | int | None, value: Any) -> JsonText:
        """The document with a new member `key` (or, for a list, a new last item) in `container`."""
        span = self._spans[container]
        members = [place for place in self._spans if len(place) == len(container) + 1 and place[:-1] == container]
        is_object = self._blank[span.start] == "{"
        prefix = json.dumps(key, ensure_ascii=False) + ": " if is_object else ""
        close = span.end - 1
        container_indent = self._line_indent(span.start)
        inline = self._same_line(span.start, close)
        if not members:
            if inline:
                return self._spliced(span.start + 1, close, prefix + json.dumps(value, ensure_ascii=False))
            indent = container_indent + self._unit
            member = prefix + _dump(value, indent, self._unit)
            close_line = self.text.rfind("\n", 0, close) + 1
            if self.text[close_line:close].strip() == "":
                return self._spliced(close_line, close_line, f"{indent}{member}\n")
            return self._spliced(close, close, f"\n{indent}{member}\n{container_indent}")
        last = self._spans[max(members, key=lambda place: self._spans[place].start)]
        after = _skip(self._commas, last.end)
        trailing_comma = self._commas[after] == ","
        if inline:
            at = after + 1 if trailing_comma else last.end
            compact = prefix + json.dumps(value, ensure_ascii=False)
            return self._spliced(at, at, (" " if trailing_comma else ", ") + compact)
        indent = self._line_indent(last.key_start if last.key_start is not None else last.start)
        line_end = self._end_of_line(after + 1 if trailing_comma else last.end)
        new = f"\n{indent}{prefix}{_dump(value, indent, self._unit)}{',' if trailing_comma else ''}"
        if trailing_comma:
            return self._spliced(line_end, line_end, new)
        text = self.text[: last.end] + "," + self.text[last.end : line_end] + new + self.text[line_end:]
        return JsonText(text, comments=self.comments)

    def remove(self, where: Loc) -> JsonText:
        """The document without the member (or list item) at `where`, and its comma and line."""
        span = self._spans[where]
        start = span.key_start if span.key_start is not None else span.start
        end = span.end
        after = _skip(self._commas, end)
        comma_before: int | None = None
        if self._commas[after] == ",":
            end = after + 1
        else:
            before = start - 1
            while before >= 0 and self._commas[before] in " \t\r\n":
                before -= 1
            if before >= 0 and self._commas[before] == ",":
                comma_before = before
        line_start = self.text.rfind("\n", 0, start) + 1
        if self.text[line_start:start].strip() == "":
            line_end = self._end_of_line(end)
            if line_end < len(self.text) or self._blank[end:line_end].strip() == "":
                start, end = self._comments_above(line_start), min(line_end + 1, len(self.text))
        else:
            while end < len(self.text) and self.text[end] == " ":
                end += 1
        if comma_before is not None:
            text = self.text[:comma_before] + self.text[comma_before + 1 : start] + self.text[end:]
        else:
            text = self.text[:start] + self.text[end:]
        return JsonText(text, comments=self.comments)

    def _comments_above(self, line_start: int) -> int:
        """The start of the comment lines right above `line_start` (they belong to what follows)."""
        while line_start > 0:
            previous = self.text.rfind("\n", 0, line_start - 1) + 1
            line = self.text[previous : line_start - 1]
            if not line.strip() or self._blank[previous : line_start - 1].strip():
                break  # a blank line, or one with JSON on it
            line_start = previous
        return line_start

    def _spliced(self, start: int, end: int, rendered: str) -> JsonText:
        return JsonText(self.text[:start] + rendered + self.text[end:], comments=self.comments)

    def _line_indent(self, position: int) -> str:
        line_start = self.text.rfind("\n", 0, position) + 1
        prefix = self.text[line_start:position]
        return prefix[: len(prefix) - len(prefix.lstrip(" \t"))]

    def _same_line(self, first: int, second: int) -> bool:
        return "\n" not in self.text[first:second]

    def _end_of_line(self, position: int) -> int:
        """The newline ending `position`'s line when only blanks and comments follow, else `position`."""
        newline = self.text.find("\n", position)
        newline = len(self.text) if newline < 0 else newline
        return newline if self._blank[position:newline].strip() == "" else position


def _dump(value: Any, indent: str, unit: str) -> str:
    rendered = json.dumps(value, indent=unit if unit.strip(" ") else len(unit), ensure_ascii=False)
    return rendered.replace("\n", "\n" + indent)


def _skip(text: str, position: int) -> int:
    match = _WHITESPACE.match(text, position)
    return match.end() if match else position


def _scan(text: str) -> dict[Loc, Span]:
    spans: dict[Loc, Span] = {}
    decoder = json.JSONDecoder()

    def value(position: int, where: Loc, key_start: int | None) -> int:
        position = _skip(text, position)
        char = text[position]
        if char == "{":
            end = container(position, where, "}", keyed=True)
        elif char == "[":
            end = container(position, where, "]", keyed=False)
        elif char == '"':
            end = scanstring(text, position + 1)[1]
        else:
            end = decoder.raw_decode(text, position)[1]
        spans[where] = Span(key_start, position, end)
        return end

    def container(position: int, where: Loc, close: str, *, keyed: bool) -> int:
        position = _skip(text, position + 1)
        index = 0
        while text[position] != close:
            if keyed:
                key, end = scanstring(text, position + 1)
                key_start: int | None = position
                place: Loc = (*where, key)
                position = _skip(text, end) + 1  # past ':'
            else:
                key_start, place = None, (*where, index)
                index += 1
            position = _skip(text, value(position, place, key_start))
            if text[position] == ",":
                position = _skip(text, position + 1)
        return position + 1

    value(0, (), None)
    return spans
