"""The identity tests' OpenID provider: `oidc_provider.mjs` (oidc-provider 9.13.3 on Node 22) as a subprocess.

`TestIdp` starts it on a loopback port with a fresh EC signing key, mints tokens for named test
users (its test-only `urn:test:user` grant), restarts it with a new key id (rotation) or stops it
(an outage), and signs hand-made tokens with its current private key, for the hostile cases that
a real provider would never issue (no `exp`, a future `nbf`, an unknown `crit`, ...).
"""

from __future__ import annotations

import json
import os
import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import jwt
from _node import missing_reason, node_bin_dir
from anyio.abc import Process
from cryptography.hazmat.primitives.asymmetric import ec

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
START_TIMEOUT_S = 60.0  # Node and oidc-provider starting on a loaded 2-core machine
STOP_TIMEOUT_S = 10.0
TESTER = ("tester", "tester-secret")  # the client allowed the test-only user grant
STATION_CLIENT = ("station", "station-secret")  # the station's own client: client credentials, token exchange
TEST_USER_GRANT = "urn:test:user"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def new_key(kid: str) -> tuple[dict[str, Any], ec.EllipticCurvePrivateKey]:
    """A P-256 signing key as a private JWK (for the provider) and as a key object (to sign by hand)."""
    private = ec.generate_private_key(ec.SECP256R1())
    jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(private, as_dict=True)
    jwk.update(kid=kid, alg="ES256", use="sig")
    return jwk, private


def clients(station_url: str) -> list[dict[str, Any]]:
    return [
        {
            "client_id": TESTER[0],
            "client_secret": TESTER[1],
            "grant_types": [TEST_USER_GRANT],
            "redirect_uris": [],
            "response_types": [],
        },
        {
            "client_id": STATION_CLIENT[0],
            "client_secret": STATION_CLIENT[1],
            # user-oauth: each user authorizes it (PKCE) and the answer comes back to the station
            "grant_types": ["client_credentials", TOKEN_EXCHANGE, "authorization_code", "refresh_token"],
            "redirect_uris": [f"{station_url}/oauth/callback"],
            "response_types": ["code"],
            "scope": "offline_access mcp:tools mcp:api tools:read tools:write jira:read",
        },
    ]


class TestIdp:
    """A running oidc-provider: `issuer`, token minting, rotation, outage."""

    __test__ = False  # not a test class

    def __init__(self, station_url: str, *, access_ttl_s: int = 3600) -> None:
        self.station_url = station_url
        self.access_ttl_s = access_ttl_s
        self.port = 0
        self.issuer = ""
        self.kid = ""
        self._jwk: dict[str, Any] = {}
        self._private: ec.EllipticCurvePrivateKey | None = None
        self._process: Process | None = None

    async def start(self, *, kid: str | None = None) -> None:
        """Start (or start again, on the same port) with a new signing key named `kid`."""
        self.kid = kid or f"k-{secrets.token_hex(4)}"
        self._jwk, self._private = new_key(self.kid)
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "TMPDIR")},
            "PATH": f"{node_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}",
            "PORT": str(self.port),
            "KEYS": json.dumps([self._jwk]),
            "STATION": self.station_url,
            "CLIENTS": json.dumps(clients(self.station_url)),
            "ACCESS_TTL": str(self.access_ttl_s),
        }
        node = str(Path(node_bin_dir() or "") / "node")
        self._process = await anyio.open_process([node, str(SCRIPT)], env=env)
        assert self._process.stdout is not None
        seen = b""
        with anyio.fail_after(START_TIMEOUT_S):
            while b"\n" not in seen:
                chunk = await self._process.stdout.receive()
                seen += chunk
        self.issuer = seen.split(b"\n", 1)[0].decode().strip()
        self.port = int(self.issuer.rsplit(":", 1)[1])

    async def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        process.terminate()
        with anyio.move_on_after(STOP_TIMEOUT_S):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()

    async def rotate(self) -> str:
        """Restart on the same port with a new key id; the old key is gone from its key set."""
        await self.stop()
        await self.start()
        return self.kid

    # -- tokens ---------------------------------------------------------------------------------

    async def token(self, client: tuple[str, str], **form: str) -> dict[str, Any]:
        """The token endpoint's answer for `form`, authenticated as `client` (client_secret_basic)."""
        async with httpx2.AsyncClient(timeout=30) as http:
            response = await http.post(f"{self.issuer}/token", data=form, auth=client)
        body: dict[str, Any] = response.json()
        if response.status_code != 200:
            raise AssertionError(f"token endpoint refused {form.get('grant_type')}: {body}")
        return body

    async def user_token(
        self, sub: str, *, groups: tuple[str, ...] = (), resource: str | None = None, scope: str = ""
    ) -> str:
        """An access token (JWT) for the test user `sub` in `groups`, naming `resource` (default: the station)."""
        answer = await self.token(
            TESTER,
            grant_type=TEST_USER_GRANT,
            sub=sub,
            groups=",".join(groups),
            resource=resource or self.station_url,
            scope=scope,
        )
        return str(answer["access_token"])

    def sign(self, claims: dict[str, Any], **header: Any) -> str:
        """A token signed with the provider's current key: `claims` over sane defaults, `header` extra."""
        assert self._private is not None
        now = int(time.time())
        payload = {
            "iss": self.issuer,
            "sub": "mallory",
            "aud": self.station_url,
            "iat": now,
            "exp": now + 300,
            "client_id": "forged",
            "jti": secrets.token_hex(8),
            **claims,
        }
        payload = {k: v for k, v in payload.items() if v is not None}
        fields = {"kid": self.kid, "typ": "at+jwt", **header}
        fields = {k: v for k, v in fields.items() if v is not None}
        return jwt.encode(payload, self._private, algorithm="ES256", headers=fields)

    def public_pem(self) -> bytes:
        """The current verification key as PEM (what an HS256 forgery uses as its secret)."""
        assert self._private is not None
        from cryptography.hazmat.primitives import serialization

        return self._private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@asynccontextmanager
async def running_idp(station_url: str, **options: Any) -> AsyncIterator[TestIdp]:
    """A started `TestIdp` for the station at `station_url`, stopped on exit."""
    idp = TestIdp(station_url, **options)
    await idp.start()
    try:
        yield idp
    finally:
        await idp.stop()


def idp_missing() -> str | None:
    """Why the provider cannot run here (no Node 22, no oidc-provider), or None."""
    reason = missing_reason()
    if reason:
        return reason
    package = Path(__file__).resolve().parents[2] / "node_modules" / "oidc-provider" / "package.json"
    if not package.exists():
        return "oidc-provider is not installed (run `npm ci`)"
    return None


async def stats(idp: TestIdp) -> dict[str, int]:
    """Tokens the provider issued so far, by grant type."""
    async with httpx2.AsyncClient(timeout=30) as http:
        counted: dict[str, int] = (await http.get(f"{idp.issuer}/test/stats")).json()
    return counted


async def revoke_grants(idp: TestIdp, sub: str) -> None:
    """The provider forgets every grant of `sub`: their refresh tokens stop working."""
    async with httpx2.AsyncClient(timeout=30) as http:
        assert (await http.post(f"{idp.issuer}/test/revoke", params={"sub": sub})).status_code == 204


async def consent_as(authorization_url: str, user: str) -> httpx2.Response:
    """A browser signing in as `user`: follows the authorization URL through the provider (its
    cookies kept) back to the client's redirect URI, and returns that page's answer."""
    url = f"{authorization_url}&login_hint={user}"
    async with httpx2.AsyncClient(timeout=30, follow_redirects=False) as browser:
        for _ in range(10):
            response = await browser.get(url)
            if response.status_code not in (302, 303):
                return response
            url = str(response.url.join(response.headers["location"]))
    raise AssertionError("too many redirects")
