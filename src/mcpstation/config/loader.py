"""Load a configuration file of any supported shape into one validated `StationConfig`.

Steps: parse the text (by extension) → tell which client wrote it → our own shapes:
expand `${VAR}` and convert strictly; another client's file: read leniently (`_foreign.py`) →
validate. Every failure is a `ConfigError` naming the file, the line, the field path and what
was expected.
"""

from __future__ import annotations

import enum
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from mcpstation.config._clients import CLIENT_IDS, ClientFormat, client_by_id
from mcpstation.config._converted import Converted
from mcpstation.config._detect import allows_comments, detect
from mcpstation.config._expand import expand
from mcpstation.config._foreign import ForeignFile, ForeignServer, default_options, listed_only, read_foreign
from mcpstation.config._formats import to_native
from mcpstation.config._inputs import InputAsker, terminal_asker
from mcpstation.config._jsonc import has_jsonc_syntax
from mcpstation.config._lines import LineMap, line_of
from mcpstation.config._parse import Document, Format, parse_document
from mcpstation.config._problem import Problem, render_path
from mcpstation.config._servers import ServerList
from mcpstation.config._validate import validate
from mcpstation.config.models import StationConfig, StdioServerSpec
from mcpstation.errors import ConfigError, MissingVariablesError

logger = logging.getLogger(__name__)

CONFIG_ENV_VAR = "MCPSTATION_CONFIG"
DEFAULT_CONFIG_NAME = "mcpstation.toml"
_FORMATS: dict[str, Format] = {".toml": "toml", ".json": "json", ".jsonc": "json", ".yaml": "yaml", ".yml": "yaml"}
# Folders a client keeps a project's config in: `<project>/.vscode/mcp.json`.
PROJECT_FOLDERS = (".vscode", ".cursor", ".roo", ".gemini", ".zed", ".codex", ".continue", ".windsurf")


class _Terminal:
    """The default of `ask`: a terminal prompt when stdin is one."""

    def __repr__(self) -> str:
        return "TERMINAL"


TERMINAL = _Terminal()


def load_config(
    path: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    client: str | None = None,
    ask: InputAsker | _Terminal | None = TERMINAL,
    workspace: str | None = None,
) -> StationConfig:
    """Read, expand and validate the file at `path`; the result's `source` is that path.

    Any client's file is read in place: its format is told by its name and content (or forced
    with `client`, one of `CLIENT_IDS`). `ask` answers VS Code `${input:...}` references that no
    `MCPSTATION_INPUT_<ID>` variable gives (default: a terminal prompt when stdin is one);
    `workspace` is `${workspaceFolder}` (default: the project the file belongs to).

    Raises:
        ConfigError: the file is missing, unreadable, of an unknown extension, or invalid.
        MissingVariablesError: `${VAR}` references without a value (all of them listed).
    """
    file = Path(path).expanduser()
    fmt = _FORMATS.get(file.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"unknown config format {file.suffix!r}; expected .toml, .json, .jsonc, .yaml or .yml.", path=str(file)
        )
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such file.", path=str(file)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the file: {exc.__class__.__name__}.", path=str(file)) from None
    return parse_config(text, fmt=fmt, source=str(file), environ=environ, client=client, ask=ask, workspace=workspace)


def parse_config(
    text: str,
    *,
    fmt: Format,
    source: str | None = None,
    environ: Mapping[str, str] | None = None,
    client: str | None = None,
    ask: InputAsker | _Terminal | None = TERMINAL,
    workspace: str | None = None,
) -> StationConfig:
    """Parse `text` as `fmt` (any supported shape, any client's file) into a `StationConfig`.

    Raises:
        ConfigError: a syntax error, an unknown key, a wrong type or value, a duplicate server.
        MissingVariablesError: `${VAR}` references without a value (all of them listed).
    """
    label = source or f"<{fmt}>"
    environ = os.environ if environ is None else environ
    lines = None
    try:
        document, foreign = read_document(text, fmt, source=source, client=client)
        lines = document.lines
        if foreign is None:
            data = expand_servers_apart(document.data, environ, label=label)
            converted = to_native(data, lenient_list=fmt != "toml")
        else:
            asker = terminal_asker() if isinstance(ask, _Terminal) else ask
            options = default_options(environ, ask=asker, workspace=workspace or workspace_of(source))
            read = read_foreign(document.data, foreign, options, label=label, lines=lines)
            converted = settle_entries(read, lines, source=source, label=label)
            logger.debug("%s: read as %s's configuration", label, foreign.title)
    except Problem as problem:
        line = problem.line if problem.line is not None or lines is None else line_of(lines, problem.where)
        raise ConfigError(problem.message, path=label, line=line, key=render_path(problem.where) or None) from None
    config = validate(converted, document.lines, source=source, label=label)
    if source is not None:
        config = anchor_paths(config, Path(workspace or workspace_of(source) or Path(source).expanduser().parent))
    _log_presets(config)
    return config


def expand_servers_apart(data: object, environ: Mapping[str, str], *, label: str) -> object:
    """Our own file with its `${VAR}` references expanded, one server at a time.

    A server whose variables have no value is kept as a disabled entry whose `unusable` names them,
    and every other server runs, as in a client's file: an editor or the MCP Inspector that starts
    the gateway with a small environment still gets the servers it can run.

    Raises:
        MissingVariablesError: a variable outside `servers` has no value, or no enabled server can
            run (every missing variable named).
    """
    try:
        return expand(data, environ, source=label)
    except MissingVariablesError as whole:
        servers = data.get("servers") if isinstance(data, Mapping) else None
        if not isinstance(data, Mapping) or not isinstance(servers, Mapping):
            raise
        try:
            rest = expand({key: value for key, value in data.items() if key != "servers"}, environ, source=label)
        except MissingVariablesError:
            raise whole from None
        kept: dict[str, object] = {}
        runnable = False
        for name, server in servers.items():
            try:
                kept[name] = expand(server, environ, source=label)
            except MissingVariablesError as missing:
                if not isinstance(server, Mapping):
                    raise whole from None
                reason = f"environment variable(s) not set: {', '.join(missing.names)}."
                logger.warning("%s: server %r cannot run and is left out: %s", label, name, reason)
                kept[name] = listed_only(server, reason)
            else:
                runnable = runnable or not (isinstance(server, Mapping) and server.get("enabled") is False)
        if not runnable:
            raise whole from None
        return {**rest, "servers": kept}


def anchor_paths(config: StationConfig, base: Path) -> StationConfig:
    """Relative commands and working directories of stdio servers, taken from `base`, not the cwd.

    An editor starts the station from anywhere, so `./bin/server` means the one beside the config
    file (or, for a client's project file such as `.vscode/mcp.json`, in its project). A relative
    command of a server with its own `cwd` is taken from that `cwd`; `~` is the user's home.
    """
    base = base.expanduser().absolute()
    servers = tuple(_anchored(spec, base) if isinstance(spec, StdioServerSpec) else spec for spec in config.servers)
    if servers == config.servers:
        return config
    return config.model_copy(update={"servers": servers})


def _anchored(spec: StdioServerSpec, base: Path) -> StdioServerSpec:
    cwd = None if spec.cwd is None else str(base / Path(spec.cwd).expanduser())
    command = spec.command
    if "/" in command or (os.altsep is not None and os.altsep in command) or command.startswith("~"):
        command = str(Path(cwd or base) / Path(command).expanduser())
    if (command, cwd) == (spec.command, spec.cwd):
        return spec
    return spec.model_copy(update={"command": command, "cwd": cwd})


class _Failure(enum.Enum):
    """Why a client's server cannot run, in the order a file that none of them can run reports them."""

    READING = 1  # a value could not be read: an env file, an input, a value of the wrong kind
    VARIABLES = 2  # variables without a value
    FIELDS = 3  # its fields do not make a server


def settle_entries(read: ForeignFile, lines: LineMap, *, source: str | None, label: str) -> Converted:
    """A client's file as its client reads it: one server at a time.

    A server that cannot run (an env file that is missing, an input nobody gives, variables
    without a value, fields that do not make a server, an extension the client runs itself) is
    kept as a disabled entry whose `unusable` says why, and every other server runs.

    Raises:
        ConfigError: no enabled server of the file can run, and at least one because of an error
            in it: the first error in reading, else a `MissingVariablesError` naming every
            variable, else the first invalid server.
    """
    failures: list[tuple[_Failure, ConfigError]] = []
    for server in read.servers:
        failure = _failure(server, lines, source=source, label=label)
        if failure is not None:
            server.refused = str(failure[1])
            failures.append(failure)
    if failures and not any(server.unusable is None and server.enabled for server in read.servers):
        first = min(failures, key=lambda failure: failure[0].value)
        if first[0] is _Failure.VARIABLES:
            names = [
                name for kind, error in failures if isinstance(error, MissingVariablesError) for name in error.names
            ]
            raise MissingVariablesError(names, path=label)
        raise first[1]
    for server in read.servers:
        if server.unusable is not None and server.skipped is None:
            logger.warning("%s: server %r cannot run and is left out: %s", label, server.name, server.unusable)
    return read.converted(listing=True)


def _failure(
    server: ForeignServer, lines: LineMap, *, source: str | None, label: str
) -> tuple[_Failure, ConfigError] | None:
    if server.problem is not None:
        where = server.problem.where
        line = server.problem.line if server.problem.line is not None else line_of(lines, where)
        error = ConfigError(server.problem.message, path=label, line=line, key=render_path(where) or None)
        return _Failure.READING, error
    if server.missing:
        return _Failure.VARIABLES, MissingVariablesError(server.missing, path=label)
    if server.skipped is not None:
        return None
    alone = Converted()
    ServerList(alone).add(server.fields, server.where, name=server.name, origins=server.origins)
    try:
        validate(alone, lines, source=source, label=label)
    except ConfigError as exc:
        return _Failure.FIELDS, exc
    return None


def read_document(
    text: str, fmt: Format, *, source: str | None, client: str | None = None
) -> tuple[Document, ClientFormat | None]:
    """Parse `text` and tell which client wrote it (None: one of our own shapes).

    JSON may hold comments and trailing commas when the file belongs to a client that allows them.

    Raises:
        Problem: a syntax error, or `client` is not a known client id.
    """
    path = Path(source) if source else None
    forced = _client(client)
    if fmt != "json":
        document = parse_document(text, fmt)
        return document, detect(path, document.data, client)
    lenient = allows_comments(path) or (forced is not None and forced.comments)
    try:
        document = parse_document(text, "json", comments=lenient)
    except Problem as strict:
        if lenient or not has_jsonc_syntax(text):
            raise
        try:
            document = parse_document(text, "json", comments=True)
        except Problem:
            raise strict from None
        found = detect(path, document.data, client)
        if found is None or not found.comments:
            raise Problem(
                strict.where,
                f"{strict.message} (Comments and trailing commas are read only in the files "
                "of clients that allow them: VS Code, Zed, Gemini CLI.)",
                line=strict.line,
            ) from None
        return document, found
    return document, detect(path, document.data, client)


def workspace_of(source: str | None) -> str | None:
    """The project a client's file belongs to: `<project>/.vscode/mcp.json` → `<project>`."""
    if not source:
        return None
    file = Path(source).expanduser().absolute()
    if file.parent.name in PROJECT_FOLDERS and file.parent.parent != Path.home():  # ~/.cursor/ is the user's
        return str(file.parent.parent)
    if file.parent.name == "mcpServers" and file.parent.parent.name == ".continue":
        return str(file.parent.parent.parent)
    if file.name == ".mcp.json":
        return str(file.parent)
    return None


def _client(client_id: str | None) -> ClientFormat | None:
    if client_id is None:
        return None
    try:
        return client_by_id(client_id)
    except KeyError:
        raise Problem((), f"unknown client {client_id!r}; expected one of {', '.join(CLIENT_IDS)}.") from None


def default_config() -> StationConfig:
    """The configuration used when there is no file: one stdio demo server."""
    demo = StdioServerSpec(name="demo", command=sys.executable, args=("-m", "mcpstation.testing.demo_server"))
    return StationConfig(servers=(demo,))


def resolve_config_path(
    explicit: str | None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
) -> Path | None:
    """Pick the config file: `explicit` (`--config`) > `$MCPSTATION_CONFIG` > `./mcpstation.toml`.

    Returns None when none applies, meaning `default_config()`. Relative paths are taken from `cwd`.
    """
    base = Path.cwd() if cwd is None else Path(cwd)
    environ = os.environ if environ is None else environ
    if explicit:
        return base / Path(explicit).expanduser()
    from_env = environ.get(CONFIG_ENV_VAR)
    if from_env:
        return base / Path(from_env).expanduser()
    candidate = base / DEFAULT_CONFIG_NAME
    return candidate if candidate.is_file() else None


def _log_presets(config: StationConfig) -> None:
    presets = config.presets
    on = [name for name, enabled in (("fetch", presets.fetch_enabled), ("exa", presets.exa_enabled)) if enabled]
    if on:
        logger.info("presets enabled: %s", ", ".join(on))
