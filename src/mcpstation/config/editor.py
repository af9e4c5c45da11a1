"""Edit a JSON or TOML server file in place: list, add, remove, enable and disable servers.

What `mcpstation servers ... --config-file FILE` runs (seed 002's add/remove/toggle). Every edit:

1. takes an exclusive lock on the sidecar `FILE.lock` (`fcntl.flock`), so concurrent editors in
   other processes queue instead of losing each other's changes;
2. re-reads the file and changes only the server entry concerned: TOML through `tomlkit`, so
   comments, order and formatting stay; JSON (which has no comments) keeps key order, unrelated
   keys and its indentation;
3. writes a temporary file beside it, fsyncs it and `os.replace`s the original, so a reader sees
   the old file or the new one, never half of one;
4. loads the result with `load_config` and, if it no longer loads, puts the previous bytes back
   and raises.

Shapes edited: native TOML `[servers.NAME]` (or `[[servers]]`), seed 002's JSON
`{"servers": [{"id": ...}]}`, a native JSON `{"servers": {NAME: ...}}`, and Claude Desktop's
`{"mcpServers": {...}}` (VS Code's `{"servers": {...}}` too). The `mcp` block of seeds
000/001/003 and YAML files are read by the loader but not edited here.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator, Mapping, MutableMapping, MutableSequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import tomlkit
import tomlkit.exceptions
import tomlkit.items

from mcpstation.config._formats import _is_vs_code
from mcpstation.config._servers import infer_transport
from mcpstation.config.loader import load_config
from mcpstation.config.models import TRANSPORT_ALIASES
from mcpstation.errors import ConfigError, UsageError

LOCK_TIMEOUT_S = 10.0  # how long an edit waits for another process's edit of the same file
_LOCK_POLL_S = 0.01  # how often a waiting edit retries the lock
NEW_FILE_MODE = 0o600  # server files hold tokens and keys
_VARIABLE_PLACEHOLDER = "1"  # a value every field accepts, for variables unset while editing
_JSON_INDENT = re.compile(r"\n([ \t]+)\S")  # the first indented line shows the file's indent
# Native field → Claude Desktop key, for the fields that shape renames.
_DESKTOP_RENAMES = {"transport": "type", "call_timeout_s": "timeout"}

Fmt = Literal["json", "toml"]
ShapeKind = Literal["table", "list", "desktop"]


@dataclass(frozen=True, slots=True)
class ServerEntry:
    """A server as written in the file (no `${VAR}` expanded, no secret shown)."""

    name: str
    enabled: bool
    transport: str | None  # as written (aliases resolved), else inferred from `command`/`url`; None if neither
    target: str  # the command line or the URL
    title: str | None = None


class ServerFileEditor:
    """Edits the servers of one JSON or TOML file; safe against concurrent editors in other processes.

    Reads (`list`) are cached by the file's identity and modification time.
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self._path = Path(path).expanduser()
        self._fmt = _format_of(self._path)
        self._lock_path = self._path.with_name(self._path.name + ".lock")
        self._lock_timeout_s = lock_timeout_s
        self._cache: tuple[tuple[int, int, int], tuple[ServerEntry, ...]] | None = None

    @property
    def path(self) -> Path:
        return self._path

    def __repr__(self) -> str:
        return f"<ServerFileEditor {str(self._path)!r} {self._fmt}>"

    def list(self) -> tuple[ServerEntry, ...]:
        """The servers in file order.

        Raises:
            ConfigError: the file is missing, unreadable, not valid JSON/TOML, or of a shape this
                editor does not handle.
        """
        try:
            stat = self._path.stat()
        except FileNotFoundError:
            raise ConfigError("no such file.", path=str(self._path)) from None
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        entries = _Document.parse(self._read(), self._fmt, self._path).entries()
        self._cache = (key, entries)
        return entries

    def add(self, spec: Mapping[str, Any]) -> ServerEntry:
        """Add a server given in native field names (`name`, `command`, `args`, `env`, `url`, ...).

        The file is created when missing (TOML `[servers.NAME]`, or JSON `{"servers": [...]}`).

        Raises:
            UsageError: `spec` has no `name`, or a server of that name is in the file.
            ConfigError: the file cannot be parsed or edited, or the result does not load (the
                file is left as it was).
        """
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise UsageError("a server needs a 'name'.")
        fields = {key: value for key, value in spec.items() if key != "name" and value is not None}
        with self._editing() as document:
            if name in document.names():
                raise UsageError(
                    f"{self._path} already has a server {name!r}. Remove it first, or choose another name."
                )
            document.add(name, fields)
        return self._entry(name)

    def remove(self, name: str) -> None:
        """Remove the server `name`.

        Raises:
            UsageError: no server of that name is in the file.
            ConfigError: the file cannot be parsed or edited, or the result does not load.
        """
        with self._editing(create=False) as document:
            document.remove(self._require(document, name))

    def set_enabled(self, name: str, enabled: bool) -> ServerEntry:
        """Enable or disable the server `name` (`enabled = false`, or Desktop's `"disabled": true`).

        Raises:
            UsageError: no server of that name is in the file.
            ConfigError: the file cannot be parsed or edited, or the result does not load.
        """
        with self._editing(create=False) as document:
            document.set_enabled(self._require(document, name), enabled)
        return self._entry(name)

    # -- the edit cycle --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _editing(self, *, create: bool = True) -> Iterator[_Document]:
        """Lock, read, let the caller change the document, write atomically, validate or roll back."""
        with self._locked():
            try:
                before: bytes | None = self._path.read_bytes()
            except FileNotFoundError:
                if not create:
                    raise ConfigError("no such file.", path=str(self._path)) from None
                before = None
            except OSError as exc:
                raise ConfigError(f"cannot read the file: {exc.strerror or exc}.", path=str(self._path)) from None
            document = (
                _Document.new(self._fmt, self._path)
                if before is None
                else _Document.parse(before, self._fmt, self._path)
            )
            yield document
            self._write(document.dumps().encode("utf-8"))
            try:
                load_config(self._path, environ=_EveryVariableSet())
            except ConfigError as exc:
                self._restore(before)
                raise ConfigError(
                    f"the change was not saved: the file would no longer load ({exc}).", path=str(self._path)
                ) from exc
            self._cache = None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # A sidecar, not the file itself: `os.replace` swaps the file's inode under any lock on it.
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, NEW_FILE_MODE)
        except OSError as exc:
            raise ConfigError(
                f"cannot create the lock file: {exc.strerror or exc}.", path=str(self._lock_path)
            ) from None
        try:
            deadline = time.monotonic() + self._lock_timeout_s
            while True:
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ConfigError(
                            f"another process has been editing the file for over {self._lock_timeout_s:g}s "
                            f"(it holds {self._lock_path.name}). Try again when it is done.",
                            path=str(self._path),
                        ) from None
                    time.sleep(_LOCK_POLL_S)
            yield
        finally:
            os.close(descriptor)  # closing releases the lock

    def _write(self, data: bytes) -> None:
        try:
            mode = self._path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = NEW_FILE_MODE
        descriptor, temporary = tempfile.mkstemp(dir=self._path.parent, prefix=f".{self._path.name}.", suffix=".tmp")
        try:
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, mode)
            os.replace(temporary, self._path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        _fsync_directory(self._path.parent)

    def _restore(self, before: bytes | None) -> None:
        if before is None:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
            _fsync_directory(self._path.parent)
        else:
            self._write(before)
        self._cache = None

    def _read(self) -> bytes:
        try:
            return self._path.read_bytes()
        except FileNotFoundError:
            raise ConfigError("no such file.", path=str(self._path)) from None
        except OSError as exc:
            raise ConfigError(f"cannot read the file: {exc.strerror or exc}.", path=str(self._path)) from None

    def _require(self, document: _Document, name: str) -> str:
        if name not in document.names():
            known = ", ".join(repr(known) for known in document.names()) or "none"
            raise UsageError(f"{self._path} has no server {name!r} (it has: {known}).")
        return name

    def _entry(self, name: str) -> ServerEntry:
        for entry in self.list():
            if entry.name == name:
                return entry
        raise ConfigError(f"server {name!r} is missing after the edit.", path=str(self._path))  # pragma: no cover


class _Document:
    """A parsed server file and where its servers are: a table, a list, or Desktop's mapping."""

    def __init__(self, data: Any, fmt: Fmt, path: Path, *, indent: int | str = 2, newline: bool = True) -> None:
        self._data = data
        self._fmt = fmt
        self._path = path
        self._indent = indent
        self._newline = newline
        self._kind, self._root_key = self._shape()

    @classmethod
    def parse(cls, raw: bytes, fmt: Fmt, path: Path) -> _Document:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError("the file is not UTF-8 text.", path=str(path)) from None
        if fmt == "toml":
            try:
                return cls(tomlkit.parse(text), fmt, path)
            except tomlkit.exceptions.ParseError as exc:
                raise ConfigError(f"invalid TOML: {exc}.", path=str(path), line=exc.line) from None
        try:
            data = json.loads(text) if text.strip() else {}
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON: {exc.msg}.", path=str(path), line=exc.lineno) from None
        match = _JSON_INDENT.search(text)
        indent: int | str = 2 if match is None else match.group(1)
        if isinstance(indent, str) and set(indent) == {" "}:
            indent = len(indent)
        return cls(data, fmt, path, indent=indent, newline=text.endswith("\n") or not text)

    @classmethod
    def new(cls, fmt: Fmt, path: Path) -> _Document:
        return cls(tomlkit.document() if fmt == "toml" else {}, fmt, path)

    def dumps(self) -> str:
        if self._fmt == "toml":
            return tomlkit.dumps(self._data)
        return json.dumps(self._data, indent=self._indent, ensure_ascii=False) + ("\n" if self._newline else "")

    def names(self) -> builtins.list[str]:
        return [name for name, _raw in self._raw_entries()]

    def entries(self) -> tuple[ServerEntry, ...]:
        return tuple(self._describe(name, raw) for name, raw in self._raw_entries())

    def add(self, name: str, fields: Mapping[str, Any]) -> None:
        root = self._root(create=True)
        if self._kind == "list":
            assert isinstance(root, MutableSequence)
            key = "id" if self._uses_ids(root) else "name"
            renamed = {
                ("name" if field == "title" and key == "id" else field): value for field, value in fields.items()
            }
            root.append(self._table({key: name, **renamed}))
            return
        assert isinstance(root, MutableMapping)
        if self._kind == "desktop":
            fields = _to_desktop(fields)
        root[name] = self._table(fields)

    def remove(self, name: str) -> None:
        root = self._root()
        if self._kind == "list":
            assert isinstance(root, MutableSequence)
            del root[self._list_index(root, name)]
        else:
            assert isinstance(root, MutableMapping)
            del root[name]

    def set_enabled(self, name: str, enabled: bool) -> None:
        entry = self._entry_table(name)
        if self._kind == "desktop":
            if enabled:
                entry.pop("disabled", None)
            else:
                entry["disabled"] = True
        elif enabled and "enabled" not in entry:
            return  # servers are enabled by default
        else:
            entry["enabled"] = enabled

    # -- shape -----------------------------------------------------------------------------------

    def _shape(self) -> tuple[ShapeKind, str]:
        # The same decisions as `mcpstation.config._formats.to_native`, narrowed to what we edit.
        data = self._data
        if not isinstance(data, Mapping):
            raise ConfigError("expected a table (mapping) at the top level.", path=str(self._path))
        if "mcp" in data:
            raise ConfigError(
                "this file keeps its servers in an `mcp` block, which this command does not edit; "
                "edit the file by hand.",
                path=str(self._path),
            )
        if "mcpServers" in data:
            return "desktop", "mcpServers"
        if _is_vs_code(data):
            return "desktop", "servers"
        servers = data.get("servers")
        if isinstance(servers, MutableSequence) or (servers is None and self._fmt == "json"):
            return "list", "servers"
        if servers is None or isinstance(servers, MutableMapping):
            return "table", "servers"
        raise ConfigError(
            "expected a table of servers ([servers.NAME]) or a list.", path=str(self._path), key="servers"
        )

    def _root(self, *, create: bool = False) -> Any:
        root = self._data.get(self._root_key)
        if root is None and create:
            if self._kind == "list":
                root = tomlkit.aot() if self._fmt == "toml" else []
            else:
                root = tomlkit.table(is_super_table=True) if self._fmt == "toml" else {}
            self._data[self._root_key] = root
            root = self._data[self._root_key]
        return root

    def _raw_entries(self) -> builtins.list[tuple[str, Mapping[str, Any]]]:
        root = self._root()
        if root is None:
            return []
        out: builtins.list[tuple[str, Mapping[str, Any]]] = []
        if self._kind == "list":
            for index, raw in enumerate(root):
                if not isinstance(raw, Mapping):
                    raise ConfigError("expected a table (mapping).", path=str(self._path), key=f"servers[{index}]")
                name = raw.get("id", raw.get("name"))
                if isinstance(name, str):
                    out.append((name, raw))
            return out
        for name, raw in root.items():
            if not isinstance(raw, Mapping):
                raise ConfigError("expected a table (mapping).", path=str(self._path), key=f"{self._root_key}.{name}")
            out.append((str(name), raw))
        return out

    def _entry_table(self, name: str) -> MutableMapping[str, Any]:
        root = self._root()
        entry = root[self._list_index(root, name)] if self._kind == "list" else root[name]
        assert isinstance(entry, MutableMapping)
        return entry

    @staticmethod
    def _list_index(root: Any, name: str) -> int:
        for index, raw in enumerate(root):
            if isinstance(raw, Mapping) and raw.get("id", raw.get("name")) == name:
                return index
        raise KeyError(name)

    @staticmethod
    def _uses_ids(root: Any) -> bool:
        # Seed 002 keys entries by `id` (its `name` is a display title); an empty list follows it.
        has_entries = any(isinstance(raw, Mapping) for raw in root)
        return not has_entries or any(isinstance(raw, Mapping) and "id" in raw for raw in root)

    def _table(self, fields: Mapping[str, Any]) -> Any:
        if self._fmt == "json":
            return _plain(fields)
        table = tomlkit.table()
        for key, value in fields.items():
            table.add(key, _toml_value(value))
        if self._kind != "list":
            table.add(tomlkit.nl())  # a blank line before whatever table follows
        return table

    def _describe(self, name: str, raw: Mapping[str, Any]) -> ServerEntry:
        plain = _plain(raw)
        if self._kind == "desktop":
            enabled = plain.get("disabled") is not True
            transport = plain.get("type", plain.get("transport"))
            title = None
        else:
            enabled = plain.get("enabled", True) is not False
            transport = plain.get("transport")
            title_key = "name" if self._kind == "list" and "id" in plain else "title"
            title = plain.get(title_key) if isinstance(plain.get(title_key), str) else None
        if isinstance(transport, str):
            transport = TRANSPORT_ALIASES.get(transport, transport)
        else:
            transport = infer_transport(plain)
        if isinstance(plain.get("command"), str):
            args = plain.get("args") if isinstance(plain.get("args"), builtins.list) else []
            target = " ".join([plain["command"], *(str(arg) for arg in args)])
        else:
            target = str(plain.get("url", ""))
        return ServerEntry(name=name, enabled=enabled, transport=transport, target=target, title=title)


class _EveryVariableSet(Mapping[str, str]):
    """The environment for validating an edit: the editing shell may lack the station's variables,
    so every `${VAR}` reads as set (its real value, or a placeholder)."""

    def __getitem__(self, key: str) -> str:
        return os.environ.get(key) or _VARIABLE_PLACEHOLDER

    def __iter__(self) -> Iterator[str]:
        return iter(os.environ)

    def __len__(self) -> int:
        return len(os.environ)


def _format_of(path: Path) -> Fmt:
    suffix = path.suffix.lower()
    if suffix == ".toml":
        return "toml"
    if suffix == ".json":
        return "json"
    raise ConfigError(
        f"this command edits .json and .toml server files, not {suffix or 'files without an extension'}; "
        "edit the file by hand.",
        path=str(path),
    )


def _to_desktop(fields: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "enabled":
            if value is False:
                out["disabled"] = True
            continue
        out[_DESKTOP_RENAMES.get(key, key)] = value
    return out


def _plain(value: Any) -> Any:
    """JSON-like plain Python from tomlkit items or tuples."""
    if isinstance(value, tomlkit.items.Item):
        value = value.unwrap()
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, builtins.list | tuple):
        return [_plain(item) for item in value]
    return value


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


def _fsync_directory(directory: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse to open a directory for this.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
