"""JSON with comments and trailing commas (JSONC), as VS Code, Zed and Gemini CLI write it.

`blank_jsonc` turns JSONC into plain JSON of the same length: every comment and trailing comma
becomes spaces (newlines kept), so offsets and line numbers stay those of the user's file and
the plain-JSON parser and line scanner can be used unchanged.
"""

from __future__ import annotations

_WHITESPACE = " \t\r\n"


def blank_jsonc(text: str) -> str:
    """`text` with `//` and `/* */` comments and trailing commas replaced by spaces."""
    return _blank_trailing_commas(blank_comments(text))


def has_jsonc_syntax(text: str) -> bool:
    """Whether `text` uses comments or trailing commas (outside strings)."""
    return blank_jsonc(text) != text


def blank_comments(text: str) -> str:
    """`text` with its comments (only) replaced by spaces."""
    out = list(text)
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if char == "/" and index + 1 < length and text[index + 1] in "/*":
            end = _comment_end(text, index)
            for position in range(index, end):
                if out[position] != "\n":
                    out[position] = " "
            index = end
            continue
        index += 1
    return "".join(out)


def _comment_end(text: str, start: int) -> int:
    if text[start + 1] == "/":
        newline = text.find("\n", start)
        return len(text) if newline < 0 else newline
    close = text.find("*/", start + 2)
    return len(text) if close < 0 else close + 2


def _blank_trailing_commas(text: str) -> str:
    out = list(text)
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            index = _string_end(text, index)
            continue
        if char == ",":
            following = index + 1
            while following < length and text[following] in _WHITESPACE:
                following += 1
            if following < length and text[following] in "}]":
                out[index] = " "
        index += 1
    return "".join(out)


def _string_end(text: str, start: int) -> int:
    """The index just past the string literal opening at `start` (or the end of an unclosed one)."""
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"' or char == "\n":
            return index + 1
        index += 1
    return index
