"""OAuth wiring: token files, the loopback redirect target, providers, one refresh per server.

The flows themselves are the SDK's; a scripted authorization server and protected resource
(httpx2.MockTransport) stand in for the network, while the loopback callback server is real
(127.0.0.1, a free port). The conformance suite (`tests/conformance`) runs every `auth/*`
scenario of the official harness through the same module.
"""

from __future__ import annotations

import dataclasses
import json
import stat
import time
from pathlib import Path

import anyio
import anyio.lowlevel
import httpx2
import pytest
from mcp.client.auth import OAuthClientProvider, OAuthFlowError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from oauth_world import ISSUER, RESOURCE, AuthWorld, consenting_browser, spec
from pydantic import AnyUrl, ValidationError

from mcpstation.config.models import OAuthSettings, StdioServerSpec, StreamableHttpServerSpec
from mcpstation.host.oauth import (
    FileTokenStorage,
    LoopbackCallback,
    OAuthProviders,
    oauth_provider_for,
    oauth_storage_dir,
    token_file,
)

pytestmark = pytest.mark.anyio

# -- storage ---------------------------------------------------------------------------------------------


async def test_token_file_is_written_atomically_with_mode_0600(tmp_path: Path) -> None:
    path = token_file(tmp_path / "oauth", "remote")
    storage = FileTokenStorage(path, server_url=RESOURCE)
    await storage.set_tokens(OAuthToken(access_token="a", refresh_token="r", expires_in=60))
    await storage.set_client_info(OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://x/cb")]))

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    again = FileTokenStorage(path, server_url=RESOURCE)
    tokens = await again.get_tokens()
    assert tokens is not None and tokens.access_token == "a" and tokens.refresh_token == "r"
    client_info = await again.get_client_info()
    assert client_info is not None and client_info.client_id == "c"
    expiry = await again.get_token_expiry()
    assert expiry is not None and time.time() < expiry <= time.time() + 60
    assert json.loads(path.read_text())["server_url"] == RESOURCE


async def test_tokens_written_for_another_url_are_not_sent_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "remote.json"
    await FileTokenStorage(path, server_url=RESOURCE).set_tokens(OAuthToken(access_token="secret"))

    assert await FileTokenStorage(path, server_url="https://elsewhere.example/mcp").get_tokens() is None


async def test_corrupt_or_loose_token_file_is_handled(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "remote.json"
    path.write_text("{not json")
    path.chmod(0o644)

    assert await FileTokenStorage(path).get_tokens() is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert "readable by others" in caplog.text and "not JSON" in caplog.text


def test_token_file_names_are_safe_and_distinct(tmp_path: Path) -> None:
    assert token_file(tmp_path, "github").name == "github.json"
    odd = token_file(tmp_path, "../etc/passwd")
    assert odd.parent == tmp_path and odd.name.startswith("_etc_passwd-")
    assert token_file(tmp_path, "a/b") != token_file(tmp_path, "a_b")


def test_storage_dir_follows_the_data_dir_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCPSTATION_DATA_DIR", str(tmp_path))
    assert oauth_storage_dir() == tmp_path / "oauth"
    monkeypatch.delenv("MCPSTATION_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert oauth_storage_dir() == tmp_path / "xdg" / "mcpstation" / "oauth"


def test_oauth_settings_are_checked_per_mode() -> None:
    with pytest.raises(ValidationError, match="client_credentials needs client_id"):
        OAuthSettings(mode="client_credentials")
    with pytest.raises(ValidationError, match="needs client_secret"):
        OAuthSettings(mode="client_credentials", client_id="c")
    with pytest.raises(ValidationError, match="https"):
        OAuthSettings(client_metadata_url="http://insecure.example/client.json")
    settings = OAuthSettings(mode="client_credentials", client_id="c", client_secret="hunter2")
    assert "hunter2" not in repr(settings)


# -- the loopback redirect target ----------------------------------------------------------------------


async def test_loopback_callback_captures_code_state_and_iss() -> None:
    async def browser(url: str) -> None:
        async with httpx2.AsyncClient() as http:
            assert (await http.get(url.replace("/callback", "/favicon.ico"))).status_code == 404  # ignored
            assert (await http.get(url, params={"code": "c0de", "state": "s1", "iss": ISSUER})).status_code == 200

    loopback = LoopbackCallback(show=lambda url: browser(loopback.redirect_uri))
    assert loopback.redirect_uri.startswith("http://127.0.0.1:")
    with anyio.fail_after(10):
        await loopback.handle_redirect("https://auth.example/authorize?...")
        result = await loopback.handle_callback()
    assert (result.code, result.state, result.iss) == ("c0de", "s1", ISSUER)


async def test_loopback_callback_reports_a_refusal() -> None:
    async def browser(url: str) -> None:
        async with httpx2.AsyncClient() as http:
            await http.get(loopback.redirect_uri, params={"error": "access_denied", "state": "s"})

    loopback = LoopbackCallback(show=browser)
    with anyio.fail_after(10), pytest.raises(OAuthFlowError, match="access_denied"):
        await loopback.authorize("https://auth.example/authorize")


async def test_loopback_callback_gives_up_after_its_timeout() -> None:
    async def nobody_signs_in(url: str) -> None:
        return None

    loopback = LoopbackCallback(show=nobody_signs_in, timeout_s=0.2)
    with anyio.fail_after(10), pytest.raises(OAuthFlowError, match="no authorization response"):
        await loopback.authorize("https://auth.example/authorize")


# -- providers -------------------------------------------------------------------------------------------


def test_no_provider_without_oauth_settings(tmp_path: Path) -> None:
    plain = StreamableHttpServerSpec(name="plain", url=RESOURCE)
    assert oauth_provider_for(plain, storage_dir=tmp_path) is None
    assert OAuthProviders(tmp_path)(StdioServerSpec(name="local", command="true")) is None


def test_one_provider_per_server_until_its_settings_change(tmp_path: Path) -> None:
    providers = OAuthProviders(tmp_path)
    first = providers(spec())
    assert first is not None and providers(spec()) is first
    changed = providers(spec(OAuthSettings(scopes=("read",))))
    assert changed is not None and changed is not first


async def test_authorization_code_flow_registers_authorizes_and_persists(tmp_path: Path) -> None:
    world = AuthWorld()
    auth = OAuthProviders(tmp_path, redirect_handler=consenting_browser)(spec())
    assert auth is not None
    with anyio.fail_after(20):
        async with world.client(auth) as http:
            assert (await http.get(RESOURCE)).status_code == 200

    assert world.counts["register"] == 1 and world.counts["authorization_code"] == 1
    assert world.registered_redirect is not None and world.registered_redirect.startswith("http://127.0.0.1:")
    stored = json.loads(token_file(tmp_path, "remote").read_text())
    assert stored["tokens"]["access_token"] == "a1" and stored["client_info"]["client_id"] == "dyn-client"

    # A restarted station: tokens come from the file, nobody is asked to sign in again.
    async def nobody(url: str) -> None:
        raise AssertionError("asked to authorize again")

    restarted = OAuthProviders(tmp_path, redirect_handler=nobody)(spec())
    assert restarted is not None
    with anyio.fail_after(20):
        async with world.client(restarted) as http:
            assert (await http.get(RESOURCE)).status_code == 200
    assert world.counts["authorization_code"] == 1


async def test_an_expired_stored_token_is_refreshed_not_reauthorized(tmp_path: Path) -> None:
    world = AuthWorld()
    storage = FileTokenStorage(token_file(tmp_path, "remote"), server_url=RESOURCE)
    await storage.set_tokens(OAuthToken(access_token="stale", refresh_token="r0", expires_in=1))
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    )

    async def nobody(url: str) -> None:
        raise AssertionError("asked to authorize although a refresh token was stored")

    auth = OAuthProviders(tmp_path, redirect_handler=nobody)(spec())
    assert auth is not None
    with anyio.fail_after(20):
        async with world.client(auth) as http:
            assert (await http.get(RESOURCE)).status_code == 200
    assert world.counts.get("refresh_token") == 1 and "resource" in world.counts


async def test_concurrent_requests_of_two_sessions_refresh_once(tmp_path: Path) -> None:
    """The SDK refreshes under its provider's lock; one provider per server extends that to every session."""
    world = AuthWorld()
    storage = FileTokenStorage(token_file(tmp_path, "remote"), server_url=RESOURCE)
    await storage.set_tokens(OAuthToken(access_token="stale", refresh_token="r0", expires_in=1))
    await storage.set_client_info(
        OAuthClientInformationFull(client_id="c", redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    )
    providers = OAuthProviders(tmp_path, redirect_handler=consenting_browser)
    statuses: list[int] = []

    async def session(requests: int) -> None:
        auth = providers(spec())  # each session asks the factory, as the station does
        assert auth is not None
        async with world.client(auth) as http:
            async with anyio.create_task_group() as group:
                for _ in range(requests):
                    group.start_soon(lambda: _get(http, statuses))

    with anyio.fail_after(20):
        async with anyio.create_task_group() as sessions:
            sessions.start_soon(session, 4)
            sessions.start_soon(session, 4)

    assert statuses == [200] * 8
    assert world.counts.get("refresh_token") == 1  # a rotating refresh token spent twice would fail
    assert "authorization_code" not in world.counts


async def _get(http: httpx2.AsyncClient, statuses: list[int]) -> None:
    statuses.append((await http.get(RESOURCE)).status_code)


async def test_client_credentials_use_the_configured_secret(tmp_path: Path) -> None:
    world = AuthWorld()
    settings = OAuthSettings(mode="client_credentials", client_id="svc", client_secret="s3cret", issuer=ISSUER)
    auth = oauth_provider_for(spec(settings), storage_dir=tmp_path)
    assert auth is not None and isinstance(auth.provider, ClientCredentialsOAuthProvider)
    with anyio.fail_after(20):
        async with world.client(auth) as http:
            assert (await http.get(RESOURCE)).status_code == 200
    assert world.counts["client_credentials"] == 1 and "register" not in world.counts


def test_the_sdk_still_keeps_its_oauth_state_where_station_auth_sets_it() -> None:
    """`StationAuth` uses only the SDK's public surface: `async_auth_flow` and the provider's `context`.
    This fails loudly when the SDK renames or drops a context field that `StationAuth` reads or sets."""
    fields = {field.name for field in dataclasses.fields(OAuthContext)}
    assert {"current_tokens", "token_expiry_time", "client_info", "client_metadata", "storage", "server_url"} <= fields
    assert callable(OAuthContext.is_token_valid) and callable(OAuthContext.can_refresh_token)
    # the httpx2.Auth entry point StationAuth drives is the SDK's own, not httpx2's default
    assert OAuthClientProvider.async_auth_flow is not httpx2.Auth.async_auth_flow
