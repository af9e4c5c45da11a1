"""Other clients' MCP configs: find them, read their servers, write them as a native `mcpstation.toml`.

What `mcpstation import` runs. `find_client_files` looks in each client's standard places
(`_locations.py`); `import_servers` reads every file found (`_foreign.py`, translating variables
to our `${VAR}` so secrets stay references) and decides, server by server, what is imported:
the first file naming a server wins (project files come first), an identical definition in a
later file is a duplicate, a different one a conflict, kept out. `render_toml` writes the result.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import tomlkit

from mcpstation.config._clients import CLIENT_IDS, client_by_id
from mcpstation.config._foreign import ForeignServer, ReadOptions, read_foreign
from mcpstation.config._locations import Scope, candidates
from mcpstation.config._problem import Problem, render_path
from mcpstation.config._servers import infer_transport
from mcpstation.config.loader import _FORMATS, parse_config, read_document, workspace_of
from mcpstation.errors import ConfigError, UsageError

logger = logging.getLogger(__name__)

__all__ = [
    "CLIENT_IDS",
    "FoundFile",
    "ImportResult",
    "ImportStatus",
    "ImportedServer",
    "find_client_files",
    "import_servers",
    "render_toml",
]

# The order fields are written in, for a file people read.
_FIELD_ORDER = (
    "title",
    "transport",
    "command",
    "args",
    "cwd",
    "env",
    "url",
    "headers",
    "bearer_token",
    "enabled",
    "include_tools",
    "exclude_tools",
    "startup_timeout_s",
    "call_timeout_s",
)


@dataclass(frozen=True)
class FoundFile:
    """A client's config file that exists."""

    client: str  # a client id
    title: str  # the client's name for people
    path: Path
    scope: Scope


class ImportStatus(Enum):
    """What became of one server found in a client's file."""

    IMPORTED = "imported"
    DUPLICATE = "duplicate"  # the same definition was already imported from another file
    CONFLICT = "conflict"  # another file's server of this name was imported first
    SKIPPED = "skipped"  # not something mcpstation runs (a Zed extension, a goose builtin, ...)
    INVALID = "invalid"  # read, but it would not load


@dataclass(frozen=True)
class ImportedServer:
    """One server found: where, what, and what became of it."""

    name: str
    client: str  # the client's title
    file: Path
    transport: str | None
    enabled: bool
    status: ImportStatus
    fields: Mapping[str, Any]  # native fields, variables as `${VAR}` references
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "client": self.client,
            "file": str(self.file),
            "transport": self.transport,
            "enabled": self.enabled,
            "status": self.status.value,
            "reason": self.reason,
        }


@dataclass
class ImportResult:
    """Every server found, the files that could not be read, and notes on what did not carry over."""

    servers: list[ImportedServer] = field(default_factory=list)
    failed: list[tuple[Path, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def imported(self) -> list[ImportedServer]:
        return [server for server in self.servers if server.status is ImportStatus.IMPORTED]


def find_client_files(
    *,
    client: str | None = None,
    environ: Mapping[str, str] | None = None,
    project: str | os.PathLike[str] | None = None,
) -> list[FoundFile]:
    """The config files of `client` (a client id; None for every client) that exist, project files first.

    Raises:
        UsageError: `client` is not a known client id.
    """
    if client is not None and client not in CLIENT_IDS:
        raise UsageError(f"unknown client {client!r}; expected one of {', '.join(CLIENT_IDS)} (or auto).")
    environ = os.environ if environ is None else environ
    base = Path(project) if project is not None else Path.cwd()
    found = []
    for candidate in candidates(environ, base):
        if (client is None or candidate.client == client) and candidate.path.is_file():
            title = client_by_id(candidate.client).title
            found.append(FoundFile(candidate.client, title, candidate.path, candidate.scope))
    return found


def import_servers(
    files: Sequence[FoundFile],
    *,
    environ: Mapping[str, str] | None = None,
    project: str | os.PathLike[str] | None = None,
) -> ImportResult:
    """Read every file in `files` and decide what each server found becomes."""
    environ = os.environ if environ is None else environ
    base = str(Path(project) if project is not None else Path.cwd())
    result = ImportResult()
    taken: dict[str, ImportedServer] = {}
    for found in files:
        try:
            servers, notes = _read(found, environ, base)
        except ConfigError as exc:
            result.failed.append((found.path, str(exc)))
            continue
        result.notes.extend(f"{found.path}: {note}" for note in notes)
        for server in servers:
            decided = _decide(found, server, taken)
            if decided.status is ImportStatus.IMPORTED:
                taken[decided.name] = decided
            result.servers.append(decided)
    return result


def render_toml(servers: Sequence[ImportedServer]) -> str:
    """A native `mcpstation.toml` with `servers`, each under a comment naming where it came from."""
    document = tomlkit.document()
    document.add(tomlkit.comment("Imported by `mcpstation import`. Variables are references: set them before `up`."))
    document.add(tomlkit.nl())
    table = tomlkit.table(is_super_table=True)
    for server in servers:
        entry = tomlkit.table()
        entry.comment(f"from {server.client}: {server.file}")
        for key, value in _ordered(server.fields):
            entry.add(key, _toml_value(value))
        entry.add(tomlkit.nl())
        table.add(server.name, entry)
    document.add("servers", table)
    return tomlkit.dumps(document)


def _read(found: FoundFile, environ: Mapping[str, str], project: str) -> tuple[list[ForeignServer], list[str]]:
    fmt = _FORMATS.get(found.path.suffix.lower())
    if fmt is None:  # pragma: no cover  # every candidate has a known extension
        raise ConfigError("unknown config format.", path=str(found.path))
    try:
        text = found.path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc.__class__.__name__}.", path=str(found.path)) from None
    label = str(found.path)
    try:
        document, client = read_document(text, fmt, source=label, client=found.client)
        if client is None:  # pragma: no cover  # a forced client is always foreign
            raise Problem((), "not a client's MCP configuration.")
        options = ReadOptions(
            environ=environ,
            home=environ.get("HOME") or str(Path.home()),
            workspace=workspace_of(label) or project,
            mode="translate",
        )
        read = read_foreign(document.data, client, options, label=label, lines=document.lines)
    except Problem as problem:
        raise ConfigError(problem.message, path=label, key=render_path(problem.where) or None) from None
    return read.servers, read.notes


def _decide(found: FoundFile, server: ForeignServer, taken: Mapping[str, ImportedServer]) -> ImportedServer:
    fields = {key: value for key, value in server.fields.items()}
    transport = fields.get("transport") if isinstance(fields.get("transport"), str) else infer_transport(fields)

    def made(status: ImportStatus, reason: str | None = None) -> ImportedServer:
        return ImportedServer(server.name, found.title, found.path, transport, server.enabled, status, fields, reason)

    if server.skipped is not None:
        return made(ImportStatus.SKIPPED, server.skipped)
    if server.problem is not None:
        return made(ImportStatus.INVALID, server.unusable)
    first = taken.get(server.name)
    if first is not None:
        if _same(first.fields, fields):
            return made(ImportStatus.DUPLICATE, f"the same server is imported from {first.client}")
        return made(
            ImportStatus.CONFLICT, f"{first.client}'s server of this name ({first.file}) is imported; rename one"
        )
    problem = _load_problem(server.name, fields)
    if problem is not None:
        return made(ImportStatus.INVALID, problem)
    return made(ImportStatus.IMPORTED)


def _same(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    def comparable(fields: Mapping[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in fields.items() if key != "title"}

    return comparable(first) == comparable(second)


def _load_problem(name: str, fields: Mapping[str, Any]) -> str | None:
    """Why this server would not load from the TOML it is written to, or None."""
    text = render_toml([ImportedServer(name, "", Path(), None, True, ImportStatus.IMPORTED, fields)])
    try:
        parse_config(text, fmt="toml", source="mcpstation.toml", environ=_EveryVariable(), ask=None)
    except ConfigError as exc:
        return str(exc).removeprefix("mcpstation.toml:").split(": ", 1)[-1]
    return None


def _ordered(fields: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key in _FIELD_ORDER:
        if key in fields and not (key == "transport" and fields[key] == infer_transport(fields)):
            yield key, fields[key]
    for key, value in fields.items():
        if key not in _FIELD_ORDER:
            yield key, value


def _toml_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        inline = tomlkit.inline_table()
        for key, item in value.items():
            inline.append(str(key), _toml_value(item))
        return inline
    if isinstance(value, list | tuple):
        array = tomlkit.array()
        for item in value:
            array.append(_toml_value(item))
        return array
    return value


class _EveryVariable(Mapping[str, str]):
    """Every `${VAR}` set, to check that an imported server loads whatever its variables hold."""

    def __getitem__(self, key: str) -> str:
        return "1"

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0
