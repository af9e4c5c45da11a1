"""Each user's own record for one `user-oauth` upstream: one sealed `user_oauth` row in the store.

`SealedUserStorage` is the SDK's `TokenStorage` over that row (so the SDK's flow writes the tokens
and client it gets), with the fields the station adds (the authorization server's token and
revocation endpoints, the resource), all sealed by `sealing.Sealer` before they reach the store.
`exclusive()` is that row's lock across every replica on the store, held while refreshing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from mcpstation.config.models import AnyServerSpec
from mcpstation.host.oauth.sealing import Sealer, SealError
from mcpstation.host.oauth.storage import REFRESH_LOCK_TIMEOUT_S, RecordStorage
from mcpstation.store.records import UserOAuth

logger = logging.getLogger(__name__)

USER_OAUTH = "user-oauth"

User = tuple[str, str]
GrantKey = tuple[User, str]  # ((issuer, subject), server)


class UserOAuthStore(Protocol):
    """What per-user grants need of the station's store (`mcpstation.store.Store` implements it)."""

    async def get_user_oauth(self, user: User, server: str) -> UserOAuth | None: ...
    async def list_user_oauth(self, user: User) -> tuple[UserOAuth, ...]: ...
    async def set_user_oauth(
        self, user: User, server: str, server_url: str, sealed: str, expires_at: datetime | None
    ) -> None: ...
    async def delete_user_oauth(self, user: User, server: str) -> bool: ...
    def exclusive(self, name: str, *, timeout_s: float) -> AbstractAsyncContextManager[None]: ...


def is_user_oauth(spec: AnyServerSpec) -> bool:
    return spec.auth.upstream == USER_OAUTH


def server_url(spec: AnyServerSpec) -> str:
    url: str = getattr(spec, "url", "")
    return url


class SealedUserStorage(RecordStorage):
    """The SDK `TokenStorage` protocol over one user's sealed `user_oauth` row for one server.

    A row kept for another server URL, or that does not open (another key, another row's record),
    reads as empty: the user signs in again.
    """

    def __init__(self, store: UserOAuthStore, sealer: Sealer, user: User, server: str, url: str) -> None:
        self.store = store
        self.sealer = sealer
        self.user = user
        self.server = server
        self.server_url = url

    def __repr__(self) -> str:
        return f"<SealedUserStorage {self.user[1]!r} {self.server!r}>"

    @property
    def _row(self) -> tuple[str, str, str]:
        return (self.user[0], self.user[1], self.server)

    async def clear(self) -> None:
        await self.store.delete_user_oauth(self.user, self.server)

    def exclusive(self, *, timeout_s: float = REFRESH_LOCK_TIMEOUT_S) -> AbstractAsyncContextManager[None]:
        # A digest of the row: names of any length and characters (PostgreSQL refuses NUL in text).
        digest = hashlib.sha256(json.dumps(self._row).encode()).hexdigest()
        return self.store.exclusive(f"user-oauth:{digest}", timeout_s=timeout_s)

    async def record(self) -> dict[str, Any]:
        """The whole opened record (tokens, expiry, client, endpoints)."""
        return await self._read()

    async def remember(self, **fields: Any) -> None:
        """Keep `fields` in the record beside what it holds."""
        await self._update(**fields)

    async def forget_tokens(self) -> None:
        """Drop the tokens, keep the client: the next sign-in reuses the registration."""
        data = await self._read()
        if data:
            await self._write({k: v for k, v in data.items() if k not in ("tokens", "expires_at")})

    async def _read(self) -> dict[str, Any]:
        row = await self.store.get_user_oauth(self.user, self.server)
        if row is None or row.server_url != self.server_url:
            return {}
        try:
            data = json.loads(self.sealer.open(row.sealed, self._row))
        except (SealError, ValueError) as exc:
            logger.warning("the sealed OAuth record of %r for %r does not open (%s); ignoring it", *self._row[1:], exc)
            return {}
        return data if isinstance(data, dict) else {}

    async def _update(self, **changes: Any) -> None:
        await self._write((await self._read()) | changes)

    async def _write(self, data: dict[str, Any]) -> None:
        expires_at = data.get("expires_at")
        expiry = datetime.fromtimestamp(expires_at, UTC) if isinstance(expires_at, int | float) else None
        sealed = self.sealer.seal(json.dumps(data).encode(), self._row)
        await self.store.set_user_oauth(self.user, self.server, self.server_url, sealed, expiry)
