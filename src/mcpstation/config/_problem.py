"""A problem found at a place in the user's document, before it becomes a `ConfigError`.

Places are `Loc`s: tuples of keys and list indexes in the user's own file, rendered as
`mcp.servers[1].url`. The loader adds the file name and line number.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

Loc = tuple[str | int, ...]

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


class Problem(Exception):
    """Something wrong at `where` in the document; `line` when the parser already knows it."""

    def __init__(self, where: Loc, message: str, *, line: int | None = None) -> None:
        self.where = where
        self.message = message
        self.line = line
        super().__init__(f"{render_path(where)}: {message}")


def render_path(where: Loc) -> str:
    """`("mcp", "servers", 1, "url")` → `mcp.servers[1].url`; odd keys are quoted."""
    out = ""
    for part in where:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        text = part if _BARE_KEY.match(part) else f'"{part}"'
        out += f".{text}" if out else text
    return out


def unknown_key(key: str, valid: Iterable[str]) -> str:
    """The message for an unknown key, with a did-you-mean when one is close."""
    close = difflib.get_close_matches(key, sorted(set(valid)), n=1)
    return f"unknown key. Did you mean {close[0]!r}?" if close else "unknown key."
