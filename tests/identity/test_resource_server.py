"""The gateway and the API as an OAuth 2.1 resource server, against a real OpenID provider (oidc-provider).

Metadata at both well-known forms without a token; challenges as RFC 6750 and the MCP spec ask
(no token: no `error`; every hostile token: `invalid_token`; too little scope: 403 naming every
scope); audiences compared as URLs; the station's own tokens beside the provider's, each on its
own path; local-dev conveniences off; routing headers that disagree with the body refused first.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import jwt
import mcp_types as types
import pytest
from identity_helpers import (
    ACCEPT,
    ADMINS,
    USERS,
    VERSIONS,
    IdentityStation,
    RawSession,
    call_error,
    call_tool,
    identity_station,
    list_tools,
)
from idp import idp_missing
from station_helpers import inproc

pytestmark = [pytest.mark.anyio, pytest.mark.node, pytest.mark.skipif(bool(idp_missing()), reason=idp_missing() or "")]

TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def servers() -> list[Any]:
    return [
        inproc("open"),
        inproc("ops", min_role="admin"),
        inproc("jira", auth={"groups": ["jira-users"]}),
        inproc("secret", auth={"caller_scopes": ["tools:write"]}),
    ]


def challenge_params(header: str) -> dict[str, str]:
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer", header
    params = {}
    for part in rest.split(", "):
        key, _, value = part.partition("=")
        params[key] = value.strip('"')
    return params


async def test_metadata_is_served_at_both_well_known_paths_without_a_token_whatever_the_headers_say(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        forged = {"Host": f"localhost:{world.url.rsplit(':', 1)[1]}", "X-Forwarded-Host": "evil.example",
                  "X-Forwarded-Proto": "https", "Forwarded": "host=evil.example"}  # fmt: skip
        async with world.http() as http:
            documents = [
                (await http.get(path, headers=headers)).json()
                for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource")
                for headers in ({}, forged)
            ]
    assert all(document == documents[0] for document in documents)
    document = documents[0]
    assert document["resource"] == world.url  # exactly the configured string
    assert document["authorization_servers"] == [world.idp.issuer]
    assert document["bearer_methods_supported"] == ["header"]
    assert set(document["scopes_supported"]) == {"mcp:tools", "mcp:api"}
    assert "offline_access" not in document["scopes_supported"]


async def test_a_request_without_a_token_is_challenged_without_an_error_and_local_dev_is_off(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world, world.http() as http:
        gateway = await http.post("/mcp", json=TOOLS_LIST, headers={"Accept": ACCEPT, "Host": "evil.example:1"})
        assert gateway.status_code == 421  # a foreign Host is refused before anything else
        gateway = await http.post("/mcp", json=TOOLS_LIST, headers={"Accept": ACCEPT})
        api = await http.get("/api/mcp/tools")
    assert gateway.status_code == api.status_code == 401  # no local admin on loopback while an issuer is trusted
    on_gateway = challenge_params(gateway.headers["www-authenticate"])
    on_api = challenge_params(api.headers["www-authenticate"])
    assert on_gateway == {
        "resource_metadata": f"{world.url}/.well-known/oauth-protected-resource/mcp",
        "scope": "mcp:tools",
    }
    assert on_api == {"resource_metadata": f"{world.url}/.well-known/oauth-protected-resource", "scope": "mcp:api"}


def hostile_tokens(world: IdentityStation, good: str) -> dict[str, str]:
    idp = world.idp
    now = int(time.time())
    header, payload, signature = good.split(".")
    flipped = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    claims = jwt.decode(good, options={"verify_signature": False})
    return {
        "bad signature": f"{header}.{payload}.{flipped}",
        "expired": idp.sign({"exp": now - 3600, "iat": now - 7200}),
        "wrong issuer": idp.sign({"iss": "http://127.0.0.1:1"}),
        "another audience": idp.sign({"aud": "http://127.0.0.1:1/mcp"}),
        "an ID token": idp.sign({"aud": "tester", "nonce": "n"}, typ="JWT"),
        "alg none": jwt.encode(claims, None, algorithm="none", headers={"typ": "at+jwt", "kid": idp.kid}),
        "HS256 with the public key": _hs256_with(idp.public_pem(), claims, idp.kid),
        "no exp": idp.sign({"exp": None}),
        "future nbf": idp.sign({"nbf": now + 3600}),
        "unknown crit": idp.sign({}, crit=["urn:example:must-understand"], **{"urn:example:must-understand": True}),
        "unknown key id": idp.sign({}, kid="not-a-key"),
        "not a JWT": "opaque-but-not-ours",
    }


def _hs256_with(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    import base64
    import hashlib
    import hmac
    import json

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    # PyJWT refuses to sign HS256 with a PEM key, as it should; an attacker builds it by hand.
    signing_input = ".".join(
        part(json.dumps(v).encode()) for v in ({"alg": "HS256", "typ": "at+jwt", "kid": kid}, claims)
    )
    return f"{signing_input}.{part(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())}"


async def test_every_hostile_token_is_refused_as_invalid_token_on_gateway_and_api(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        good = await world.token("alice", USERS)
        async with world.http(good) as http:
            assert (await http.get("/api/mcp/tools")).status_code == 200  # the forgeries' model is a good token
        answers: dict[str, list[tuple[int, str]]] = {}
        for case, token in hostile_tokens(world, good).items():
            async with world.http(token) as http:
                gateway = await http.post("/mcp", json=TOOLS_LIST, headers={"Accept": ACCEPT})
                api = await http.get("/api/mcp/tools")
            answers[case] = [
                (r.status_code, challenge_params(r.headers["www-authenticate"]).get("error", ""))
                for r in (gateway, api)
            ]
    refused = [(401, "invalid_token"), (401, "invalid_token")]
    assert answers == dict.fromkeys(answers, refused)


async def test_audiences_are_compared_as_urls_and_extra_ones_only_when_configured(tmp_path: Path):
    extra = {"audiences": ["api://mcpstation"]}
    async with identity_station(tmp_path, [inproc("open")], issuer=extra) as world:
        port = world.url.rsplit(":", 1)[1]
        statuses = {}
        for audience in ("api://mcpstation", f"HTTP://127.0.0.1:{port}/", "api://other"):
            token = world.idp.sign({"sub": "alice", "aud": audience, "scope": "mcp:api", "groups": [USERS]})
            async with world.http(token) as http:
                statuses[audience] = (await http.get("/api/mcp/tools")).status_code
    # Configuring `audiences` replaces the default: the public URL is accepted only when listed.
    assert statuses == {"api://mcpstation": 200, f"HTTP://127.0.0.1:{port}/": 401, "api://other": 401}


async def test_an_upper_case_host_in_the_audience_names_the_station(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        port = world.url.rsplit(":", 1)[1]
        token = world.idp.sign(
            {"sub": "alice", "aud": f"HTTP://127.0.0.1:{port}", "scope": "mcp:api", "groups": [USERS]}
        )
        async with world.http(token) as http:
            assert (await http.get("/api/mcp/tools")).status_code == 200


async def test_tokens_in_the_query_string_are_refused_and_the_event_stream_takes_only_station_tokens(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        good = await world.token("alice", ADMINS)
        async with world.http() as http:
            in_query = await http.get("/api/mcp/tools", params={"access_token": good})
            events_jwt = await http.get("/api/events", params={"token": good})
            async with http.stream("GET", "/api/events", params={"token": world.station_tokens["user"]}) as events:
                events_station = events.status_code
    for refused in (in_query, events_jwt):
        assert refused.status_code == 401
        assert challenge_params(refused.headers["www-authenticate"])["error"] == "invalid_token"
    assert events_station == 200


async def test_station_tokens_keep_working_beside_the_providers_each_on_its_own_path(tmp_path: Path):
    async with identity_station(tmp_path, servers()) as world:
        admin = world.station_tokens["admin"]
        user = world.station_tokens["user"]
        async with world.http(admin) as http:
            assert (await http.get("/api/mcp/servers")).status_code == 200
        seen_by_user = await list_tools(world.gateway, user, "2026-07-28")
        # A station token that looks like the provider's never reaches the JWT path, and the reverse.
        forged = world.idp.sign({"sub": "admin-token", "groups": [ADMINS]}).replace("eyJ", "mcps_eyJ", 1)
        async with world.http(forged) as http:
            assert (await http.get("/api/mcp/tools")).status_code == 401
        unknown_store_token = "mcps_" + "x" * 40
        async with world.http(unknown_store_token) as http:
            assert (await http.get("/api/mcp/tools")).status_code == 401
    assert "mcp_open_add" in seen_by_user and not any(n.startswith(("mcp_ops_", "mcp_jira_")) for n in seen_by_user)


async def test_too_little_scope_is_403_insufficient_scope_naming_every_scope_needed(tmp_path: Path):
    async with identity_station(tmp_path, servers()) as world:
        no_face_scope = await world.token("alice", USERS, scope="mcp:api")
        async with world.http(no_face_scope) as http:
            gateway = await http.post("/mcp", json=TOOLS_LIST, headers={"Accept": ACCEPT})
        assert gateway.status_code == 403
        assert challenge_params(gateway.headers["www-authenticate"]) == {
            "resource_metadata": f"{world.url}/.well-known/oauth-protected-resource/mcp",
            "scope": "mcp:tools",
            "error": "insufficient_scope",
        }

        # The server `secret` asks for tools:write as well: hidden from the list, 403 on a direct call.
        basic = await world.token("alice", USERS, scope="mcp:tools mcp:api")
        listed = await list_tools(world.gateway, basic, "2026-07-28")
        assert "mcp_open_add" in listed and "mcp_secret_add" not in listed
        async with world.http(basic) as http:
            api = await http.post("/api/mcp/tools/mcp_secret_add/call", json={"a": 1, "b": 2})
            call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "mcp_secret_add", "arguments": {"a": 1, "b": 2}}}  # fmt: skip
            gateway = await http.post("/mcp", json=call, headers={"Accept": ACCEPT})
        assert api.status_code == gateway.status_code == 403
        assert challenge_params(api.headers["www-authenticate"])["scope"] == "mcp:api tools:write"
        assert challenge_params(gateway.headers["www-authenticate"])["scope"] == "mcp:tools tools:write"

        stepped_up = await world.token("alice", USERS, scope="mcp:tools mcp:api tools:write")
        assert await call_tool(world.gateway, stepped_up, "2026-07-28", "mcp_secret_add", {"a": 1, "b": 2}) == (
            False,
            "3",
        )


async def test_a_routing_header_that_disagrees_with_the_body_is_refused_before_any_authorization(tmp_path: Path):
    async with identity_station(tmp_path, servers()) as world:
        unscoped = await world.token("bob", USERS, scope="mcp:api")  # would be 403 on the gateway
        call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "mcp_secret_add", "arguments": {"a": 1, "b": 2}}}  # fmt: skip
        answers = []
        for token in (unscoped, None):
            async with world.http(token) as http:
                response = await http.post(
                    "/mcp",
                    json=call,
                    headers={"Accept": ACCEPT, "Mcp-Method": "tools/call", "Mcp-Name": "mcp_open_add"},
                )
            answers.append((response.status_code, response.json()["error"]["code"], response.json()["id"]))
    assert answers == [(400, -32020, 7), (400, -32020, 7)]


async def test_a_subject_whose_groups_map_to_no_role_is_refused(tmp_path: Path):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        outsider = await world.token("eve", "contractors")
        async with world.http(outsider) as http:
            response = await http.get("/api/mcp/tools")
    assert response.status_code == 403 and "no role here" in response.json()["message"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_alice_and_bob_see_and_call_what_their_groups_allow(tmp_path: Path, version: str):
    async with identity_station(tmp_path, servers()) as world:
        alice = await world.token("alice", ADMINS, "jira-users", scope="mcp:tools mcp:api tools:write")
        bob = await world.token("bob", USERS)
        seen_by_alice = await list_tools(world.gateway, alice, version)
        seen_by_bob = await list_tools(world.gateway, bob, version)
        assert {"mcp_open_add", "mcp_ops_add", "mcp_jira_add", "mcp_secret_add"} <= seen_by_alice
        assert "mcp_open_add" in seen_by_bob
        assert not any(n.startswith(("mcp_ops_", "mcp_jira_", "mcp_secret_")) for n in seen_by_bob)
        assert await call_tool(world.gateway, alice, version, "mcp_jira_add", {"a": 2, "b": 3}) == (False, "5")
        assert await call_error(world.gateway, bob, version, "mcp_jira_add", {"a": 2, "b": 3}) == (
            types.INVALID_PARAMS,
            "no tool 'mcp_jira_add'.",
        )
        with anyio.fail_after(10):
            calls = [c for c in await world.store.list_calls() if c.server == "jira"]
    jti = jwt.decode(alice, options={"verify_signature": False})["jti"]
    assert [(c.caller, c.issuer, c.subject, c.client_id, c.token_id, c.upstream) for c in calls] == [
        ("alice", world.idp.issuer, "alice", "tester", jti, "shared inprocess")
    ]


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_a_session_made_by_alice_fails_with_bobs_token(tmp_path: Path, version: str):
    async with identity_station(tmp_path, [inproc("open")]) as world:
        alice = await world.token("alice", USERS)
        bob = await world.token("bob", USERS)
        async with RawSession(world.gateway, alice, version) as session:
            assert "mcp_open_add" in {t["name"] for t in (await session.request("tools/list", {}))["tools"]}
            session.headers["Authorization"] = f"Bearer {bob}"
            borrowed = await session.post({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}})
            session.headers["Authorization"] = f"Bearer {alice}"
            own = await session.post({"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": {}})
    assert borrowed.status_code == 404  # answered as a session that does not exist
    assert own.status_code == 200
