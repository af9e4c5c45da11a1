"""`${VAR}` and `${VAR:-default}` expansion over every string value of a parsed document.

`$$` is a literal `$`. Keys are never expanded. Every missing variable in the document is
collected and reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mcpstation.config._problem import Loc, Problem
from mcpstation.errors import MissingVariablesError

_REFERENCE = re.compile(r"\$(?:(\$)|\{([^}]*)(\})?)")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def expand(data: Any, environ: Mapping[str, str], *, source: str | None = None) -> Any:
    """Return `data` with every string value expanded against `environ`.

    Raises:
        MissingVariablesError: one or more variables are unset and have no default (all named).
        Problem: a reference is malformed (`${}`, `${1X}`, an unclosed `${`).
    """
    missing: list[str] = []
    result = _walk(data, environ, missing, ())
    if missing:
        raise MissingVariablesError(missing, path=source)
    return result


def _walk(value: Any, environ: Mapping[str, str], missing: list[str], where: Loc) -> Any:
    if isinstance(value, str):
        return _expand_string(value, environ, missing, where)
    if isinstance(value, dict):
        return {key: _walk(item, environ, missing, (*where, key)) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, environ, missing, (*where, index)) for index, item in enumerate(value)]
    return value


def _expand_string(text: str, environ: Mapping[str, str], missing: list[str], where: Loc) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        body, closed = match.group(2), match.group(3)
        name, has_default, default = body.partition(":-")
        if not closed or not _NAME.match(name):
            raise Problem(where, "malformed variable reference; write ${NAME}, ${NAME:-default} or $$ for '$'.")
        value = environ.get(name)
        if value:
            return value
        if has_default:
            return default
        if value is None:
            missing.append(name)
        return ""

    return _REFERENCE.sub(replace, text)
