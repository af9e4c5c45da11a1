"""Verifying an identity provider's access token (RFC 9068) and mapping its claims to a caller.

PyJWT checks the signature, `exp`, `nbf`, `iat`, `iss` and unknown `crit` headers; this module
adds what PyJWT leaves to its user, in this order, each failure an `InvalidToken`:

1. the token's issuer (read before the signature, only to pick the issuer's settings) is trusted;
2. its `alg` is one that issuer may use (never `none`, never a symmetric one);
3. its `typ` is `at+jwt`: an ID token, or any other JWT of that issuer, is not an access token;
4. its key id names a key of that issuer's key set (`keys.IssuerKeys`);
5. `exp`, `iss`, `sub` and `aud` are present, and `aud` names this station (the issuer's
   `audiences`, by default the station's public URL), compared as URLs (scheme and host case,
   default ports and an empty path do not matter);

then the claims become a `Principal` (issuer, subject, client id, token id, groups, scopes) and a
role by the issuer's `ClaimMapping`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import jwt
from pydantic import SecretStr

from mcpstation.config.models import AuthSettings, Role, TrustedIssuer
from mcpstation.identity.keys import Fetch, IssuerKeys
from mcpstation.pipeline import Principal

logger = logging.getLogger(__name__)

ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})  # RFC 9068 §2.1
REQUIRED_CLAIMS = ("exp", "iss", "sub", "aud")
_DEFAULT_PORTS = {"http": 80, "https": 443}


class InvalidToken(Exception):
    """A token that is not a valid access token for this station; the message says why (never the token)."""


@dataclass(frozen=True, slots=True)
class VerifiedToken:
    """A valid access token's caller: its principal, the role its claims map to (None: no role
    here), and the settings of the issuer that signed it."""

    principal: Principal
    role: Role | None
    issuer: TrustedIssuer


def looks_like_jwt(token: str) -> bool:
    """Whether `token` has a JWS compact serialisation's shape (three dot-separated parts)."""
    return token.count(".") == 2


def canonical_url(url: str) -> str:
    """`url` with its scheme and host in lower case, its default port dropped and an empty path as `/`."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        return url
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def audience_matches(claimed: object, accepted: Iterable[str]) -> bool:
    """Whether the `aud` claim (a string or a list) names one of the `accepted` audiences."""
    values = [claimed] if isinstance(claimed, str) else claimed if isinstance(claimed, list) else []
    wanted = {_audience_key(a) for a in accepted}
    return any(isinstance(v, str) and _audience_key(v) in wanted for v in values)


def _audience_key(audience: str) -> str:
    return canonical_url(audience) if audience.lower().startswith(("http://", "https://")) else audience


class AccessTokenVerifier:
    """Verifies access tokens of the `[auth]` issuers; one `IssuerKeys` cache per issuer."""

    def __init__(self, settings: AuthSettings, fetch: Fetch, *, clock: Callable[[], float] = time.monotonic) -> None:
        assert settings.public_url is not None or not settings.issuers  # AuthSettings validates this
        self.settings = settings
        self.keys = {
            issuer.issuer: IssuerKeys(
                issuer, fetch, ttl_s=settings.jwks_ttl_s, debounce_s=settings.jwks_refresh_debounce_s, clock=clock
            )
            for issuer in settings.issuers
        }

    async def verify(self, token: str) -> VerifiedToken:
        """The caller of `token`.

        Raises:
            InvalidToken: anything in the module docstring's list failed.
        """
        try:
            header = jwt.get_unverified_header(token)
            unverified = jwt.decode(token, options={"verify_signature": False})
        except jwt.InvalidTokenError:
            raise InvalidToken("not a well-formed JWT") from None
        keys = self.keys.get(str(unverified.get("iss")))
        if keys is None:
            raise InvalidToken("its issuer is not trusted here")
        issuer = keys.issuer
        algorithm = header.get("alg")
        if algorithm not in issuer.algorithms:
            raise InvalidToken(f"its algorithm {algorithm!r} is not accepted from this issuer")
        if str(header.get("typ", "")).lower() not in ACCESS_TOKEN_TYPES:
            raise InvalidToken("it is not an access token (typ is not at+jwt)")
        kid = header.get("kid")
        key = await keys.key(kid if isinstance(kid, str) else None)
        if key is None:
            raise InvalidToken(f"its key {kid!r} is not one of the issuer's signing keys")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                issuer=issuer.issuer,
                leeway=self.settings.clock_skew_s,
                options={"require": list(REQUIRED_CLAIMS), "verify_aud": False},
            )
        except jwt.InvalidTokenError as exc:
            raise InvalidToken(str(exc)) from None
        accepted = issuer.audiences or (self.settings.public_url or "",)
        if not audience_matches(claims.get("aud"), accepted):
            raise InvalidToken("its audience is not this station")
        principal = principal_of(claims, issuer, SecretStr(token))
        return VerifiedToken(principal, role_of(principal, issuer), issuer)


def principal_of(claims: Mapping[str, Any], issuer: TrustedIssuer, token: SecretStr | None = None) -> Principal:
    """The principal a verified token's claims describe."""
    mapping = issuer.roles
    client_id = next((str(claims[c]) for c in mapping.client_id_claims if isinstance(claims.get(c), str)), None)
    token_id = claims.get("jti")
    return Principal(
        issuer=issuer.issuer,
        subject=str(claims["sub"]),
        client_id=client_id,
        token_id=token_id if isinstance(token_id, str) else None,
        groups=_names(claims.get(mapping.groups_claim)),
        scopes=_names(claims.get("scope")) | _names(claims.get("scp")),
        subject_token=token,
        expires_at=float(claims["exp"]) if isinstance(claims.get("exp"), int | float) else None,
    )


def role_of(principal: Principal, issuer: TrustedIssuer) -> Role | None:
    """The role the issuer's claim mapping gives `principal`; None when its groups give none."""
    mapping = issuer.roles
    if principal.groups & set(mapping.admin_groups):
        return Role.ADMIN
    if not mapping.user_groups or principal.groups & set(mapping.user_groups):
        return Role.USER
    return None


def _names(value: object) -> frozenset[str]:
    """A claim holding names: a space-separated string or a list of strings."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(v for v in value if isinstance(v, str))
    return frozenset()
