"""How the strings of another client's file become ours: resolved for a run, or translated for an import.

`Resolving` gives servers their real values (variables expanded, inputs asked for, env files
read); `Translating` keeps every secret a reference in our native `${VAR}` syntax, so an imported
`mcpstation.toml` never holds a token; `Verbatim` leaves a disabled server's values as written
(nothing is asked for, nothing is missing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from mcpstation.config._problem import Loc, Problem, render_path
from mcpstation.config._variables import Scope, Syntax, resolve, translate

logger = logging.getLogger(__name__)

_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(.*?)\s*$")


class Values(Protocol):
    """Turns the client's strings into the native document's."""

    def deep(self, value: Any, where: Loc) -> Any:
        """`value` with every string in it (lists and tables included) expanded."""
        ...

    def env_ref(self, name: str, where: Loc, *, optional: bool) -> str | None:
        """The environment variable `name` (a key such as Codex's `env_vars` names it); None when
        `optional` and unset."""
        ...

    def env_file(self, path: str, where: Loc) -> dict[str, str]:
        """The variables of a dotenv file (VS Code's and Cursor's `envFile`)."""
        ...


class Resolving:
    """Real values: what a server started from this file gets."""

    def __init__(self, syntax: Syntax, scope: Scope) -> None:
        self._syntax = syntax
        self._scope = scope

    def deep(self, value: Any, where: Loc) -> Any:
        return _walk(value, where, lambda text, place: resolve(text, self._syntax, self._scope, place))

    def env_ref(self, name: str, where: Loc, *, optional: bool) -> str | None:
        value = self._scope.environ.get(name)
        if value is None and not optional:
            self._scope.missing.append(name)
            return ""
        return value

    def env_file(self, path: str, where: Loc) -> dict[str, str]:
        file = self._scope.base / Path(self.deep(path, where)).expanduser()
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise Problem(where, f"cannot read the env file {str(file)!r}: {exc.__class__.__name__}.") from None
        return parse_dotenv(text)


class Translating:
    """Native references: what `mcpstation import` writes."""

    def __init__(self, syntax: Syntax, scope: Scope, notes: list[str]) -> None:
        self._syntax = syntax
        self._scope = scope
        self.notes = notes

    def deep(self, value: Any, where: Loc) -> Any:
        return _walk(value, where, lambda text, place: translate(text, self._syntax, self._scope, place, self.notes))

    def env_ref(self, name: str, where: Loc, *, optional: bool) -> str | None:
        return "${" + name + (":-" if optional else "") + "}"

    def env_file(self, path: str, where: Loc) -> dict[str, str]:
        """Each variable of the file as a reference to the environment variable of that name."""
        written = translate(path, self._syntax, self._scope, where, self.notes).replace("$$", "$")
        file = self._scope.base / Path(written).expanduser()
        try:
            names = parse_dotenv(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            self.notes.append(f"{render_path(where)}: env file {path!r} could not be read; not carried over.")
            return {}
        self.notes.append(
            f"{render_path(where)}: the variables of env file {path!r} became references; "
            "export them before starting the station."
        )
        return {name: "${" + name + "}" for name in names}


class Verbatim:
    """Values as written: a disabled server's, which nothing starts."""

    def deep(self, value: Any, where: Loc) -> Any:
        return value

    def env_ref(self, name: str, where: Loc, *, optional: bool) -> str | None:
        return "${" + name + "}"

    def env_file(self, path: str, where: Loc) -> dict[str, str]:
        return {}


def parse_dotenv(text: str) -> dict[str, str]:
    """`KEY=VALUE` lines (optionally `export`ed, quoted, with `#` comments); other lines skipped."""
    variables: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _DOTENV_LINE.match(line)
        if match is None:
            continue
        key, value = match.group(1), match.group(2)
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        variables[key] = value
    return variables


def _walk(value: Any, where: Loc, text: Any) -> Any:
    if isinstance(value, str):
        return text(value, where)
    if isinstance(value, Mapping):
        return {key: _walk(item, (*where, key), text) for key, item in value.items()}
    if isinstance(value, list):
        return [_walk(item, (*where, index), text) for index, item in enumerate(value)]
    return value
