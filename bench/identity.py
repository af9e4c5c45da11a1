"""What checking a caller's token costs per request: an identity provider's JWT against a station token.

    python bench/identity.py [--calls N] [--rounds R] [--json FILE]

Each round, interleaved, N checks of each kind:
  station token  `Store.verify_token` of an opaque `mcps_...` token (SQLite store, `last_used_at` already
                 noted this minute, so a read only): what the API and the gateway do for the station's tokens;
  jwt (warm)     `AccessTokenVerifier.verify` of an ES256 access token from a trusted issuer whose keys are
                 cached: parse, key lookup, signature, claims, audience, the role mapping.
The issuer's key set is served from memory (a host callback standing in for the provider's JWKS
endpoint: the fetch happens once, before the clock runs, and is not what is measured).
Quoted: median microseconds per check over the rounds, and the ratio jwt / station token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from mcpstation.config.models import AuthSettings, Role
from mcpstation.identity.tokens import AccessTokenVerifier
from mcpstation.store import Store

ISSUER = "https://idp.example"
JWKS_URI = f"{ISSUER}/jwks"
STATION = "https://station.example/mcp"
KID = "bench-key"


def signing_key() -> tuple[ec.EllipticCurvePrivateKey, dict[str, Any]]:
    """A P-256 key and the key set (JWKS) that publishes its public half."""
    private = ec.generate_private_key(ec.SECP256R1())
    public: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(private.public_key(), as_dict=True)
    public.update(kid=KID, alg="ES256", use="sig")
    return private, {"keys": [public]}


def access_token(private: ec.EllipticCurvePrivateKey) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "sub": "alice",
        "aud": STATION,
        "exp": now + 3600,
        "iat": now,
        "client_id": "bench",
        "scope": "mcp",
        "groups": ["mcp-users"],
    }
    return jwt.encode(claims, private, algorithm="ES256", headers={"kid": KID, "typ": "at+jwt"})


async def per_check_us(check: Any, token: str, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await check(token)
    return (time.perf_counter() - started) / calls * 1e6


async def main(calls: int, rounds: int) -> dict[str, Any]:
    private, key_set = signing_key()

    async def fetch(url: str) -> Any:
        assert url == JWKS_URI
        return key_set

    settings = AuthSettings(
        public_url=STATION,
        issuers=[
            {"issuer": ISSUER, "jwks_uri": JWKS_URI, "algorithms": ["ES256"], "roles": {"user_groups": ["mcp-users"]}}
        ],
    )
    verifier = AccessTokenVerifier(settings, fetch)
    token = access_token(private)
    verified = await verifier.verify(token)  # fetches the key set once: the cache is warm from here
    assert verified.principal.subject == "alice"
    with tempfile.TemporaryDirectory(prefix="mcps-bench-identity-") as folder:
        store = await Store.open(data_dir=Path(folder))
        try:
            opaque, _ = await store.create_token("bench", Role.USER)
            assert await store.verify_token(opaque) is not None  # notes last_used_at: reads only from here
            station_us: list[float] = []
            jwt_us: list[float] = []
            for _ in range(rounds):
                station_us.append(await per_check_us(store.verify_token, opaque, calls))
                jwt_us.append(await per_check_us(verifier.verify, token, calls))
        finally:
            await store.aclose()
    station, idp = statistics.median(station_us), statistics.median(jwt_us)
    return {
        "calls": calls,
        "rounds": rounds,
        "station_token_us": round(station, 1),
        "jwt_warm_us": round(idp, 1),
        "ratio_jwt_to_station_token": round(idp / station, 2),
        "station_token_us_rounds": [round(v, 1) for v in station_us],
        "jwt_warm_us_rounds": [round(v, 1) for v in jwt_us],
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = anyio.run(main, args.calls, args.rounds)
    print(
        f"station token {result['station_token_us']} us, jwt (warm keys) {result['jwt_warm_us']} us per check: "
        f"{result['ratio_jwt_to_station_token']}x",
        file=sys.stderr,
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
