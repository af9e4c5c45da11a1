"""Where OAuth credentials live: the station's store, or one 0600 JSON file per server.

Both keep, beside the SDK's tokens and registered client, the access token's absolute expiry (so
a restarted station refreshes instead of re-authorizing) and the server URL the credentials were
issued for (so they never travel to another server). Both offer `exclusive()`, the server's lock
across every process sharing the storage, held while refreshing or signing in.
"""

from __future__ import annotations

import abc
import contextlib
import hashlib
import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import BaseModel, ValidationError

from mcpstation.file_lock import file_lock

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "MCPSTATION_DATA_DIR"
REFRESH_LOCK_TIMEOUT_S = 60.0  # how long a refresh waits for another process's refresh of the same server
_FILE_VERSION = 1


def oauth_storage_dir() -> Path:
    """Where token files live: `$MCPSTATION_DATA_DIR/oauth`, else `$XDG_DATA_HOME/mcpstation/oauth`,
    else `~/.local/share/mcpstation/oauth`."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if data_dir:
        return Path(data_dir).expanduser() / "oauth"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".local" / "share"
    return base / "mcpstation" / "oauth"


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def token_file(storage_dir: Path, server: str) -> Path:
    """The token file of the server named `server` (names that are not plain get a hash suffix)."""
    safe = _UNSAFE.sub("_", server).lstrip(".") or "server"
    if safe != server:
        safe = f"{safe}-{hashlib.sha256(server.encode()).hexdigest()[:8]}"
    return storage_dir / f"{safe}.json"


_Model = TypeVar("_Model", bound=BaseModel)


class RecordStorage(abc.ABC):
    """The SDK `TokenStorage` protocol over a record of three JSON fields: `tokens`, `expires_at`
    (seconds since the epoch) and `client_info`. Subclasses say where the record lives."""

    async def get_tokens(self) -> OAuthToken | None:
        return self._parse(OAuthToken, (await self._read()).get("tokens"))

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        await self._update(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = (await self._read()).get("client_info")
        return self._parse(OAuthClientInformationFull, raw)

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._update(client_info=client_info.model_dump(mode="json", exclude_none=True))

    async def get_token_expiry(self) -> float | None:
        """When the stored access token expires (seconds since the epoch), if the server said."""
        return _expiry((await self._read()).get("expires_at"))

    async def get_all(self) -> tuple[OAuthToken | None, float | None, OAuthClientInformationFull | None]:
        """The tokens, their expiry and the client, from one read."""
        record = await self._read()
        tokens = self._parse(OAuthToken, record.get("tokens"))
        client_info = self._parse(OAuthClientInformationFull, record.get("client_info"))
        return tokens, _expiry(record.get("expires_at")), client_info

    @abc.abstractmethod
    async def clear(self) -> None:
        """Forget everything stored for this server (sign out)."""

    @abc.abstractmethod
    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        """This server's lock across every process sharing the storage: held while refreshing or signing in."""

    @abc.abstractmethod
    async def _read(self) -> dict[str, Any]:
        """The record; empty when nothing (usable) is stored."""

    @abc.abstractmethod
    async def _update(self, **changes: Any) -> None:
        """Replace the given fields of the record."""

    def _parse(self, model: type[_Model], raw: object) -> _Model | None:
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            logger.warning("%r holds an invalid %s (%s); ignoring it", self, model.__name__, exc)
            return None


def _expiry(raw: object) -> float | None:
    return float(raw) if isinstance(raw, int | float) else None


class FileTokenStorage(RecordStorage):
    """The SDK `TokenStorage` protocol over one JSON file, written atomically with mode 0600.

    The file records the server URL it belongs to; a file written for another URL (the config
    changed) reads as empty, so tokens never travel to a server they were not issued for. An
    unreadable or corrupt file also reads as empty (the flow then authorizes afresh) and is
    reported in the log.
    """

    def __init__(self, path: Path, *, server_url: str | None = None) -> None:
        self.path = path
        self.server_url = server_url
        self._lock = anyio.Lock()  # read-modify-write of tokens vs client info

    def __repr__(self) -> str:
        return f"<FileTokenStorage {str(self.path)!r}>"

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        return file_lock(self.path.with_name(f"{self.path.name}.lock"), timeout_s=timeout_s)

    async def clear(self) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._remove)

    async def _read(self) -> dict[str, Any]:
        async with self._lock:
            return await anyio.to_thread.run_sync(self._load)

    async def _update(self, **changes: Any) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._load_and_store, changes)

    def _load_and_store(self, changes: dict[str, Any]) -> None:
        data = self._load() | changes
        data["version"] = _FILE_VERSION
        if self.server_url is not None:
            data["server_url"] = self.server_url
        self._store(data)

    def _load(self) -> dict[str, Any]:
        try:
            mode = self.path.stat().st_mode & 0o777
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as exc:
            logger.warning("cannot read OAuth token file %s (%s); authorizing afresh", self.path, exc)
            return {}
        if mode & 0o077:
            logger.warning(
                "OAuth token file %s was readable by others (mode %o); restricting it to 0600", self.path, mode
            )
            with contextlib.suppress(OSError):
                self.path.chmod(0o600)
        try:
            data = json.loads(text)
        except ValueError:
            logger.warning("OAuth token file %s is not JSON; ignoring it and authorizing afresh", self.path)
            return {}
        if not isinstance(data, dict):
            return {}
        stored_url = data.get("server_url")
        if self.server_url is not None and stored_url is not None and stored_url != self.server_url:
            logger.info(
                "OAuth token file %s was written for %s, not %s; ignoring it", self.path, stored_url, self.server_url
            )
            return {}
        return data

    def _store(self, data: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkstemp creates the file 0600 whatever the umask; os.replace makes the switch atomic.
        fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(data, file, indent=2, sort_keys=True)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable; not every filesystem allows it
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _remove(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


class StoredOAuth(Protocol):
    """One server's OAuth record as the store returns it (`mcpstation.store.OAuthCredentials`)."""

    @property
    def server_url(self) -> str: ...
    @property
    def tokens(self) -> Mapping[str, Any] | None: ...
    @property
    def token_expires_at(self) -> datetime | None: ...
    @property
    def client_info(self) -> Mapping[str, Any] | None: ...


class OAuthStore(Protocol):
    """What token storage needs of the station's store (`mcpstation.store.Store` implements it)."""

    async def get_oauth(self, server: str) -> StoredOAuth | None: ...

    async def set_oauth_tokens(
        self, server: str, server_url: str, tokens_json: Mapping[str, Any] | None, expires_at: datetime | None
    ) -> None: ...

    async def set_oauth_client(self, server: str, server_url: str, client_json: Mapping[str, Any] | None) -> None: ...

    async def delete_oauth(self, server: str) -> bool: ...

    def exclusive(self, name: str, *, timeout_s: float) -> AbstractAsyncContextManager[None]: ...


class StoreTokenStorage(RecordStorage):
    """The SDK `TokenStorage` protocol over the station's store: one `oauth_credentials` row per server.

    Credentials kept for another server URL (the server's URL changed) read as empty, and the
    first write for the new URL replaces them. A store that cannot be reached raises
    `StoreError`, which fails the connect: re-authorizing because a database blinked would ask a
    person to sign in for nothing.
    """

    def __init__(self, store: OAuthStore, server: str, server_url: str) -> None:
        self.store = store
        self.server = server
        self.server_url = server_url

    def __repr__(self) -> str:
        return f"<StoreTokenStorage {self.server!r} {self.server_url!r}>"

    async def clear(self) -> None:
        await self.store.delete_oauth(self.server)

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        return self.store.exclusive(f"oauth:{self.server}", timeout_s=timeout_s)

    async def _read(self) -> dict[str, Any]:
        record = await self.store.get_oauth(self.server)
        if record is None:
            return {}
        if record.server_url != self.server_url:
            logger.info(
                "OAuth credentials of %r were stored for %s, not %s; ignoring them",
                self.server,
                record.server_url,
                self.server_url,
            )
            return {}
        expires_at = record.token_expires_at
        return {
            "tokens": record.tokens,
            "expires_at": None if expires_at is None else expires_at.timestamp(),
            "client_info": record.client_info,
        }

    async def _update(self, **changes: Any) -> None:
        if "tokens" in changes:
            expires_at = changes.get("expires_at")
            expiry = None if expires_at is None else datetime.fromtimestamp(expires_at, UTC)
            await self.store.set_oauth_tokens(self.server, self.server_url, changes["tokens"], expiry)
        if "client_info" in changes:
            await self.store.set_oauth_client(self.server, self.server_url, changes["client_info"])
