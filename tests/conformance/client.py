"""Conformance client: the official MCP conformance harness drives the *station* through this.

Contract (harness `@modelcontextprotocol/conformance`, `client --command ...`): the server URL is the
last argument; `MCP_CONFORMANCE_SCENARIO` names the scenario, `MCP_CONFORMANCE_CONTEXT` carries its
data (JSON), `MCP_CONFORMANCE_PROTOCOL_VERSION` the spec version the mock speaks (handshake-era
versions map to the station's `legacy` protocol, anything else to `auto`). Exit 0 when the
scenario's client side completed, 1 otherwise.

Every scenario runs a real `Station` with one streamable HTTP server named `conformance`, `bare`
naming, no health checks, and the station's real `Host` as its session hooks: elicitation through
the host's handler path (which fills schema defaults, SEP-1034), sampling and roots where a
scenario wants every capability, and OAuth from `mcpstation.host.oauth` (`OAuthProviders`) with a
temporary token directory and a headless "browser" that follows the authorization URL and
delivers the redirect to the station's own loopback callback server.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider
from mcp.client.auth.utils import build_protected_resource_metadata_discovery_urls
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.catalog import ToolResult
from mcpstation.config.models import (
    OAuthSettings,
    RootSpec,
    ServerSpec,
    StationConfig,
    StationSettings,
    StreamableHttpServerSpec,
)
from mcpstation.connection import ConnectionState
from mcpstation.host import (
    ElicitationAnswer,
    ElicitationModes,
    ElicitationRequest,
    Host,
    SamplingAnswer,
    SamplingPolicy,
    SamplingRequest,
)
from mcpstation.host.oauth import FileTokenStorage, OAuthProviders, token_file
from mcpstation.station import Station

logger = logging.getLogger("conformance.client")

SERVER = "conformance"
CIMD_URL = "https://conformance-test.local/client-metadata.json"
STARTUP_TIMEOUT_S = 40.0  # the harness gives a scenario 60 s (run.py passes --timeout 60000)
CALL_TIMEOUT_S = 30.0
HTTP_TIMEOUT_S = 30.0

Scenario = Callable[[str], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}


class ScenarioFailed(Exception):
    """The client side of a scenario could not be completed."""


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(run: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = run
        return run

    return register


def protocol() -> str:
    """`legacy` on a handshake-era leg (no `server/discover` probe against a mock that 400s it)."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    return "auto" if version is None or version in MODERN_PROTOCOL_VERSIONS else "legacy"


def context() -> dict[str, Any]:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    return json.loads(raw) if raw else {}


# -- what the station is given ------------------------------------------------------------------------


Answer = Callable[[ElicitationRequest], ElicitationAnswer]
AuthFactory = Callable[[ServerSpec], httpx2.Auth | None]


def accept_defaults(request: ElicitationRequest) -> ElicitationAnswer:
    return ElicitationAnswer.accept()  # the person changes nothing: the host fills every default


def host(answer: Answer = accept_defaults, *, everything: bool = False, auth: AuthFactory | None = None) -> Host:
    """The station's real `Host`: form elicitation answered by `answer`; with `everything`, sampling
    (a stub model) and one root too, so every client capability is declared."""

    async def elicitation_handler(server: str, request: ElicitationRequest) -> ElicitationAnswer:
        return answer(request)

    async def sampling_handler(server: str, request: SamplingRequest) -> SamplingAnswer:
        return SamplingAnswer(text="", model="conformance-stub")

    return Host(
        roots=[RootSpec(uri="file:///tmp/conformance", name="conformance")] if everything else (),
        sampling_handler=sampling_handler if everything else None,
        sampling=SamplingPolicy(enabled=everything),
        elicitation_handler=elicitation_handler,
        elicitation=ElicitationModes(form=True, url=False),
        auth_provider_factory=auth,
    )


def spec_for(url: str, *, oauth: OAuthSettings | None = None, protocol_choice: str | None = None) -> ServerSpec:
    return StreamableHttpServerSpec(
        name=SERVER,
        url=url,
        protocol=protocol_choice or protocol(),
        oauth=oauth,
        startup_timeout_s=STARTUP_TIMEOUT_S,
        call_timeout_s=CALL_TIMEOUT_S,
    )


def station_for(spec: ServerSpec, hooks: Host) -> Station:
    settings = StationSettings(
        naming="bare",
        health_interval_s=0,  # no pings the mock did not script
        startup_timeout_s=STARTUP_TIMEOUT_S,
        server_startup_timeout_s=STARTUP_TIMEOUT_S,
        call_timeout_s=CALL_TIMEOUT_S,
    )
    return Station(StationConfig(station=settings, servers=(spec,)), hooks=hooks)


def require_ready(station: Station) -> None:
    connection = station.connection(SERVER)
    if connection.state is not ConnectionState.READY:
        raise ScenarioFailed(f"server not ready ({connection.state}): {connection.error}")
    logger.info("connected: %s, tools %s", connection.protocol_version, sorted(t.name for t in station.tools))


def require_answer(result: ToolResult) -> ToolResult:
    """A call the server must have answered (an `isError` answer counts, as with the raw SDK)."""
    if result.raw is None:
        raise ScenarioFailed(f"{result.name}: {result.error}")
    logger.info("%s -> %s", result.name, result.text[:200])
    return result


def log_result(result: ToolResult) -> None:
    logger.info("%s -> ok=%s %s", result.name, result.ok, (result.error or result.text)[:200])


# -- scenarios -----------------------------------------------------------------------------------------


@scenario("initialize")
async def run_initialize(url: str) -> None:
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)  # connect = initialize (or discover) + every list


@scenario("json-schema-ref-no-deref")
async def run_ref_no_deref(url: str) -> None:
    # The mock speaks only the handshake lifecycle although it reports 2026-07-28 (as upstream notes).
    async with station_for(spec_for(url, protocol_choice="legacy"), host()) as station:
        require_ready(station)


@scenario("tools_call")
async def run_tools_call(url: str) -> None:
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        require_answer(await station.call_tool("add_numbers", {"a": 5, "b": 3}))


@scenario("request-metadata")
async def run_request_metadata(url: str) -> None:
    async with station_for(spec_for(url), host(everything=True)) as station:
        require_ready(station)  # every request, discover included, carries the _meta envelope
        if "add_numbers" in station.catalog.tools:  # this mock declares no tools capability
            require_answer(await station.call_tool("add_numbers", {"a": 5, "b": 3}))


@scenario("sse-retry")
async def run_sse_retry(url: str) -> None:
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        require_answer(await station.call_tool("test_reconnection", {}))


@scenario("json-schema-2020-12-preservation")
async def run_schema_preservation(url: str) -> None:
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        focal = station.catalog.tools["json_schema_2020_12_tool"]
        require_answer(await station.call_tool("json_schema_echo", {"schema": dict(focal.input_schema)}))


@scenario("elicitation-sep1034-client-defaults")
async def run_elicitation_defaults(url: str) -> None:
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        require_answer(await station.call_tool("test_client_elicitation_defaults", {}))


@scenario("sep-2322-client-request-state")
async def run_input_required(url: str) -> None:
    confirm = host(lambda request: ElicitationAnswer.accept({"confirmed": True}))
    async with station_for(spec_for(url), confirm) as station:
        require_ready(station)
        for tool in ("test_mrtr_echo_state", "test_mrtr_unrelated", "test_mrtr_no_state", "test_mrtr_no_result_type"):
            require_answer(await station.call_tool(tool, {}))


_STUB_VALUES: dict[str, Any] = {"string": "x", "integer": 0, "number": 0, "boolean": False, "object": {}, "array": []}


def stub_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """The least a tool's `required` list asks for."""
    properties = schema.get("properties", {})
    return {name: _STUB_VALUES.get(properties.get(name, {}).get("type"), "x") for name in schema.get("required", [])}


@scenario("http-standard-headers")
async def run_standard_headers(url: str) -> None:
    """Every request kind with Mcp-Method (and Mcp-Name): call each tool, get each prompt, read each resource."""
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        for tool in station.tools:
            require_answer(await station.call_tool(tool.name, stub_arguments(dict(tool.input_schema))))
        for prompt in station.prompts:
            arguments = {argument.name: "x" for argument in prompt.arguments if argument.required}
            logger.info("prompt %s -> %s", prompt.name, await station.get_prompt(prompt.name, arguments))
        for resource in station.resources:
            logger.info("resource %s -> %s", resource.uri, await station.read_resource(resource.uri))


@scenario("http-invalid-tool-headers")
async def run_invalid_tool_headers(url: str) -> None:
    # The SDK drops tools with malformed x-mcp-header; the station must never surface or call them.
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        for tool in station.tools:
            log_result(await station.call_tool(tool.name, stub_arguments(dict(tool.input_schema))))


@scenario("http-custom-headers")
async def run_custom_headers(url: str) -> None:
    calls = context().get("toolCalls", [])
    async with station_for(spec_for(url), host()) as station:
        require_ready(station)
        for call in calls:
            if call["name"] not in station.catalog.tools:
                logger.info("skipping %r: not surfaced", call["name"])
                continue
            log_result(await station.call_tool(call["name"], call.get("arguments") or {}))


# -- authorization ---------------------------------------------------------------------------------------


async def follow_authorization(authorization_url: str) -> None:
    """A headless browser: the mock authorizes at once; its redirect goes to the station's loopback server."""
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        response = await http.get(authorization_url, follow_redirects=False)
        location = response.headers.get("location")
        if not response.is_redirect or not location:
            raise ScenarioFailed(f"expected a redirect from {authorization_url}, got HTTP {response.status_code}")
        logger.info("authorization server redirects to %s", location.split("?")[0])
        callback = await http.get(location)
        callback.raise_for_status()


async def run_with_oauth(url: str, oauth: OAuthSettings | None = None, auth: httpx2.Auth | None = None) -> None:
    """Connect with OAuth, list tools, call the first one (its outcome is the mock's business)."""
    with tempfile.TemporaryDirectory(prefix="mcpstation-oauth-") as storage_dir:
        providers = OAuthProviders(Path(storage_dir), redirect_handler=follow_authorization)
        hooks = host(auth=(lambda spec: auth) if auth is not None else providers)
        async with station_for(spec_for(url, oauth=oauth), hooks) as station:
            require_ready(station)
            if station.tools:
                log_result(await station.call_tool(station.tools[0].name, {}))
            token_path = token_file(Path(storage_dir), SERVER)
            if token_path.exists():
                logger.info("token file %s, mode %o", token_path.name, token_path.stat().st_mode & 0o777)


def authorization_code_settings() -> OAuthSettings:
    """The harness's pre-registered client if it gives one, else CIMD where supported, else registration."""
    data = context()
    return OAuthSettings(
        mode="authorization_code",
        client_id=data.get("client_id"),
        client_secret=data.get("client_secret"),
        client_metadata_url=CIMD_URL,
    )


async def advertised_issuer(url: str) -> str:
    """The authorization server the resource's metadata names (RFC 9728); configuration in real deployments."""
    prm_url = build_protected_resource_metadata_discovery_urls(None, url)[0]
    async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
        prm = (await http.get(prm_url)).raise_for_status().json()
    return str(prm["authorization_servers"][0])


@scenario("auth/client-credentials-basic")
async def run_client_credentials_basic(url: str) -> None:
    data = context()
    oauth = OAuthSettings(
        mode="client_credentials",
        client_id=data["client_id"],
        client_secret=data["client_secret"],
        token_endpoint_auth_method="client_secret_basic",
        issuer=await advertised_issuer(url),
    )
    await run_with_oauth(url, oauth)


@scenario("auth/client-credentials-jwt")
async def run_client_credentials_jwt(url: str) -> None:
    data = context()
    oauth = OAuthSettings(
        mode="client_credentials",
        client_id=data["client_id"],
        private_key=data["private_key_pem"],
        signing_algorithm=data.get("signing_algorithm", "ES256"),
        token_endpoint_auth_method="private_key_jwt",
        issuer=await advertised_issuer(url),
    )
    await run_with_oauth(url, oauth)


@scenario("auth/enterprise-managed-authorization")
async def run_enterprise_managed(url: str) -> None:
    """SEP-990: RFC 8693 token exchange at the enterprise IdP for an ID-JAG, then jwt-bearer at the MCP AS."""
    data = context()

    async def fetch_id_jag(audience: str, resource: str) -> str:
        async with httpx2.AsyncClient(timeout=HTTP_TIMEOUT_S) as http:
            response = await http.post(
                data["idp_token_endpoint"],
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
                    "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                    "subject_token": data["idp_id_token"],
                    "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
                    "audience": audience,
                    "resource": resource,
                    "client_id": data["idp_client_id"],
                },
            )
            return str(response.raise_for_status().json()["access_token"])

    with tempfile.TemporaryDirectory(prefix="mcpstation-oauth-") as storage_dir:
        provider = IdentityAssertionOAuthProvider(
            server_url=url,
            storage=FileTokenStorage(token_file(Path(storage_dir), SERVER), server_url=url),
            client_id=data["client_id"],
            client_secret=data["client_secret"],
            issuer=await advertised_issuer(url),
            assertion_provider=fetch_id_jag,
            token_endpoint_auth_method="client_secret_basic",
        )
        await run_with_oauth(url, auth=provider)


async def run_authorization_code(url: str) -> None:
    await run_with_oauth(url, authorization_code_settings())


def main() -> int:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    for noisy in ("httpcore", "httpcore2", "hpack"):
        logging.getLogger(noisy).setLevel(logging.INFO)
    if len(sys.argv) < 2:
        print(f"usage: {sys.argv[0]} <server-url>", file=sys.stderr)
        return 2
    url = sys.argv[-1]
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    run = SCENARIOS.get(name) or (run_authorization_code if name.startswith("auth/") else None)
    if run is None:
        print(f"unknown scenario {name!r}", file=sys.stderr)
        return 2
    logger.info("scenario %s against %s (protocol %s)", name, url, protocol())
    try:
        anyio.run(run, url)
    except ScenarioFailed as exc:
        logger.error("scenario %s failed: %s", name, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
