"""The variable syntaxes other clients write in their MCP configs.

```
${VAR}  ${VAR:-default}  ${env:VAR}         environment (Claude Code, Cursor, VS Code, Windsurf, Roo, ...)
${workspaceFolder}  ${workspaceFolderBasename}  ${userHome}  ${cwd}  ${pathSeparator}  ${/}
${input:id}                                 a VS Code input (see `_inputs.py`)
${file:/path}                               a file's contents (Windsurf)
$VAR                                        environment, bare (Gemini CLI)
${{ secrets.NAME }}  ${{ inputs.NAME }}     Continue's secrets, read from the environment
```

A value is split into segments once; `resolve` turns them into the text a server gets, `translate`
into our native `${VAR}` syntax for `mcpstation import` (so secrets stay references, never values).
Predefined names win over environment variables of the same name, as in VS Code.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mcpstation.config._problem import Loc, Problem, render_path

logger = logging.getLogger(__name__)

INPUT_ENV_PREFIX = "MCPSTATION_INPUT_"
PREDEFINED = ("workspaceFolder", "workspaceFolderBasename", "userHome", "cwd", "pathSeparator", "/")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CONTINUE = r"\$\{\{\s*(?:secrets|inputs)\.(?P<secret>[A-Za-z0-9_.-]+)\s*\}\}"
_BRACES = r"\$\{(?P<body>[^{}]*)\}"
_BARE = r"\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"


@dataclass(frozen=True)
class Syntax:
    """Which forms a client expands: `${...}`, bare `$VAR`, Continue's `${{ secrets.X }}`."""

    braces: bool = True
    bare: bool = False
    continue_secrets: bool = False

    def pattern(self) -> re.Pattern[str] | None:
        parts = [
            part for part, on in ((_CONTINUE, self.continue_secrets), (_BRACES, self.braces), (_BARE, self.bare)) if on
        ]
        return re.compile("|".join(parts)) if parts else None


NO_VARIABLES = Syntax(braces=False)


def input_env_name(input_id: str) -> str:
    """`api-key` → `MCPSTATION_INPUT_API_KEY`."""
    return INPUT_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", input_id).upper()


InputLookup = Callable[[str, Loc], str]
"""Gives the value of input `id` referenced at a place, or raises `Problem`."""


@dataclass
class Scope:
    """What variables resolve against while one file is read."""

    environ: Mapping[str, str]
    home: str
    workspace: str
    base: Path  # the file's directory, for relative `${file:...}`
    lookup_input: InputLookup
    missing: list[str] = field(default_factory=list)

    def predefined(self, name: str) -> str:
        values = {
            "workspaceFolder": self.workspace,
            "workspaceFolderBasename": Path(self.workspace).name,
            "userHome": self.home,
            "cwd": self.workspace,
            "pathSeparator": "/",
            "/": "/",
        }
        return values[name]


def resolve(text: str, syntax: Syntax, scope: Scope, where: Loc) -> str:
    """The value a server gets: every reference replaced. Missing variables are collected in `scope`.

    Raises:
        Problem: an input has no value, or a `${file:...}` cannot be read.
    """
    pattern = syntax.pattern()
    if pattern is None or "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        groups = match.groupdict()
        if groups.get("secret"):
            return _env(groups["secret"], None, scope)
        if groups.get("bare"):
            return scope.environ.get(groups["bare"], match.group(0))  # Gemini CLI leaves an unset $VAR as written
        return _braced(groups["body"], scope, where, match.group(0))

    return pattern.sub(replace, text)


def translate(text: str, syntax: Syntax, scope: Scope, where: Loc, notes: list[str]) -> str:
    """The same value in our native syntax: environment references stay references (`${VAR}`),
    inputs become `${MCPSTATION_INPUT_ID}`, predefined names their value, literal `$` doubled.
    What has no native form is kept as written and described in `notes`."""
    pattern = syntax.pattern()
    if "$" not in text:
        return text
    if pattern is None:
        return text.replace("$", "$$")
    out: list[str] = []
    last = 0
    for match in pattern.finditer(text):
        out.append(text[last : match.start()].replace("$", "$$"))
        last = match.end()
        out.append(_translated(match, syntax, scope, where, notes))
    out.append(text[last:].replace("$", "$$"))
    return "".join(out)


def _translated(match: re.Match[str], syntax: Syntax, scope: Scope, where: Loc, notes: list[str]) -> str:
    groups = match.groupdict()
    if groups.get("secret"):
        return "${" + groups["secret"] + "}"
    if groups.get("bare"):
        return "${" + groups["bare"] + "}"
    body = groups["body"]
    kind, _, rest = body.partition(":")
    if body in PREDEFINED:
        return scope.predefined(body).replace("$", "$$")
    if kind == "env" and _NAME.match(rest):
        return "${" + rest + "}"
    if kind == "input" and rest:
        return "${" + input_env_name(rest) + "}"
    name, has_default, default = body.partition(":-")
    if _NAME.match(name):
        return "${" + name + (":-" + default if has_default else "") + "}"
    notes.append(f"{render_path(where)}: {match.group(0)!r} has no mcpstation equivalent; kept as written.")
    return match.group(0).replace("$", "$$")


def _braced(body: str, scope: Scope, where: Loc, raw: str) -> str:
    if body in PREDEFINED:
        return scope.predefined(body)
    kind, _, rest = body.partition(":")
    if kind == "env" and _NAME.match(rest):
        return _env(rest, None, scope)
    if kind == "input" and rest:
        return scope.lookup_input(rest, where)
    if kind == "file" and rest:
        return _file(rest, scope, where)
    name, has_default, default = body.partition(":-")
    if _NAME.match(name):
        return _env(name, default if has_default else None, scope)
    logger.warning("%s: %s is not a variable mcpstation knows; passed on as written", render_path(where), raw)
    return raw


def _env(name: str, default: str | None, scope: Scope) -> str:
    value = scope.environ.get(name)
    if value:
        return value
    if default is not None:
        return default
    if value is None:
        scope.missing.append(name)
    return ""


def _file(path: str, scope: Scope, where: Loc) -> str:
    file = (scope.base / Path(path).expanduser()).resolve()
    try:
        return file.read_text(encoding="utf-8").rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise Problem(where, f"cannot read ${{file:{path}}}: {exc.__class__.__name__}.") from None
