"""What the station says about itself as a protected resource: RFC 9728 metadata and RFC 6750 challenges.

Everything is built from the configured public URL, never from the request: a forged `Host` or
`X-Forwarded-*` header cannot change the resource, the metadata URL in a challenge, or the
authorization servers a client is sent to.

The metadata document is served at both well-known forms: the path-suffixed one for the gateway
(`/.well-known/oauth-protected-resource/mcp`, what 2025-11-25 clients try first) and the root one.
Challenges follow the spec of each version at once: every 401 names `resource_metadata` and the
scopes the face needs; a request without a token gets no `error` (RFC 6750 §3.1), a bad token
`invalid_token`, too little scope a 403 `insufficient_scope` naming every scope needed.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from mcpstation.config.models import AuthSettings

WELL_KNOWN_PRM = "/.well-known/oauth-protected-resource"
GATEWAY_SUFFIX = "/mcp"


class Surface(enum.StrEnum):
    """Which protected part of the station a request is for: its scopes and metadata URL differ."""

    GATEWAY = "gateway"
    API = "api"


class ChallengeError(enum.StrEnum):
    """The `error` of a `Bearer` challenge (RFC 6750 §3.1); a request without a token gets none."""

    INVALID_TOKEN = "invalid_token"
    INSUFFICIENT_SCOPE = "insufficient_scope"


def metadata_paths(public_url: str) -> tuple[str, ...]:
    """The paths the metadata document is served at: root and path-suffixed, for the public URL's path too."""
    path = urlsplit(public_url).path.rstrip("/")
    paths = [WELL_KNOWN_PRM, WELL_KNOWN_PRM + GATEWAY_SUFFIX]
    if path:
        paths += [WELL_KNOWN_PRM + path, WELL_KNOWN_PRM + path + GATEWAY_SUFFIX]
    return tuple(dict.fromkeys(paths))


def metadata_url(public_url: str, surface: Surface) -> str:
    """The absolute metadata URL a challenge names (RFC 9728 §3.1: well-known inserted after the host)."""
    parts = urlsplit(public_url)
    suffix = GATEWAY_SUFFIX if surface is Surface.GATEWAY else ""
    return f"{parts.scheme}://{parts.netloc}{WELL_KNOWN_PRM}{parts.path.rstrip('/')}{suffix}"


def scopes_for(settings: AuthSettings, surface: Surface) -> tuple[str, ...]:
    """The scopes a token needs for `surface`, across issuers (what a challenge without a token names)."""
    found: list[str] = []
    for issuer in settings.issuers:
        found += issuer.gateway_scopes if surface is Surface.GATEWAY else issuer.api_scopes
    return tuple(dict.fromkeys(s for s in found if s != "offline_access"))


def protected_resource_metadata(settings: AuthSettings) -> dict[str, Any]:
    """The RFC 9728 document: `resource` exactly as configured; never `offline_access` (2026-07-28)."""
    assert settings.public_url is not None
    scopes = dict.fromkeys((*scopes_for(settings, Surface.GATEWAY), *scopes_for(settings, Surface.API)))
    return {
        "resource": settings.public_url,
        "authorization_servers": [issuer.issuer for issuer in settings.issuers],
        "scopes_supported": list(scopes),
        "bearer_methods_supported": ["header"],
        "resource_name": "mcpstation",
    }


def challenge(
    settings: AuthSettings,
    surface: Surface,
    *,
    error: ChallengeError | None = None,
    scopes: Iterable[str] | None = None,
    description: str | None = None,
) -> str:
    """A `WWW-Authenticate` value: `Bearer resource_metadata="…", scope="…"` and, for a bad token or
    too little scope, `error` (with a description that never quotes the token)."""
    assert settings.public_url is not None
    needed = tuple(scopes) if scopes is not None else scopes_for(settings, surface)
    params = [f'resource_metadata="{metadata_url(settings.public_url, surface)}"']
    if needed:
        params.append(f'scope="{" ".join(needed)}"')
    if error is not None:
        params.append(f'error="{error}"')
        if description:
            params.append(f'error_description="{_quotable(description)}"')
    return "Bearer " + ", ".join(params)


def _quotable(text: str) -> str:
    """RFC 6750 §3: error_description is limited to printable ASCII other than `"` and `\\`."""
    return "".join(c for c in text if 0x20 <= ord(c) <= 0x7E and c not in '"\\')[:200]
