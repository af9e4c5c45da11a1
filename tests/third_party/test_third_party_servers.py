"""Real third-party servers: `mcp-server-time` from PyPI, `server-everything` from npm."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import _node
import anyio
import pytest
from anyio.streams.text import TextReceiveStream
from station_helpers import START_TIMEOUT_S, demo

from mcpstation import Station, StationConfig

pytestmark = pytest.mark.anyio

needs_node = pytest.mark.skipif(_node.everything_stdio_command() is None, reason=_node.missing_reason())


def everything_stdio(name: str = "everything", **fields: object) -> dict:
    command, args, env = _node.everything_stdio_command()  # type: ignore[misc]
    return {"name": name, "command": command, "args": args, "env": env, **fields}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@asynccontextmanager
async def everything_http() -> AsyncIterator[str]:
    port = free_port()
    command, args, env = _node.everything_http_command(port)  # type: ignore[misc]
    process = await anyio.open_process([command, *args], env={**env}, stdout=subprocess.DEVNULL)
    try:
        assert process.stderr is not None
        with anyio.fail_after(30):
            async for chunk in TextReceiveStream(process.stderr):
                if "listening on port" in chunk:
                    break
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        with anyio.move_on_after(5):
            await process.wait()
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def test_mcp_server_time_from_pypi_over_stdio():
    spec = {"name": "time", "command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[spec])) as station:
            assert {"mcp_time_get_current_time", "mcp_time_convert_time"} <= {t.name for t in station.tools}
            result = await station.call_tool("mcp_time_get_current_time", {"timezone": "Europe/Paris"})
            assert result.ok and "Europe/Paris" in result.text


@needs_node
async def test_server_everything_over_stdio_lands_on_the_handshake_era():
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[everything_stdio()])) as station:
            [status] = station.status().servers
            assert status.state == "READY" and status.protocol_version == "2025-11-25"
            assert status.resources >= 7 and status.templates >= 2 and status.prompts >= 4
            result = await station.call_tool("mcp_everything_get-sum", {"a": 2, "b": 40})
            assert result.ok and "42" in result.text
            image = await station.call_tool("mcp_everything_get-tiny-image", {})
            assert image.ok and "[image: image/png" in image.text
            doc = next(r.uri for r in station.resources if r.uri.startswith("demo://resource/static/document/"))
            assert (await station.read_resource(doc)).contents
            dynamic = await station.read_resource("demo://resource/dynamic/text/1")
            assert dynamic.contents


@needs_node
async def test_server_everything_over_streamable_http():
    with anyio.fail_after(START_TIMEOUT_S):
        async with everything_http() as url:
            spec = {"name": "ev", "transport": "http", "url": url}
            async with Station(StationConfig(servers=[spec])) as station:
                [status] = station.status().servers
                assert status.state == "READY", status.error
                assert status.protocol_version == "2025-11-25"
                assert (await station.call_tool("mcp_ev_echo", {"message": "over http"})).text.endswith("over http")


@needs_node
async def test_modern_and_legacy_servers_in_one_station():
    servers = [demo("modern"), everything_stdio("legacy"), demo("pinned", protocol="legacy")]
    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=servers)) as station:
            versions = {s.name: s.protocol_version for s in station.status().servers}
            assert versions == {"modern": "2026-07-28", "legacy": "2025-11-25", "pinned": "2025-11-25"}
            assert (await station.call_tool("mcp_modern_add", {"a": 1, "b": 1})).ok
            assert (await station.call_tool("mcp_legacy_get-sum", {"a": 1, "b": 1})).ok
            assert (await station.call_tool("mcp_pinned_add", {"a": 1, "b": 1})).ok


@needs_node
async def test_server_everything_subscription_updates_and_completion_through_the_station():
    from mcp_types import PromptReference

    with anyio.fail_after(START_TIMEOUT_S):
        async with Station(StationConfig(servers=[everything_stdio()])) as station:
            uri = next(r.uri for r in station.resources if r.uri.startswith("demo://resource/static/document/"))
            with station.events.subscribe() as events:
                await station.subscribe_resource(uri)
                assert (await station.call_tool("mcp_everything_toggle-subscriber-updates", {})).ok
                async for event in events:
                    if event.kind == "resource":
                        assert (event.server, event.data["uri"]) == ("everything", uri)
                        break
            await station.unsubscribe_resource(uri)
            ref = PromptReference(type="ref/prompt", name="mcp_everything_completable-prompt")
            completed = await station.complete(ref, {"name": "department", "value": "E"})
            assert completed.ok and completed.values == ("Engineering",)
