"""The demo server over every transport, as a real subprocess, in both protocol eras."""

from __future__ import annotations

import base64
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from _processes import alive, children_of
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client import Client
from mcp.client.sse import sse_client

from mcpstation.connection._websocket import websocket_transport
from mcpstation.testing import demo_server_params, serve_demo
from mcpstation.testing._media import PNG_SIGNATURE

pytestmark = pytest.mark.anyio

CONNECT_TIMEOUT_S = 30.0
ERA = {"auto": "2026-07-28", "legacy": "2025-11-25"}
TOOLS = {
    "add", "multiply", "echo", "get_time", "random_number", "get_image", "get_audio", "slow", "fail",
    "structured", "resource_link", "embedded_resource",
}  # fmt: skip


@asynccontextmanager
async def connected(transport: str, mode: str, **client_kwargs: Any) -> AsyncIterator[Client]:
    """A Client on a fresh demo server subprocess reached over `transport`."""
    if transport == "stdio":
        async with Client(demo_server_params(), mode=mode, **client_kwargs) as client:
            yield client
        return
    async with serve_demo(transport) as server:  # type: ignore[arg-type]
        if transport == "ws":
            target: Any = websocket_transport(server.url)
        elif transport == "sse":
            target = sse_client(server.url)
        else:
            target = server.url
        async with Client(target, mode=mode, **client_kwargs) as client:
            yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("transport", ["stdio", "http", "sse", "ws"])
async def test_demo_server_lists_and_calls_over_every_transport(transport: str, mode: str) -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with connected(transport, mode) as client:
            assert client.protocol_version == ERA[mode]
            assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
            assert {prompt.name for prompt in (await client.list_prompts()).prompts} == {"greet", "status"}
            resources = (await client.list_resources()).resources
            assert {str(resource.uri) for resource in resources} == {"demo://readme", "demo://logo.png"}
            templates = (await client.list_resource_templates()).resource_templates
            assert [template.uri_template for template in templates] == ["demo://notes/{note_id}"]

            added = await client.call_tool("add", {"a": 40, "b": 2})
            assert not added.is_error and added.structured_content == {"result": 42}

            image = await client.call_tool("get_image", {})
            assert isinstance(image.content[0], types.ImageContent)
            assert image.content[0].mime_type == "image/png"
            assert base64.b64decode(image.content[0].data).startswith(PNG_SIGNATURE)


async def test_demo_server_surface_covers_every_content_kind() -> None:
    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with connected("stdio", "auto") as client:
            failed = await client.call_tool("fail", {"message": "deliberate"})
            assert failed.is_error and "deliberate" in failed.content[0].text  # type: ignore[union-attr]

            structured = await client.call_tool("structured", {})
            assert structured.structured_content == {"sensor": "demo-1", "celsius": 21.5, "ok": True}

            audio = (await client.call_tool("get_audio", {})).content[0]
            assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
            assert base64.b64decode(audio.data)[:4] == b"RIFF"

            link = (await client.call_tool("resource_link", {})).content[0]
            assert isinstance(link, types.ResourceLink) and str(link.uri) == "demo://readme"

            embedded = (await client.call_tool("embedded_resource", {})).content[0]
            assert isinstance(embedded, types.EmbeddedResource)
            assert isinstance(embedded.resource, types.TextResourceContents)

            slept = await client.call_tool("slow", {"seconds": 0.2}, progress_callback=on_progress)
            assert not slept.is_error and progress == [1.0, 2.0, 3.0, 4.0]

            number = await client.call_tool("random_number", {"min": 5, "max": 5})
            assert number.structured_content == {"result": 5}

            prompt = await client.get_prompt("greet", {"name": "Ada", "style": "formal"})
            assert prompt.messages[0].content.text == "Write a formal greeting for Ada."  # type: ignore[union-attr]

            logo = (await client.read_resource("demo://logo.png")).contents[0]
            assert isinstance(logo, types.BlobResourceContents)
            assert base64.b64decode(logo.blob).startswith(PNG_SIGNATURE)
            note = (await client.read_resource("demo://notes/2")).contents[0]
            assert isinstance(note, types.TextResourceContents) and note.text == "second note"


async def test_demo_server_name_flag_sets_server_identity() -> None:
    with anyio.fail_after(CONNECT_TIMEOUT_S):
        async with Client(demo_server_params(name="alpha"), mode="legacy") as client:
            assert client.server_info is not None and client.server_info.name == "alpha"


async def test_demo_servers_with_startup_delay_come_up_together() -> None:
    # Together, every server is started before the first one is ready; one after another, the next
    # would start only once the one before had waited out its delay. The delay only has to outlast
    # the spawning of the others (milliseconds), whatever the interpreters' start-up costs.
    delay_s, count = 1.0, 3
    before = set(children_of(os.getpid()))
    ready: list[str] = []
    running_at_first_ready: list[int] = []

    async def start_one(task_status: anyio.abc.TaskStatus[None]) -> None:
        async with serve_demo("http", startup_delay_s=delay_s) as server:
            if not ready:
                running_at_first_ready.extend(p for p in children_of(os.getpid()) if p not in before and alive(p))
            ready.append(server.url)
            task_status.started()
            await anyio.sleep_forever()

    started_at = anyio.current_time()
    with anyio.fail_after(CONNECT_TIMEOUT_S + delay_s):
        async with anyio.create_task_group() as tg:
            async with anyio.create_task_group() as starters:
                for _ in range(count):
                    starters.start_soon(tg.start, start_one)
            elapsed_s = anyio.current_time() - started_at
            tg.cancel_scope.cancel()
    assert len(set(ready)) == count
    assert len(running_at_first_ready) == count
    assert elapsed_s >= delay_s


@pytest.mark.parametrize("transport", ["http", "sse", "ws"])
async def test_demo_server_exits_zero_on_sigterm(transport: str) -> None:
    command = [sys.executable, "-m", "mcpstation.testing.demo_server", "--transport", transport, "--port", "0"]
    async with await anyio.open_process(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) as process:
        try:
            assert process.stderr is not None
            stderr = BufferedByteReceiveStream(process.stderr)
            with anyio.fail_after(CONNECT_TIMEOUT_S):
                line = await stderr.receive_until(b"\n", 4096)
                assert line.decode().startswith(f"listening on {'ws' if transport == 'ws' else 'http'}://127.0.0.1:")
                process.send_signal(signal.SIGTERM)
                assert await process.wait() == 0
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


def test_demo_server_refuses_non_loopback_host() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "mcpstation.testing.demo_server", "--transport", "http", "--host", "0.0.0.0"],
        capture_output=True,
        text=True,
        timeout=CONNECT_TIMEOUT_S,
        check=False,
    )
    assert completed.returncode == 2
    assert "refusing to bind '0.0.0.0'" in completed.stderr
