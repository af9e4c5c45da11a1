"""The control socket and its trust: the socket file's rules, the access guard's rule, and the
CLI's copies of rules it must not import (they must agree with the originals).

The guard is tested on real sockets: uvicorn serving the API on 127.0.0.1:0 and on the Unix
socket, in-process, with the demo server in-process.
"""

from __future__ import annotations

import os
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.types import Receive, Scope, Send
from station_helpers import inproc

from mcpstation import Station, StationConfig
from mcpstation.api import ApiServer, bind_socket, bound_port, build_app, build_control_app
from mcpstation.api.auth import Authenticator, LocalDev
from mcpstation.api.errors import OUTCOME_TYPE
from mcpstation.api.middleware import AccessGuard
from mcpstation.cli._control import (
    CONTROL_DIR_MODE,
    CONTROL_SOCKET_MODE,
    ControlSocket,
    Found,
    config_path_of,
    control_socket_path,
    data_dir_of,
    find_station,
)
from mcpstation.cli._control_transport import control_transport
from mcpstation.cli._exits import OUTCOME_EXIT
from mcpstation.cli._remote import OUTCOME_OF_TYPE
from mcpstation.cli._station import HELD_STATES
from mcpstation.config.loader import resolve_config_path
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import CALLER_SCOPE_KEY, Caller
from mcpstation.status import ServerState
from mcpstation.store import Store, default_data_dir

START_TIMEOUT_S = 60.0  # a station and two HTTP listeners on a loaded 2-core machine


# -- the CLI's copies of rules it does not import -----------------------------------------------


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"MCPSTATION_DATA_DIR": "/srv/station"},
        {"MCPSTATION_DATA_DIR": "~/station"},
        {"XDG_DATA_HOME": "/xdg"},
        {"XDG_DATA_HOME": "relative/xdg"},
        {"XDG_DATA_HOME": "/xdg", "MCPSTATION_DATA_DIR": "/explicit"},
    ],
)
def test_the_cli_finds_the_data_directory_the_store_uses(environ: dict[str, str]):
    assert data_dir_of(None, environ) == default_data_dir(environ)


@pytest.mark.parametrize(
    ("option", "environ", "local_file"),
    [
        (None, {}, False),
        (None, {}, True),
        ("other.toml", {}, True),
        (None, {"MCPSTATION_CONFIG": "env.toml"}, True),
        ("~/x.toml", {"MCPSTATION_CONFIG": "env.toml"}, False),
    ],
)
def test_the_cli_finds_the_config_file_the_loader_picks(
    option: str | None, environ: dict[str, str], local_file: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    if local_file:
        (tmp_path / "mcpstation.toml").write_text("")
    picked = resolve_config_path(option, environ=environ)
    assert config_path_of(option, environ) == (picked.resolve() if picked is not None else None)


def test_every_outcome_has_an_exit_code():
    assert set(OUTCOME_EXIT) == set(Outcome)


def test_held_states_are_the_states_that_are_held():
    assert {ServerState(s) for s in HELD_STATES} == {s for s in ServerState if s.is_held}


def test_error_types_map_back_to_their_outcomes():
    assert {outcome: kind for kind, outcome in OUTCOME_OF_TYPE.items()} == OUTCOME_TYPE


def test_up_defaults_are_the_api_defaults():
    from mcpstation.api import DEFAULT_API_HOST, DEFAULT_API_PORT
    from mcpstation.cli.app import UP_HOST, UP_PORT

    assert (UP_HOST, UP_PORT) == (DEFAULT_API_HOST, DEFAULT_API_PORT)


# -- the socket file -------------------------------------------------------------------------------


def test_claimed_socket_is_private_and_only_one_station_holds_it(tmp_path: Path):
    claimed = ControlSocket.claim(tmp_path)
    assert claimed is not None
    try:
        path = control_socket_path(tmp_path)
        assert stat.S_IMODE(path.stat().st_mode) == CONTROL_SOCKET_MODE
        assert stat.S_IMODE(path.parent.stat().st_mode) == CONTROL_DIR_MODE
        assert ControlSocket.claim(tmp_path) is None  # the lock is held: a second station gets no socket
        assert find_station(tmp_path).found is Found.RUNNING
    finally:
        claimed.close()
    assert not path.exists()
    assert find_station(tmp_path).found is Found.NONE
    again = ControlSocket.claim(tmp_path)  # released with the first
    assert again is not None
    again.close()


def test_a_running_station_says_which_config_it_runs(tmp_path: Path):
    config = tmp_path / "project" / "mcpstation.toml"
    for runs, said in ((config, config), (None, None)):
        claimed = ControlSocket.claim(tmp_path, config=runs)
        assert claimed is not None
        try:
            lookup = find_station(tmp_path)
            assert lookup.found is Found.RUNNING and lookup.said_config and lookup.config == said
        finally:
            claimed.close()


def _leave_stale_socket(data_dir: Path) -> Path:
    """A socket file as a killed station leaves it: bound, closed, never removed."""
    path = control_socket_path(data_dir)
    path.parent.mkdir(mode=CONTROL_DIR_MODE, parents=True, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    return path


def test_a_stale_socket_file_is_removed_by_whoever_looks(tmp_path: Path):
    path = _leave_stale_socket(tmp_path)
    lookup = find_station(tmp_path)
    assert lookup.found is Found.STALE and not path.exists()


def test_a_station_claims_over_a_stale_socket_file(tmp_path: Path):
    _leave_stale_socket(tmp_path)
    claimed = ControlSocket.claim(tmp_path)
    assert claimed is not None
    claimed.close()


def test_a_socket_in_a_directory_others_can_enter_is_not_used(tmp_path: Path):
    claimed = ControlSocket.claim(tmp_path)
    assert claimed is not None
    try:
        os.chmod(claimed.path.parent, 0o755)
        lookup = find_station(tmp_path)
        assert lookup.found is Found.UNUSABLE and "open to other users" in lookup.reason
    finally:
        claimed.close()


# -- the guard's rule, on ASGI scopes --------------------------------------------------------------


async def _scope_caller(scope_fields: dict[str, Any], control: str, headers: list[tuple[bytes, bytes]]) -> Any:
    """Run one HTTP scope through an `AccessGuard` (no store, not loopback): the caller it set, or
    the status it answered with."""
    seen: dict[str, Any] = {}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen["caller"] = scope.get(CALLER_SCOPE_KEY)

    authenticator = Authenticator(store=None, local_dev=LocalDev(None, "0.0.0.0"), allowed_hosts=["127.0.0.1:8765"],
                                  control_socket=control)  # fmt: skip
    guard = AccessGuard(app, authenticator=authenticator)
    scope = {"type": "http", "path": "/api/mcp/servers", "headers": headers, "query_string": b"", **scope_fields}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Any) -> None:
        if message["type"] == "http.response.start":
            seen["status"] = message["status"]

    await guard(scope, receive, send)
    return seen.get("caller", seen.get("status"))


PATH = "/run/user/1000/mcpstation/control/station.sock"
FORGED = [(b"host", b"127.0.0.1:8765"), (b"x-mcpstation-actor", b"cli")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "fields",
    [
        {"server": ("127.0.0.1", 8765), "client": ("127.0.0.1", 50000)},  # TCP, whatever its headers say
        {"server": (PATH, None), "client": ("127.0.0.1", 50000)},  # a client address: not a Unix socket
        {"server": (PATH, 8765), "client": None},  # a port: not a Unix socket
        {"server": ("/elsewhere.sock", None), "client": None},  # another socket
        {"client": None},  # no server information at all
    ],
    ids=["tcp", "client-address", "port", "other-socket", "no-server"],
)
async def test_only_the_control_socket_scope_gets_the_cli_caller(fields: dict[str, Any]):
    assert await _scope_caller(fields, PATH, FORGED) == 401
    trusted = await _scope_caller({"server": (PATH, None), "client": None}, PATH, [])
    assert trusted == Caller.cli()


# -- over real sockets -----------------------------------------------------------------------------


@dataclass
class Served:
    station: Station
    store: Store
    tcp_url: str
    misplaced_url: str
    control: ControlSocket
    admin_token: str

    def over_socket(self, **headers: str) -> httpx2.AsyncClient:
        transport = control_transport(self.control.path)
        return httpx2.AsyncClient(transport=transport, base_url="http://cli", headers=headers, timeout=30.0)

    def over_tcp(self, url: str, **headers: str) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(base_url=url, headers=headers, timeout=30.0)


@asynccontextmanager
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """A station with a token in its store (so no local-dev mode), served on TCP and on its control
    socket; the control app is also served, wrongly, on a second TCP socket."""
    async with await Store.open(data_dir=tmp_path) as store:
        admin, _ = await store.create_token("admin-token", "admin")
        tcp, misplaced = bind_socket("127.0.0.1", 0), bind_socket("127.0.0.1", 0)
        control = ControlSocket.claim(tmp_path)
        assert control is not None
        try:
            async with Station(StationConfig(servers=(inproc("demo"),)), store=store) as station:
                app = build_app(station, host="127.0.0.1", port=bound_port(tcp))
                control_app = build_control_app(station, control.address, metrics=app.state.metrics)
                servers = [
                    (ApiServer(app), tcp),
                    (ApiServer(control_app), control.sock),
                    (ApiServer(control_app), misplaced),
                ]
                async with anyio.create_task_group() as tg:
                    for server, sock in servers:
                        tg.start_soon(server.serve, [sock])
                    with anyio.fail_after(START_TIMEOUT_S):
                        for server, _ in servers:
                            await server.wait_started()
                    try:
                        yield Served(
                            station,
                            store,
                            f"http://127.0.0.1:{bound_port(tcp)}",
                            f"http://127.0.0.1:{bound_port(misplaced)}",
                            control,
                            admin,
                        )
                    finally:
                        for server, _ in servers:
                            server.should_exit = True
        finally:
            tcp.close()
            misplaced.close()
            control.close()


ASKED = [("GET", "/api/mcp/servers"), ("POST", "/api/mcp/reconnect"), ("GET", "/api/mcp/audit")]


@pytest.mark.anyio
async def test_tcp_requests_never_get_the_sockets_trust(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with served(tmp_path) as api:
            # The control app itself on TCP: its Host rule is the default port's, so forge that Host too.
            for url, host in (
                (api.tcp_url, api.tcp_url.removeprefix("http://")),
                (api.misplaced_url, "127.0.0.1:8765"),
            ):
                async with api.over_tcp(url, Host=host, **{"X-Mcpstation-Actor": "cli"}) as tcp:
                    for method, path in ASKED:
                        answer = await tcp.request(method, path)
                        assert answer.status_code == 401, (url, method, path, answer.text)
            async with api.over_tcp(api.tcp_url, Authorization=f"Bearer {api.admin_token}") as tcp:
                assert (await tcp.get("/api/mcp/servers")).status_code == 200  # the same API, with a token
            async with api.over_socket() as cli:
                listed = await cli.get("/api/mcp/servers")
                assert listed.status_code == 200 and [s["name"] for s in listed.json()["servers"]] == ["demo"]
                result = (await cli.post("/api/mcp/tools/mcp_demo_add/call", json={"a": 2, "b": 3})).json()
                assert result["ok"] and result["structured"] == {"result": 5}
            async with api.over_socket(**{"X-Mcpstation-Actor": "ada"}) as cli:
                reconnected = await cli.post("/api/mcp/reconnect", params={"server": "demo"})
                assert reconnected.json()["reconnected"] == ["demo"]
            async with api.over_socket(**{"X-Mcpstation-Actor": "not a name"}) as cli:
                assert (await cli.get("/api/mcp/servers")).status_code == 400
    async with await Store.open(data_dir=tmp_path) as store:  # the audit is all written once the station stopped
        actions = await store.list_actions(None, None, 10)
        assert [(a.action, a.actor) for a in actions if a.action != "create_token"] == [("reconnect", "cli:ada")]
        assert [(c.tool, c.caller) for c in await store.list_calls(None, None, 10)] == [("add", "cli")]


@pytest.mark.anyio
async def test_new_routes_answer_in_the_cli_shapes_and_are_documented(tmp_path: Path):
    with anyio.fail_after(START_TIMEOUT_S):
        async with served(tmp_path) as api, api.over_socket() as cli:
            unknown = await cli.post("/api/mcp/tools/mcp_demo_nothing/call", params={"answer": "result"})
            expected = (await api.station.requests.call_tool("mcp_demo_nothing", {}, caller=Caller.cli())).to_dict()
            assert unknown.status_code == 404 and unknown.json() == expected
            plain = await cli.post("/api/mcp/tools/mcp_demo_nothing/call")
            assert plain.status_code == 404 and plain.json()["type"] == "ToolNotFound"
            approve = await cli.post("/api/mcp/servers/demo/tools/nothing/approve")
            assert approve.status_code == 404 and "no pinned tool 'nothing'" in approve.json()["message"]
            reconnected = (await cli.post("/api/mcp/reconnect")).json()
            assert reconnected["reconnected"] == []
            assert reconnected["servers"] == api.station.status().to_dict()["servers"]
            await cli.post("/api/mcp/reconnect", params={"server": "demo"})
            actions_only = (await cli.get("/api/mcp/audit", params={"kind": "actions"})).json()
            assert actions_only["calls"] == [] and "reconnect" in {a["action"] for a in actions_only["actions"]}
            assert (await cli.get("/api/mcp/audit", params={"kind": "calls"})).json()["actions"] == []
            assert (await cli.get("/api/mcp/audit", params={"kind": "everything"})).status_code == 400
            paths = (await cli.get("/openapi.json")).json()["paths"]
            assert {"/api/mcp/reconnect", "/api/mcp/servers/{name}/tools/{tool}/approve"} <= set(paths)
            assert "answer" in {p["name"] for p in paths["/api/mcp/tools/{name}/call"]["post"]["parameters"]}
            assert "kind" in {p["name"] for p in paths["/api/mcp/audit"]["get"]["parameters"]}
            document = (await cli.get("/openapi.json")).json()
            assert "argument_sha256" in document["components"]["schemas"]["AuditCall"]["required"]
