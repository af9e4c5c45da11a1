"""Edit a server file in place (JSON, JSONC, TOML, YAML): list, add, remove, enable and disable servers.

What `mcpstation servers ... --config-file FILE` runs (add/remove/enable/disable). Every edit:

1. takes an exclusive lock on the sidecar `FILE.lock` (`fcntl.flock`), so concurrent editors in
   other processes queue instead of losing each other's changes;
2. re-reads the file and changes only the server entry concerned: TOML through `tomlkit`, JSON
   and JSONC as text (`_json_edit.py`), YAML through ruamel.yaml (`_yaml_edit.py`), so comments,
   key order, unrelated keys and formatting stay;
3. writes a temporary file beside it, fsyncs it and `os.replace`s the original, so a reader sees
   the old file or the new one, never half of one;
4. loads the result with `load_config` and, if it no longer loads (or the server added could not
   run), puts the previous bytes back and raises.

Shapes edited (`_server_file.py`): native `[servers.NAME]` (or `[[servers]]`), the JSON list
`{"servers": [{"id": ...}]}`, and every client's file in that client's own keys: Claude Desktop,
Claude Code, Cursor, VS Code, Windsurf, Cline, Roo Code, Zed, Gemini CLI, Codex, Continue,
goose, LibreChat. The `mcp` block of `mcp`-block files is read by the loader but not edited here.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from mcpstation.config._server_file import Fmt, ServerEntry, ServerFile
from mcpstation.config.loader import load_config
from mcpstation.errors import ConfigError, UsageError

LOCK_TIMEOUT_S = 10.0  # how long an edit waits for another process's edit of the same file
_LOCK_POLL_S = 0.01  # how often a waiting edit retries the lock
NEW_FILE_MODE = 0o600  # server files hold tokens and keys
_VARIABLE_PLACEHOLDER = "1"  # a value every field accepts, for variables unset while editing

__all__ = ["LOCK_TIMEOUT_S", "NEW_FILE_MODE", "ServerEntry", "ServerFileEditor"]


class ServerFileEditor:
    """Edits the servers of one JSON, TOML or YAML file; safe against concurrent editors in other processes.

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
            ConfigError: the file is missing, unreadable, not valid JSON/TOML/YAML, or of a shape this
                editor does not handle.
        """
        try:
            stat = self._path.stat()
        except FileNotFoundError:
            raise ConfigError("no such file.", path=str(self._path)) from None
        key = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        entries = self._parse(self._read()).entries()
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
        with self._editing(runs=name) as document:
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
    def _editing(self, *, create: bool = True, runs: str | None = None) -> Iterator[ServerFile]:
        """Lock, read, let the caller change the document, write atomically, validate or roll back.

        `runs`: a server that must be able to run afterwards (a client's file keeps one that cannot,
        listed with why; an edit must not write one).
        """
        with self._locked():
            try:
                before: bytes | None = self._path.read_bytes()
            except FileNotFoundError:
                if not create:
                    raise ConfigError("no such file.", path=str(self._path)) from None
                before = None
            except OSError as exc:
                raise ConfigError(f"cannot read the file: {exc.strerror or exc}.", path=str(self._path)) from None
            document = ServerFile(self._path, self._fmt, None) if before is None else self._parse(before)
            yield document
            self._write(document.dumps().encode("utf-8"))
            try:
                config = load_config(self._path, environ=_EveryVariableSet(), ask=None)
            except ConfigError as exc:
                self._restore(before)
                raise ConfigError(
                    f"the change was not saved: the file would no longer load ({exc}).", path=str(self._path)
                ) from exc
            unusable = next((spec.unusable for spec in config.servers if spec.name == runs), None)
            if unusable is not None:
                self._restore(before)
                raise ConfigError(f"the change was not saved: server {runs!r} could not run ({unusable}).",
                                  path=str(self._path))  # fmt: skip
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

    def _parse(self, raw: bytes) -> ServerFile:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ConfigError("the file is not UTF-8 text.", path=str(self._path)) from None
        return ServerFile(self._path, self._fmt, text)

    def _require(self, document: ServerFile, name: str) -> str:
        if name not in document.names():
            known = ", ".join(repr(known) for known in document.names()) or "none"
            raise UsageError(f"{self._path} has no server {name!r} (it has: {known}).")
        return name

    def _entry(self, name: str) -> ServerEntry:
        for entry in self.list():
            if entry.name == name:
                return entry
        raise ConfigError(f"server {name!r} is missing after the edit.", path=str(self._path))  # pragma: no cover


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
    if suffix in (".json", ".jsonc"):
        return "json"
    if suffix in (".yaml", ".yml"):
        return "yaml"
    raise ConfigError(
        f"this command edits .json, .jsonc, .toml and .yaml server files, not {suffix or 'files without an extension'}"
        "; edit the file by hand.",
        path=str(path),
    )


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
