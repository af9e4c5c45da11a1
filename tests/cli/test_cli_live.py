"""The CLI with `mcpstation up` running: real subprocesses, the control socket, and the same answers
and exit codes as a one-shot station's."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli_probe import run_loading, under
from fork_server import interpreter

from mcpstation.cli._control import CONTROL_DIR_MODE, control_socket_path

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
COMMAND_TIMEOUT_S = 180  # one CLI command; a one-shot station starts its servers on a loaded 2-core machine
UP_START_TIMEOUT_S = 180  # `up` with its server ready and both listeners serving
UP_STOP_TIMEOUT_S = 60
POLL_S = 0.1  # how often a wait looks at `up`'s log again

CONFIG = f"""
[station]
naming = "prefix"

[policy]
allowed_dynamic_stdio_commands = ["{PY}"]

[servers.demo]
command = "{PY}"
args = ["-m", "mcpstation.testing.demo_server"]
"""


def _env(data: Path) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(data)}


@dataclass
class Up:
    """A running `mcpstation up --port 0` and the CLI pointed at its data directory."""

    process: subprocess.Popen[str]
    root: Path
    config: Path
    data: Path
    log: Path
    port: int

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return cli(self.root, self.config, self.data, *args)

    def api(self, path: str, **headers: str) -> tuple[int, Any]:
        """A request to the API over TCP (local-dev mode unless a token exists)."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=UP_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def cli(root: Path, config: Path, data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PY, "-m", "mcpstation", "--config", str(config), *args],
        cwd=root, env=_env(data), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
    )  # fmt: skip


def start_up(root: Path, body: str = CONFIG) -> Up:
    config = root / "mcpstation.toml"
    config.write_text(body)
    data = root / "data"
    log = root / "up.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [PY, "-m", "mcpstation", "--config", str(config), "up", "--port", "0"],
            cwd=root, env=_env(data), stdout=subprocess.DEVNULL, stderr=sink, text=True,
        )  # fmt: skip
    try:
        _wait_for(log, "serving this user's CLI on", process)
        served = log.read_text().split("serving the console at http://127.0.0.1:", 1)[1]
        return Up(process, root, config, data, log, int(served.split("/", 1)[0]))
    except BaseException:
        process.kill()
        process.wait()
        raise


def _wait_for(log: Path, text: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + UP_START_TIMEOUT_S
    while text not in log.read_text():
        assert process.poll() is None, f"up exited with {process.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{text!r} not seen in:\n{log.read_text()}"
        time.sleep(POLL_S)


@pytest.fixture(scope="module")
def up(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    running = start_up(tmp_path_factory.mktemp("live"))
    try:
        yield running
    finally:
        running.stop()


REMOTE = "talking to the station running for"
ONE_SHOT = "starting a station for this command"


def _without_duration(data: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in data.items() if k != "duration_s"}


@pytest.mark.timeout(600)
def test_servers_add_through_the_cli_is_live_at_once_in_the_running_station(up: Up):
    before = json.loads(up.cli("tools", "list", "--json").stdout)
    assert "mcp_demo_add" in {t["name"] for t in before} and not any(t["server"] == "live" for t in before)

    added = up.cli("-v", "servers", "add", "live", "--json", "--", PY, "-m", "mcpstation.testing.demo_server")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["message"] == "connected 'live': 12 tools"
    assert REMOTE in added.stderr

    status, listed = up.api("/api/mcp/tools")  # the running station's own API, without a restart
    assert status == 200 and "mcp_live_add" in {t["name"] for t in listed["tools"]}
    assert "mcp_live_add" in {t["name"] for t in json.loads(up.cli("tools", "list", "--json").stdout)}
    called = up.cli("call", "mcp_live_add", "--args", '{"a": 1, "b": 1}', "--json")
    assert called.returncode == 0 and json.loads(called.stdout)["structured"] == {"result": 2}
    servers = json.loads(up.cli("servers", "list", "--json").stdout)
    assert ("live", "dynamic", "READY") in {(s["name"], s["origin"], s["state"]) for s in servers}

    removed = up.cli("servers", "remove", "live")
    assert removed.returncode == 0 and "removed 'live'" in removed.stdout
    _, listed = up.api("/api/mcp/tools")
    assert not any(t["server"] == "live" for t in listed["tools"])
    actions = json.loads(up.cli("audit", "--kind", "actions", "--server", "live", "--json").stdout)["actions"]
    assert [(a["action"], a["actor"]) for a in reversed(actions)] == [("add", "cli"), ("remove", "cli")]


CALLS = [
    ("mcp_demo_add", '{"a": 2, "b": 5}', 0, "ok"),
    ("mcp_demo_fail", '{"message": "nope"}', 4, "tool_error"),
    ("mcp_demo_nothing", "{}", 4, "not_found"),
]


@pytest.mark.timeout(900)
def test_call_through_the_socket_answers_as_the_one_shot_path_does(up: Up):
    def one_shot(*args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [PY, "-m", "mcpstation", "--config", str(up.config), "-v", "--one-shot", "call", *args],
            cwd=up.root, env=_env(up.data), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip

    # The one-shot stations start together: four station start-ups one after another take minutes here.
    one_shots = [one_shot(tool, "--args", args, "--json") for tool, args, _, _ in CALLS]
    human_one_shot = one_shot("mcp_demo_fail", "--args", '{"message": "nope"}')
    remote = [up.cli("-v", "call", tool, "--args", args, "--json") for tool, args, _, _ in CALLS]
    human_remote = up.cli("-v", "call", "mcp_demo_fail", "--args", '{"message": "nope"}')
    for (tool, _, code, outcome), there, process in zip(CALLS, remote, one_shots, strict=True):
        out, err = process.communicate(timeout=COMMAND_TIMEOUT_S)
        assert REMOTE in there.stderr and ONE_SHOT in err
        assert (there.returncode, process.returncode) == (code, code), (tool, there.stderr, err)
        answer, expected = json.loads(there.stdout), json.loads(out)
        assert answer["outcome"] == outcome
        assert _without_duration(answer) == _without_duration(expected), tool
    out, _ = human_one_shot.communicate(timeout=COMMAND_TIMEOUT_S)
    assert human_remote.returncode == human_one_shot.returncode == 4
    assert human_remote.stdout == out and "nope" in out


def test_another_config_never_goes_silently_to_the_running_station(up: Up, tmp_path: Path):
    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace("servers.demo", "servers.other"))
    done = cli(up.root, other, up.data, "call", "mcp_other_add", "--args", '{"a": 1, "b": 2}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"  # answered by a station of its own, which has `other`
    said = f"the station running for {up.data} runs {up.config.resolve()}, not {other.resolve()}"
    assert said in done.stderr and "starts a station of its own for it" in done.stderr
    same = up.cli("-v", "status", "--json")  # its own config goes to it, as before
    assert same.returncode == 0 and REMOTE in same.stderr


HEAVY = ("mcpstation.station", "mcpstation.store", "mcp", "mcp_types", "starlette", "sqlalchemy", "uvicorn", "anyio",
         "httpx2", "httpcore2")  # fmt: skip


def test_the_cli_path_imports_neither_the_station_nor_the_sdk(up: Up, tmp_path: Path):
    """`--help`, and a call the running station answers, load none of the heavy parts (typer itself
    brings pydantic to validate the parameters of any command that runs, so that is no test)."""
    for args in (["--help"], ["call", "mcp_demo_add", "--args", '{"a": 1, "b": 2}', "--json"]):
        done, loaded = run_loading(
            ["--config", str(up.config), *args], cwd=up.root, env=_env(up.data), timeout_s=COMMAND_TIMEOUT_S
        )
        assert done.returncode == 0, done.stderr
        assert not under(loaded, HEAVY), args
        if args == ["--help"]:
            assert "pydantic" not in loaded
    assert json.loads(done.stdout)["structured"] == {"result": 3}  # the call was answered, by the running station


@pytest.mark.timeout(600)
def test_tcp_never_gets_the_sockets_trust_and_the_socket_goes_with_up(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text(CONFIG)
    token = cli(tmp_path, config, tmp_path / "data", "token", "create", "--role", "user", "--name", "ci", "--json")
    assert token.returncode == 0, token.stderr  # a token exists: no local-dev mode on TCP
    running = start_up(tmp_path)
    try:
        forged = {"X-Mcpstation-Actor": "cli", "Host": f"127.0.0.1:{running.port}"}
        status, body = running.api("/api/mcp/servers", **forged)
        assert status == 401 and body["type"] == "Unauthorized"
        over_socket = running.cli("-v", "status", "--json")
        assert over_socket.returncode == 0 and REMOTE in over_socket.stderr
        assert [s["name"] for s in json.loads(over_socket.stdout)["servers"]] == ["demo"]
    finally:
        assert running.stop() == 0
    assert not control_socket_path(running.data).exists()
    after = running.cli("-v", "call", "mcp_demo_add", "--args", '{"a": 1, "b": 1}')
    assert after.returncode == 0 and after.stdout.strip() == "2"
    assert "no station runs for" in after.stderr and "(no control socket)" in after.stderr


def test_a_stale_socket_file_falls_back_to_a_one_shot_station(tmp_path: Path):
    config = tmp_path / "mcpstation.toml"
    config.write_text(CONFIG)
    path = control_socket_path(tmp_path / "data")
    path.parent.mkdir(mode=CONTROL_DIR_MODE, parents=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))  # a killed station's socket: bound, never removed, nobody listening
    dead.close()
    done = cli(tmp_path, config, tmp_path / "data", "-v", "call", "mcp_demo_add", "--args", '{"a": 2, "b": 2}')
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4"
    assert "nobody listened on the control socket; removed it" in done.stderr
    assert not path.exists()


def test_help_and_bad_input_never_start_a_server(tmp_path: Path):
    marker = tmp_path / "started"
    config = tmp_path / "mcpstation.toml"
    config.write_text(
        f'[servers.marker]\ncommand = "{PY}"\nargs = ["-c", "import pathlib; pathlib.Path({str(marker)!r}).touch()"]\n'
    )
    data = tmp_path / "data"
    refused = [
        (["call", "x", "--args", "{not json"], "not valid JSON"),
        (["call", "x", "--args", "[1, 2]"], "must be a JSON object"),
        (["call", "x", "--timeout", "-1"], "--timeout must be more than 0"),
        (["prompt", "get", "x", "--args", "nope"], "not valid JSON"),
        (["audit", "--since", "yesterday-ish"], "--since must be like"),
    ]
    for args in (["--help"], ["call", "--help"], ["servers", "--help"]):
        shown = cli(tmp_path, config, data, *args)
        assert shown.returncode == 0 and "Usage" in shown.stdout, args
    for args, message in refused:
        done = cli(tmp_path, config, data, *args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
    assert not marker.exists()
    started = cli(tmp_path, config, data, "status")  # the marker works: a command that starts servers leaves it
    assert started.returncode == 3 and marker.exists()  # it exits at once: no server is reachable
