"""One server file as the editor sees it: where its servers are, in whose vocabulary, and the edits.

Shapes edited: native TOML `[servers.NAME]` (or `[[servers]]`), the JSON list `{"servers": [...]}`,
a native JSON or YAML `{"servers": {NAME: ...}}`, and the file of every client: JSON/JSONC (Claude
Desktop, Claude Code, Cursor, VS Code, Windsurf, Cline, Roo Code, Zed, Gemini CLI), TOML (Codex)
and YAML (Continue's list, goose's extensions, LibreChat). A client's file gets new servers in that
client's own keys (`serverUrl` for Windsurf, `http_headers` for Codex, `cmd` for goose, ...). JSON
is edited as text (`_json_edit.py`), TOML through `tomlkit`, YAML through ruamel.yaml
(`_yaml_edit.py`): every key the editor does not own, and every comment, stays.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, MutableMapping, MutableSequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from mcpstation.config._clients import ClientFormat, Layout
from mcpstation.config._detect import allows_comments, detect, root_key
from mcpstation.config._foreign import ReadOptions, read_foreign
from mcpstation.config._json_edit import JsonText
from mcpstation.config._jsonc import has_jsonc_syntax
from mcpstation.config._lines import LineMap
from mcpstation.config._problem import Loc, Problem
from mcpstation.config._servers import infer_transport
from mcpstation.config._yaml_edit import YamlText
from mcpstation.config.models import TRANSPORT_ALIASES
from mcpstation.errors import ConfigError, UsageError

Fmt = Literal["json", "toml", "yaml"]
ShapeKind = Literal["table", "list", "client"]
_EDITABLE_LAYOUTS = (
    Layout.MCP_SERVERS,
    Layout.CLAUDE_JSON,
    Layout.SERVERS,
    Layout.SETTINGS_MCP,
    Layout.CONTEXT_SERVERS,
    Layout.MCP_SERVERS_TOML,
    Layout.SERVER_LIST,
    Layout.EXTENSIONS,
)
_EXCLUDED: Loc = ("mcp", "excluded")  # Gemini CLI's list of servers switched off


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """A server as written in the file (no `${VAR}` expanded, no secret shown)."""

    name: str
    enabled: bool
    transport: str | None  # as written (aliases resolved), else inferred from `command`/`url`; None if neither
    target: str  # the command line or the URL
    title: str | None = None


class ServerFile:
    """A parsed server file: its shape, its servers, and edits that keep everything else."""

    def __init__(self, path: Path, fmt: Fmt, text: str | None) -> None:
        """`text` None: a new file, in the native shape.

        Raises:
            ConfigError: the file cannot be parsed, or has a shape this editor does not handle.
        """
        self._path = path
        self._fmt = fmt
        self._json: JsonText | None = None
        self._toml: tomlkit.TOMLDocument | None = None
        self._yaml: YamlText | None = None
        try:
            if fmt == "toml":
                self._toml = tomlkit.parse(text or "")
            elif fmt == "yaml":
                self._yaml = YamlText(text or "")
            else:
                self._json = JsonText(text or "", comments=allows_comments(path) or _has_comments(text))
        except tomlkit.exceptions.ParseError as exc:
            raise ConfigError(f"invalid TOML: {exc}.", path=str(path), line=exc.line) from None
        except Problem as problem:
            raise ConfigError(problem.message, path=str(path), line=problem.line) from None
        self._kind, self._root, self._client = self._shape()

    # -- reading ---------------------------------------------------------------------------------

    def dumps(self) -> str:
        if self._toml is not None:
            return tomlkit.dumps(self._toml)
        if self._yaml is not None:
            return self._yaml.dumps()
        assert self._json is not None
        return self._json.text

    def names(self) -> builtins.list[str]:
        return [name for name, _raw in self._raw_entries()]

    def entries(self) -> tuple[ServerEntry, ...]:
        if self._client is not None:
            return self._client_entries(self._client)
        return tuple(self._describe(name, raw) for name, raw in self._raw_entries())

    # -- edits -----------------------------------------------------------------------------------

    def add(self, name: str, fields: Mapping[str, Any]) -> None:
        if self._kind == "list" and self._client is not None:  # Continue: a list of entries that name themselves
            self._append(self._root, {"name": name, **_in_client_keys(self._client, fields)})
            return
        if self._kind == "list":
            key = "id" if self._uses_ids() else "name"
            renamed = {
                ("name" if field == "title" and key == "id" else field): value for field, value in fields.items()
            }
            self._append(self._root, {key: name, **renamed})
            return
        entry = dict(fields) if self._client is None else _in_client_keys(self._client, fields, name=name)
        self._set((*self._root, name), entry)

    def remove(self, name: str) -> None:
        self._delete(self._place(name))

    def set_enabled(self, name: str, enabled: bool) -> None:
        place = self._place(name)
        raw = self._plain_at(place)
        client = self._client
        if client is not None and client.off is None:
            if client.id == "gemini-cli":
                self._set_excluded(name, enabled)
                return
            raise UsageError(
                f"{client.title} has no switch for one server in this file ({self._path.name}); "
                "it keeps that state itself. Remove the server instead, or list it in an mcpstation.toml."
            )
        key, off_value = (client.off if client is not None else None) or ("enabled", False)
        other = "enabled" if key == "disabled" else "disabled"
        if other in raw:
            self._delete((*place, other))  # both switches at once would contradict (or repeat) each other
        if not enabled:
            self._set((*place, key), off_value)
        elif key in raw and key == "disabled":
            self._delete((*place, key))
        elif key in raw:
            self._set((*place, key), True)  # `enabled = true` kept as the user had it

    # -- shape -----------------------------------------------------------------------------------

    def _shape(self) -> tuple[ShapeKind, Loc, ClientFormat | None]:
        data = self._plain_root()
        if not isinstance(data, Mapping):
            raise ConfigError("expected a table (mapping) at the top level.", path=str(self._path))
        client = detect(self._path, data)
        if client is not None:
            if client.layout not in _EDITABLE_LAYOUTS:
                raise ConfigError(
                    f"{client.title}'s servers are not a mapping this command edits; edit the file by hand.",
                    path=str(self._path),
                )
            root: Loc = ("mcp", "servers") if client.layout is Layout.SETTINGS_MCP else (root_key(client),)
            if client.layout is Layout.SERVER_LIST:
                if not isinstance(data.get("mcpServers", []), builtins.list):
                    raise ConfigError(
                        f"{client.title}'s servers are not a list this command edits; edit the file by hand.",
                        path=str(self._path),
                    )
                return "list", root, client
            return "client", root, client
        if "mcp" in data:
            raise ConfigError(
                "this file keeps its servers in an `mcp` block, which this command does not edit; "
                "edit the file by hand.",
                path=str(self._path),
            )
        servers = data.get("servers")
        if isinstance(servers, builtins.list) or (servers is None and self._fmt == "json"):
            return "list", ("servers",), None
        if servers is None or isinstance(servers, Mapping):
            return "table", ("servers",), None
        raise ConfigError(
            "expected a table of servers ([servers.NAME]) or a list.", path=str(self._path), key="servers"
        )

    def _raw_entries(self) -> builtins.list[tuple[str, Mapping[str, Any]]]:
        root = self._plain_at_or_none(self._root)
        if root is None:
            return []
        label = ".".join(str(part) for part in self._root)
        out: builtins.list[tuple[str, Mapping[str, Any]]] = []
        if self._kind == "list":
            if not isinstance(root, builtins.list):
                raise ConfigError("expected a list.", path=str(self._path), key=label)
            for index, raw in enumerate(root):
                if not isinstance(raw, Mapping):
                    raise ConfigError("expected a table (mapping).", path=str(self._path), key=f"{label}[{index}]")
                name = raw.get("id", raw.get("name"))
                if isinstance(name, str):
                    out.append((name, raw))
            return out
        if not isinstance(root, Mapping):
            raise ConfigError("expected a table (mapping).", path=str(self._path), key=label)
        for name, raw in root.items():
            if not isinstance(raw, Mapping):
                raise ConfigError("expected a table (mapping).", path=str(self._path), key=f"{label}.{name}")
            out.append((str(name), raw))
        return out

    def _place(self, name: str) -> Loc:
        if self._kind != "list":
            return (*self._root, name)
        root = self._plain_at(self._root)
        for index, raw in enumerate(root if isinstance(root, builtins.list) else []):
            if isinstance(raw, Mapping) and raw.get("id", raw.get("name")) == name:
                return (*self._root, index)
        raise KeyError(name)

    def _uses_ids(self) -> bool:
        # The list keys entries by `id` (its `name` is a display title); an empty list follows it.
        root = self._plain_at_or_none(self._root)
        root = root if isinstance(root, builtins.list) else []
        has_entries = any(isinstance(raw, Mapping) for raw in root)
        return not has_entries or any(isinstance(raw, Mapping) and "id" in raw for raw in root)

    def _client_entries(self, client: ClientFormat) -> tuple[ServerEntry, ...]:
        options = ReadOptions(environ={}, home=str(Path.home()), workspace=str(self._path.parent), mode="verbatim")
        lines: LineMap = {}
        try:
            read = read_foreign(self._plain_root(), client, options, label=str(self._path), lines=lines)
        except Problem as problem:
            raise ConfigError(problem.message, path=str(self._path), key=".".join(map(str, problem.where))) from None
        entries = []
        for server in read.servers:
            fields = server.fields
            target = _target(fields)
            title = fields.get("title") if isinstance(fields.get("title"), str) else None
            entries.append(ServerEntry(server.name, server.enabled, server.transport, target, title))
        return tuple(entries)

    @staticmethod
    def _describe(name: str, raw: Mapping[str, Any]) -> ServerEntry:
        plain = _plain(raw)
        enabled = plain.get("enabled", True) is not False
        title_key = "name" if "id" in plain else "title"
        title = plain.get(title_key) if isinstance(plain.get(title_key), str) else None
        transport = plain.get("transport")
        transport = (
            TRANSPORT_ALIASES.get(transport, transport) if isinstance(transport, str) else infer_transport(plain)
        )
        return ServerEntry(name=name, enabled=enabled, transport=transport, target=_target(plain), title=title)

    def _set_excluded(self, name: str, enabled: bool) -> None:
        excluded = self._plain_at_or_none(_EXCLUDED)
        names = [str(item) for item in excluded] if isinstance(excluded, builtins.list) else []
        if enabled and name in names:
            names.remove(name)
        elif not enabled and name not in names:
            names.append(name)
        self._set(_EXCLUDED, names)

    # -- the two backends ------------------------------------------------------------------------

    def _plain_root(self) -> Any:
        if self._toml is not None:
            return _plain(self._toml)
        if self._yaml is not None:
            return _plain(self._yaml.data)
        assert self._json is not None
        return self._json.data

    def _plain_at(self, where: Loc) -> Any:
        value = self._plain_root()
        for part in where:
            value = value[part]
        return value

    def _plain_at_or_none(self, where: Loc) -> Any:
        try:
            return self._plain_at(where)
        except (KeyError, IndexError, TypeError):
            return None

    def _set(self, where: Loc, value: Any) -> None:
        if self._json is not None:
            self._json = self._json.set(where, value)
            return
        if self._yaml is not None:
            self._yaml.set(where, value)
            return
        assert self._toml is not None
        container: Any = self._toml
        for part in where[:-1]:
            if part not in container:
                container[part] = tomlkit.table(is_super_table=True)
            container = container[part]
        container[where[-1]] = _toml_table(value, self._kind) if isinstance(value, Mapping) else _toml_value(value)

    def _append(self, where: Loc, value: Mapping[str, Any]) -> None:
        if self._yaml is not None:
            self._yaml.append(where, dict(value))
            return
        if self._json is not None:
            if not self._json.has(where):
                self._json = self._json.set(where, [dict(value)])
            else:
                self._json = self._json.insert(where, None, dict(value))
            return
        assert self._toml is not None
        key = str(where[0])
        if key not in self._toml:
            self._toml[key] = tomlkit.aot()
        root = self._toml[key]
        assert isinstance(root, MutableSequence)
        root.append(_toml_table(value, "list"))

    def _delete(self, where: Loc) -> None:
        if self._json is not None:
            self._json = self._json.remove(where)
            return
        if self._yaml is not None:
            self._yaml.remove(where)
            return
        assert self._toml is not None
        container: Any = self._toml
        for part in where[:-1]:
            container = container[part]
        assert isinstance(container, MutableMapping | MutableSequence)
        del container[where[-1]]  # type: ignore[arg-type]  # a key for tables, an index for arrays


def _in_client_keys(client: ClientFormat, fields: Mapping[str, Any], *, name: str | None = None) -> dict[str, Any]:
    """Native fields (`command`, `url`, `transport`, ...) in the client's own keys.

    A key with a dot (`requestOptions.headers`) is a table within the entry. `name` goes to the
    client's `name_key` when it keeps one (goose's display name), unless a title is given.

    Raises:
        UsageError: a field the client's file has no place for.
    """
    out: dict[str, Any] = {}
    transport = fields.get("transport")
    for field, value in fields.items():
        if field in ("transport", "name"):
            continue
        if field == "enabled":
            if value is False:
                if client.off is None:
                    raise UsageError(f"{client.title} has no switch for one server; add it enabled.")
                out[client.off[0]] = client.off[1]
            continue
        key = client.write_keys.get(field)
        if key is None:
            raise UsageError(
                f"{client.title}'s file has no place for {field!r}; put this server in an mcpstation.toml instead."
            )
        *tables, last = key.split(".")
        target = out
        for table in tables:
            target = target.setdefault(table, {})
        target[last] = value
    if client.name_key is not None and name is not None:
        out.setdefault(client.name_key, name)
    written = transport if isinstance(transport, str) else "stdio"
    if written != "stdio" or client.typed:
        if client.write_types is not None:
            if written not in client.write_types:
                raise UsageError(f"{client.title} does not speak the {written!r} transport.")
            out = {"type": client.write_types[written], **out}
        elif written not in (("streamable_http", "sse") if client.id == "windsurf" else ("streamable_http",)):
            raise UsageError(f"{client.title} does not speak the {written!r} transport.")
    fixed = {
        key: value
        for key, value in client.write_fixed.items()
        if key not in out and not (key == "args" and written != "stdio")  # a remote server has no arguments
    }
    return {**out, **fixed}


def _target(fields: Mapping[str, Any]) -> str:
    """The command line or the URL, as written."""
    command, args = fields.get("command"), fields.get("args")
    if isinstance(command, str):
        return " ".join([command, *(str(arg) for arg in (args if isinstance(args, builtins.list) else []))])
    return str(fields.get("url", ""))


def _has_comments(text: str | None) -> bool:
    return text is not None and has_jsonc_syntax(text)


def _plain(value: Any) -> Any:
    """JSON-like plain Python from tomlkit items or tuples."""
    if isinstance(value, tomlkit.items.Item | tomlkit.TOMLDocument):
        value = value.unwrap()
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, builtins.list | tuple):
        return [_plain(item) for item in value]
    return value


def _toml_table(fields: Mapping[str, Any], kind: ShapeKind) -> Any:
    table = tomlkit.table()
    for key, value in fields.items():
        table.add(key, _toml_value(value))
    if kind != "list":
        table.add(tomlkit.nl())  # a blank line before whatever table follows
    return table


def _toml_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        inline = tomlkit.inline_table()
        for key, item in value.items():
            inline.append(key, _toml_value(item))
        return inline
    if isinstance(value, builtins.list | tuple):
        array = tomlkit.array()
        for item in value:
            array.append(_toml_value(item))
        return array
    return value
