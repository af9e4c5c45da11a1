"""Read another client's file leniently and faithfully: its servers, in our native fields.

The client's keys that mean something to us are mapped (`_clients.py`); its other keys, and the
file's keys that are not MCP configuration at all, are accepted and reported at DEBUG. A key
close to one the client knows is reported at WARNING with a did-you-mean: it is probably a typo
the client would ignore too. Values are resolved (or, for an import, translated) per entry, so
nothing outside the MCP part is expanded and nothing in a disabled server is asked for.
"""

from __future__ import annotations

import difflib
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mcpstation.config._clients import KNOWN_KEYS, ClientFormat, Layout
from mcpstation.config._converted import Converted, expect_mapping
from mcpstation.config._detect import root_key
from mcpstation.config._entry_rules import Entry
from mcpstation.config._inputs import InputAsker, Inputs, InputSpec, input_specs
from mcpstation.config._lines import LineMap, line_of
from mcpstation.config._problem import Loc, Problem, render_path
from mcpstation.config._servers import ServerList, infer_transport
from mcpstation.config._values import Resolving, Translating, Values, Verbatim
from mcpstation.config._variables import Scope

logger = logging.getLogger(__name__)

Mode = Literal["resolve", "translate", "verbatim"]
TYPO_CUTOFF = 0.75  # how close an unknown key must be to a known one to be called a typo
_STDIO_FIELDS = ("command", "args", "env", "cwd")
_REMOTE_FIELDS = ("url", "headers", "bearer_token")
_OTHER_FIELDS = {
    "stdio": _REMOTE_FIELDS,
    "streamable_http": _STDIO_FIELDS,
    "sse": _STDIO_FIELDS,
    "websocket": (*_STDIO_FIELDS, "bearer_token"),
}


@dataclass(frozen=True)
class ReadOptions:
    """What a foreign file is read against."""

    environ: Mapping[str, str]
    home: str
    workspace: str  # ${workspaceFolder}; also the project whose ~/.claude.json entries apply
    ask: InputAsker | None = None
    mode: Mode = "resolve"  # "translate": keep references (an import); "verbatim": values as written


@dataclass
class ForeignServer:
    """One server of a foreign file, in native fields (`fields`), or why it cannot run.

    `skipped`: the client runs it itself (an extension); `problem`: reading it failed (an env file
    that is missing, an input nobody gives, a value of the wrong kind); `missing`: the variables
    it refers to that have no value. `as_written`: its name-like fields (title, transport,
    command, args, url) as the file writes them, to list it by when it cannot run.
    """

    name: str
    where: Loc
    fields: dict[str, Any]
    origins: dict[str, Loc]
    skipped: str | None = None
    problem: Problem | None = None
    missing: list[str] = field(default_factory=list)
    as_written: dict[str, Any] = field(default_factory=dict)
    refused: str | None = None  # set by whoever validates it: why its fields do not make a server

    @property
    def enabled(self) -> bool:
        return self.fields.get("enabled", self.as_written.get("enabled", True)) is not False

    @property
    def unusable(self) -> str | None:
        """Why it cannot run as written, in words; None when it can."""
        if self.refused is not None:
            return self.refused
        if self.problem is not None:
            return f"{render_path(self.problem.where)}: {self.problem.message}"
        if self.missing:
            return f"environment variable(s) not set: {', '.join(sorted(set(self.missing)))}."
        return self.skipped

    @property
    def transport(self) -> str | None:
        value = self.fields.get("transport")
        return value if isinstance(value, str) else infer_transport(self.fields)


@dataclass
class ForeignFile:
    """What was read: the servers, the variables that had no value, notes for an import."""

    client: ClientFormat
    servers: list[ForeignServer]
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def converted(self, *, listing: bool = False) -> Converted:
        """The servers as a native document: the runnable ones, and with `listing` the others as
        disabled entries that say why they cannot run (`unusable`); else those are left out."""
        out = Converted()
        servers = ServerList(out)
        for server in self.servers:
            reason = server.unusable
            if reason is None:
                servers.add(server.fields, server.where, name=server.name, origins=server.origins)
            elif listing:
                servers.add(listed_only(server.as_written, reason), server.where, name=server.name)
        return out


def read_foreign(
    doc: Mapping[str, Any], client: ClientFormat, options: ReadOptions, *, label: str, lines: LineMap
) -> ForeignFile:
    """Every server `client`'s file `doc` names.

    Raises:
        Problem: a value the client would refuse too (a table where a list belongs, a bad flag, an
            input without a value, ...), at its place in the file.
    """
    _report_other_keys(doc, client, label)
    inputs = Inputs(_input_definitions(doc, client), options.environ, options.ask)
    scope = Scope(
        environ=options.environ,
        home=options.home,
        workspace=options.workspace,
        base=Path(label).parent if label and not label.startswith("<") else Path(options.workspace),
        lookup_input=inputs.lookup,
    )
    result = ForeignFile(client=client, servers=[])
    resolving: Values
    if options.mode == "resolve":
        resolving = Resolving(client.syntax, scope)
    elif options.mode == "translate":
        resolving = Translating(client.syntax, scope, result.notes)
    else:
        resolving = Verbatim()
    switched_off = _switched_off(doc, client, options)
    for name, raw, where in _entries(doc, client, options):
        off_at = switched_off.get(name)
        off = off_at is not None or raw.get("disabled") is True or raw.get("enabled") is False
        values = Verbatim() if off and options.mode == "resolve" else resolving
        missing_before = len(scope.missing)
        entry = Entry(where, values, options.workspace)
        try:
            for key, value in raw.items():
                rule = client.keys.get(key)
                if rule is None:
                    _report_unknown(key, (*where, key), client, label, lines)
                else:
                    rule(entry, key, value)
        except Problem as problem:  # this entry only: every other server of the file is still read
            server = ForeignServer(name, where, {}, {}, problem=problem)
        else:
            if off_at is not None and entry.fields.get("enabled", True):
                entry.fields["enabled"] = False
                entry.origins["enabled"] = off_at
            _finish_transport(entry, client)
            server = ForeignServer(name, where, entry.fields, entry.origins, entry.skipped)
        server.missing = scope.missing[missing_before:]
        server.as_written = _as_written(raw, where, client, options.workspace, off=off)
        if client.id == "librechat" and server.problem is None:
            _warn_placeholders(server, label)
        result.servers.append(server)
    result.missing = scope.missing
    return result


_WRITTEN_FIELDS = ("title", "transport", "command", "args", "url")


def _as_written(
    raw: Mapping[str, Any], where: Loc, client: ClientFormat, workspace: str, *, off: bool
) -> dict[str, Any]:
    """The entry's name-like fields as written (nothing expanded, nothing read, no secret)."""
    entry = Entry(where, Verbatim(), workspace)
    for key, value in raw.items():
        rule = client.keys.get(key)
        if rule is None:
            continue
        try:
            rule(entry, key, value)
        except Problem:
            continue  # the value the problem is about: left out
    written = {key: entry.fields[key] for key in _WRITTEN_FIELDS if key in entry.fields}
    return {**written, "enabled": False} if off else written


def listed_only(written: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """A disabled native entry for a server that cannot run: its target as written and the reason."""
    out: dict[str, Any] = {"enabled": False, "unusable": reason}
    title = written.get("title")
    if isinstance(title, str) and title:
        out["title"] = title
    command, url, transport = written.get("command"), written.get("url"), written.get("transport")
    if isinstance(url, str) and url and not isinstance(command, str):
        remote = transport if transport in ("streamable_http", "sse", "websocket") else infer_transport({"url": url})
        return {**out, "transport": remote, "url": url}
    args = written.get("args")
    listed_args = [arg for arg in args if isinstance(arg, str)] if isinstance(args, list) else []
    return {**out, "transport": "stdio", "command": command if isinstance(command, str) and command else "(none)",
            "args": listed_args}  # fmt: skip


def _finish_transport(entry: Entry, client: ClientFormat) -> None:
    """Settle the transport, and drop the other transport's keys a client tolerates (`envs: {}` on
    a goose HTTP extension, a stale `url` on a Cline stdio server)."""
    if entry.skipped is not None:
        return
    if "transport" not in entry.fields:
        implied = entry.implied_transport
        if implied is None and "url" in entry.fields and "command" not in entry.fields:
            implied = client.url_transport or infer_transport(entry.fields)
        elif implied is None and "command" in entry.fields and "url" not in entry.fields:
            implied = "stdio"
        if implied is None:
            return  # both or neither: validation says what is wrong
        entry.fields["transport"] = implied
        entry.origins["transport"] = entry.origins.get("url", entry.where)
    transport = entry.fields["transport"]
    if transport not in _OTHER_FIELDS:
        return
    for name in _OTHER_FIELDS[transport]:
        if name in entry.fields:
            logger.debug("%s: not used by a %s server; ignored", render_path(entry.origins[name]), transport)
            del entry.fields[name]
            del entry.origins[name]


def _warn_placeholders(server: ForeignServer, label: str) -> None:
    """LibreChat's `{{LIBRECHAT_USER_ID}}` and `customUserVars` are filled per user, which no station does."""
    for name, value in server.fields.items():
        texts = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else [value]
        if any(isinstance(text, str) and "{{" in text for text in texts):
            logger.warning(
                "%s: %s: a LibreChat per-user placeholder ({{...}}) is passed on as written",
                label,
                render_path(server.origins.get(name, server.where)),
            )


def _entries(
    doc: Mapping[str, Any], client: ClientFormat, options: ReadOptions
) -> Iterator[tuple[str, Mapping[str, Any], Loc]]:
    layout = client.layout
    if layout is Layout.CLAUDE_JSON:
        yield from _claude_json_entries(doc, options.workspace)
        return
    if layout is Layout.SETTINGS_MCP:
        block = doc.get("mcp")
        if isinstance(block, Mapping):
            yield from _mapping_entries(block.get("servers"), ("mcp", "servers"))
        return
    if layout is Layout.SERVER_LIST:
        yield from _list_entries(doc)
        return
    key = root_key(client)
    yield from _mapping_entries(doc.get(key), (key,))


def _mapping_entries(raw: Any, where: Loc) -> Iterator[tuple[str, Mapping[str, Any], Loc]]:
    if raw is None:
        return
    for name, entry in expect_mapping(raw, where).items():
        yield str(name), expect_mapping(entry, (*where, name)), (*where, name)


def _list_entries(doc: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any], Loc]]:
    servers = doc.get("mcpServers")
    if isinstance(servers, list):
        for index, raw in enumerate(servers):
            entry = expect_mapping(raw, ("mcpServers", index))
            name = entry.get("name")
            if not isinstance(name, str) or not name:
                raise Problem(("mcpServers", index), "a server needs a 'name'.")
            yield name, {key: value for key, value in entry.items() if key != "name"}, ("mcpServers", index)
        return
    experimental = doc.get("experimental")
    legacy = experimental.get("modelContextProtocolServers") if isinstance(experimental, Mapping) else None
    if isinstance(legacy, list):  # Continue's old config.json: [{"transport": {...}}]
        where: Loc = ("experimental", "modelContextProtocolServers")
        for index, raw in enumerate(legacy):
            entry = expect_mapping(raw, (*where, index))
            transport = expect_mapping(entry.get("transport", {}), (*where, index, "transport"))
            yield f"mcp-{index + 1}", transport, (*where, index, "transport")


def _claude_json_entries(doc: Mapping[str, Any], workspace: str) -> Iterator[tuple[str, Mapping[str, Any], Loc]]:
    """User-scope servers, then the current project's local ones (which win on a shared name)."""
    local: dict[str, tuple[Mapping[str, Any], Loc]] = {}
    project = _project_entry(doc, workspace)
    projects = doc.get("projects")
    for key, settings in projects.items() if isinstance(projects, Mapping) else ():
        if (project is None or key != project[0]) and isinstance(settings, Mapping) and settings.get("mcpServers"):
            logger.debug("projects.%s: another project's servers; read from that project only", key)
    if project is not None:
        key, settings = project
        for name, entry, where in _mapping_entries(settings.get("mcpServers"), ("projects", key, "mcpServers")):
            local[name] = (entry, where)
    for name, entry, where in _mapping_entries(doc.get("mcpServers"), ("mcpServers",)):
        if name in local:
            logger.debug("%s: shadowed by the project's own server of that name", render_path(where))
            continue
        yield name, entry, where
    for name, (entry, where) in local.items():
        yield name, entry, where


def _project_entry(doc: Mapping[str, Any], workspace: str) -> tuple[str, Mapping[str, Any]] | None:
    """The `projects` entry for `workspace` or its nearest ancestor, as Claude Code picks it."""
    projects = doc.get("projects")
    if not isinstance(projects, Mapping):
        return None
    here = Path(workspace)
    for candidate in (here, *here.parents):
        settings = projects.get(str(candidate))
        if isinstance(settings, Mapping):
            return str(candidate), settings
    return None


def _switched_off(doc: Mapping[str, Any], client: ClientFormat, options: ReadOptions) -> dict[str, Loc]:
    """Servers a file-level list turns off: Gemini CLI's `mcp.excluded` (or `mcp.allowed` leaving
    them out), Claude Code's per-project `disabledMcpServers`."""
    off: dict[str, Loc] = {}
    if client.id == "gemini-cli":
        raw_block = doc.get("mcp")
        block: Mapping[str, Any] = raw_block if isinstance(raw_block, Mapping) else {}
        for where, names in (
            (("mcp", "excluded"), block.get("excluded")),
            (("excludeMCPServers",), doc.get("excludeMCPServers")),
        ):
            for index, name in enumerate(names if isinstance(names, list) else []):
                off[str(name)] = (*where, index)
        allowed = block.get("allowed", doc.get("allowMCPServers"))
        if isinstance(allowed, list):
            where = ("mcp", "allowed") if "allowed" in block else ("allowMCPServers",)
            for name, _entry, _where in _mapping_entries(doc.get("mcpServers"), ("mcpServers",)):
                if name not in allowed:
                    off.setdefault(name, where)
    elif client.layout is Layout.CLAUDE_JSON:
        project = _project_entry(doc, options.workspace)
        if project is not None:
            key, settings = project
            names = settings.get("disabledMcpServers")
            for index, name in enumerate(names if isinstance(names, list) else []):
                off[str(name)] = ("projects", key, "disabledMcpServers", index)
    return off


def _input_definitions(doc: Mapping[str, Any], client: ClientFormat) -> dict[str, InputSpec]:
    if client.layout is Layout.SERVERS:
        return input_specs(doc.get("inputs"), ("inputs",))
    if client.layout is Layout.SETTINGS_MCP and isinstance(doc.get("mcp"), Mapping):
        return input_specs(doc["mcp"].get("inputs"), ("mcp", "inputs"))
    return {}


def _report_other_keys(doc: Mapping[str, Any], client: ClientFormat, label: str) -> None:
    root = root_key(client)
    mcp_keys = {root, "inputs", "projects", "experimental"}
    others = [str(key) for key in doc if key not in mcp_keys]
    for key in others:
        if root not in doc and difflib.get_close_matches(key, [root], n=1, cutoff=TYPO_CUTOFF):
            logger.warning("%s: %s: not a key %s knows; ignored. Did you mean %r?", label, key, client.title, root)
    if others:
        logger.debug(
            "%s: %d key(s) that are not MCP configuration left alone: %s", label, len(others), ", ".join(others)
        )


def _report_unknown(key: str, where: Loc, client: ClientFormat, label: str, lines: LineMap) -> None:
    line = line_of(lines, where)
    place = f"{label}{'' if line is None else f':{line}'}: {render_path(where)}"
    close = [] if key in KNOWN_KEYS else difflib.get_close_matches(key, list(client.keys), n=1, cutoff=TYPO_CUTOFF)
    if close:
        logger.warning("%s: not a key %s knows; ignored. Did you mean %r?", place, client.title, close[0])
    else:
        logger.debug("%s: not used by mcpstation; ignored", place)


def default_options(environ: Mapping[str, str], *, ask: InputAsker | None, workspace: str | None = None) -> ReadOptions:
    """Options for reading a file for a run: the user's home and the current directory as workspace."""
    home = environ.get("HOME") or os.path.expanduser("~")
    return ReadOptions(environ=environ, home=home, workspace=workspace or os.getcwd(), ask=ask)
