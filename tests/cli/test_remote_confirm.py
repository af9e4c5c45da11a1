"""The CLI following its questions through the running station's event stream (`_remote_confirm`):
a question whose event the stream lost while the person was answering another is still asked.
In-process: the station's control app served by uvicorn on its real control socket, the demo
server in-process, and the CLI's own async client over that socket."""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.lowlevel
import httpx2
import pytest
from station_helpers import inproc

from mcpstation import Station, StationConfig
from mcpstation.api import ApiServer, build_control_app
from mcpstation.cli._control import ControlSocket
from mcpstation.cli._control_client import CONTROL_HOST, RemoteStation
from mcpstation.cli._control_transport import control_transport
from mcpstation.cli._remote_confirm import CONFIRMATIONS_PATH, _call
from mcpstation.events import StationEvent
from mcpstation.store import Store
from mcpstation.wire import CONFIRM_WAIT

pytestmark = pytest.mark.anyio

START_TIMEOUT_S = 60.0  # a station and its control socket on a loaded 2-core machine
RUN_S = 60.0  # the whole exchange
FILLER_CHARS = 16_384  # per event, so the socket fills and the stream stops taking events
CONFIRM_TIMEOUT_S = 20.0  # a question the CLI never asks is refused as unanswered well within RUN_S
SLOW_S = 600.0  # the first call's tool runs past the test: the CLI keeps following while it runs


async def test_a_question_whose_event_was_lost_while_the_person_answered_is_still_asked(tmp_path: Path):
    policy = {"confirm_tools": ["demo/slow", "demo/add"], "confirm_timeout_s": CONFIRM_TIMEOUT_S}
    config = StationConfig(servers=(inproc("demo"),), policy=policy)
    async with await Store.open(data_dir=tmp_path) as store:
        control = ControlSocket.claim(tmp_path)
        assert control is not None
        try:
            async with Station(config, store=store) as station:
                server = ApiServer(build_control_app(station, control.address))
                async with anyio.create_task_group() as serving:
                    serving.start_soon(server.serve, [control.sock])
                    with anyio.fail_after(START_TIMEOUT_S):
                        await server.wait_started()
                    try:
                        await _exchange(station, RemoteStation(control.path, actor="cli"))
                    finally:
                        server.should_exit = True
        finally:
            control.close()


async def _exchange(station: Station, remote: RemoteStation) -> None:
    """The CLI's call (`slow`) is asked about; while the person answers it, the stream falls behind
    and a second call bearing the CLI's tag (`add`) is asked: the CLI must ask about it too."""
    asked: list[str] = []
    second: list[httpx2.Response] = []
    answered = anyio.Event()
    transport = control_transport(remote.path)
    async with (
        httpx2.AsyncClient(
            transport=transport, base_url=f"http://{CONTROL_HOST}", headers=remote.headers, timeout=RUN_S
        ) as other,
        anyio.create_task_group() as group,
    ):

        async def second_call(tag: str) -> None:
            params = {"confirm": CONFIRM_WAIT, "confirm_tag": tag}
            second.append(await other.post("/api/mcp/tools/mcp_demo_add/call", params=params, json={"a": 2, "b": 3}))
            answered.set()

        async def confirm(question: str) -> bool:
            asked.append(question)
            if len(asked) == 1:  # the person thinks; meanwhile the stream falls behind, then a question comes
                [first] = (await other.get(CONFIRMATIONS_PATH)).json()["confirmations"]
                dropped = station.events.dropped
                while station.events.dropped == dropped:  # until the CLI's stream is full up to its buffer
                    station.events.publish(StationEvent("catalog", data={"changed": [], "filler": "x" * FILLER_CHARS}))
                    await anyio.lowlevel.checkpoint()  # the stream sends what its socket takes
                with station.events.subscribe() as events:
                    group.start_soon(second_call, first["tag"])
                    async for event in events:
                        if event.kind == "confirmation" and event.data["name"] == "mcp_demo_add":
                            break
            return True

        with anyio.fail_after(RUN_S):
            async with anyio.create_task_group() as cli:
                path = "/api/mcp/tools/mcp_demo_slow/call"
                cli.start_soon(_call, remote, path, {"seconds": SLOW_S}, {}, confirm)
                await answered.wait()
                cli.cancel_scope.cancel()  # the slow call is not waited for: the command ends (Ctrl-C)
    assert [q.split(" (server")[0] for q in asked] == ["Run 'mcp_demo_slow'", "Run 'mcp_demo_add'"], asked
    [result] = second
    assert result.json()["ok"] and result.json()["text"] == "5", result.json()
