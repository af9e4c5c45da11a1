"""`MintedTokenAuth`: an `httpx2.Auth` sending a token the station minted for an upstream.

Each request carries the current token (`mint` answers from a cache, see `exchange.UpstreamTokens`)
in `Authorization`, replacing whatever the client's default headers put there. An upstream that
answers 401 gets the request once more with a token minted afresh (the refused one forgotten
first); a second 401, or a failure to mint the new token, is the answer the transport sees.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx2
from pydantic import SecretStr

from mcpstation.host.oauth.exchange import UpstreamTokenError

logger = logging.getLogger(__name__)

Mint = Callable[[], Awaitable[SecretStr]]
"""The token to send now (cached, or minted if there is none)."""

Forget = Callable[[SecretStr], None]
"""Drops a token the upstream refused, so the next `Mint` makes a new one."""


class MintedTokenAuth(httpx2.Auth):
    """Bearer authentication with minted tokens; one new token after a 401."""

    requires_request_body = True  # a refused POST is sent again, body and all

    def __init__(self, mint: Mint, forget: Forget, *, server: str) -> None:
        self._mint = mint
        self._forget = forget
        self.server = server

    def __repr__(self) -> str:
        return f"<MintedTokenAuth {self.server!r}>"

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        token = await self._mint()
        _authorize(request, token)
        response = yield request
        if response.status_code != 401:
            return
        self._forget(token)
        try:
            fresh = await self._mint()
        except UpstreamTokenError as exc:
            logger.warning("server %r refused its token and no new one came: %s", self.server, exc)
            return
        logger.info("server %r refused its token; sending the request once more with a new one", self.server)
        _authorize(request, fresh)
        yield request


def _authorize(request: httpx2.Request, token: SecretStr) -> None:
    request.headers["Authorization"] = f"Bearer {token.get_secret_value()}"
