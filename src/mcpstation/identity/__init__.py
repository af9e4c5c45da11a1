"""Identity: the station as an OAuth 2.1 resource server for an organisation's identity providers.

`ResourceServer` (from `[auth]`) verifies access tokens of trusted issuers (`tokens`: PyJWT plus
what RFC 9068 and the MCP authorization spec add), keeps each issuer's keys (`keys`: a TTL cache
refreshed without blocking and at most once per window on an unknown key id, through the URL
guard), maps claims to a `Principal` and a role, and says what a client needs to know
(`metadata`: Protected Resource Metadata and `WWW-Authenticate` challenges). The HTTP faces use
it; the upstream side (token exchange, per-user OAuth) lives with the OAuth client in `host/oauth`.
"""

from mcpstation.identity.keys import FETCH_TIMEOUT_S, Fetch, GuardedFetch, IssuerKeys, KeyFetchError
from mcpstation.identity.metadata import WELL_KNOWN_PRM, ChallengeError, Surface, metadata_url
from mcpstation.identity.resource import ResourceServer
from mcpstation.identity.tokens import (
    AccessTokenVerifier,
    InvalidToken,
    VerifiedToken,
    audience_matches,
    canonical_url,
    looks_like_jwt,
)

__all__ = [
    "FETCH_TIMEOUT_S",
    "WELL_KNOWN_PRM",
    "AccessTokenVerifier",
    "ChallengeError",
    "Fetch",
    "GuardedFetch",
    "InvalidToken",
    "IssuerKeys",
    "KeyFetchError",
    "ResourceServer",
    "Surface",
    "VerifiedToken",
    "audience_matches",
    "canonical_url",
    "looks_like_jwt",
    "metadata_url",
]
