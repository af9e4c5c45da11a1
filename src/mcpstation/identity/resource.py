"""`ResourceServer`: the station as an OAuth 2.1 resource server, as the `[auth]` table configures it.

The HTTP faces ask it three things: is this token one of a trusted issuer's access tokens for
this station (`verify`), what does the station say about itself (`metadata`), and what does a
refusal say (`challenge`). It holds one key cache per issuer for the station's life.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcpstation.config.models import AuthSettings, StationConfig, TrustedIssuer
from mcpstation.identity.keys import Fetch, GuardedFetch
from mcpstation.identity.metadata import (
    ChallengeError,
    Surface,
    challenge,
    metadata_paths,
    protected_resource_metadata,
)
from mcpstation.identity.tokens import AccessTokenVerifier, VerifiedToken
from mcpstation.policy import UrlGuard


class ResourceServer:
    """Trusted issuers, their keys, and what the station answers about tokens."""

    def __init__(self, settings: AuthSettings, fetch: Fetch) -> None:
        assert settings.public_url is not None  # AuthSettings validates it once issuers exist
        self.settings = settings
        self.public_url = settings.public_url
        self.verifier = AccessTokenVerifier(settings, fetch)
        self.metadata_paths = metadata_paths(settings.public_url)

    @classmethod
    def from_config(cls, config: StationConfig, *, fetch: Fetch | None = None) -> ResourceServer | None:
        """The resource server `[auth]` describes (keys fetched through `[policy]`'s URL guard); None
        when no issuer is configured."""
        if not config.auth.issuers:
            return None
        return cls(config.auth, fetch if fetch is not None else GuardedFetch(UrlGuard.from_policy(config.policy)))

    async def verify(self, token: str) -> VerifiedToken:
        """See `AccessTokenVerifier.verify`.

        Raises:
            InvalidToken: not a valid access token for this station.
        """
        return await self.verifier.verify(token)

    def metadata(self) -> dict[str, Any]:
        """The Protected Resource Metadata document (RFC 9728)."""
        return protected_resource_metadata(self.settings)

    def face_scopes(self, issuer: TrustedIssuer, surface: Surface) -> tuple[str, ...]:
        """The scopes a token of `issuer` needs for `surface`."""
        return issuer.gateway_scopes if surface is Surface.GATEWAY else issuer.api_scopes

    def challenge(
        self,
        surface: Surface,
        error: ChallengeError | None = None,
        *,
        scopes: Iterable[str] | None = None,
        description: str | None = None,
    ) -> str:
        """The `WWW-Authenticate` value of a refusal (see `metadata.challenge`)."""
        return challenge(self.settings, surface, error=error, scopes=scopes, description=description)
