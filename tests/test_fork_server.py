"""The tests' fork server (tests/helpers/fork_server.py) runs a program as the real interpreter would.

Most tests spawn `PY`, a shim that forks the demo server and `mcpstation` commands from a server that
has imported them. These tests hold it to the interpreter's behaviour where the suite relies on it:
the exit status, the streams, the working directory and environment, and that nothing outlives the
shim when it is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import fork_server
import pytest
from _processes import alive, children_of

WAIT_S = 60.0  # bound on a loaded machine for the server's imports and a child's start
TINY_SERVER = Path(__file__).resolve().parents[1] / "bench" / "servers" / "tiny_server.py"
INITIALIZE = (
    b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
    b'"capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n'
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A fork server of this module's own (so that its process tree is this test's alone) and its shim."""
    folder = tmp_path_factory.mktemp("forks")
    socket_path = str(folder / "forks.sock")
    process = subprocess.Popen(
        [sys.executable, fork_server.__file__, "serve", socket_path], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        yield process, fork_server.write_shim(str(folder), socket_path)
    finally:
        process.terminate()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _forked(server: subprocess.Popen[str]) -> list[int]:
    """The programs the server is running now (each is the only child of its watcher)."""
    return [child for watcher in children_of(server.pid) for child in children_of(watcher)]


def test_a_forked_command_ends_as_the_interpreter_would(server: tuple[subprocess.Popen[str], str], tmp_path: Path):
    _, shim = server
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(tmp_path)}
    runs = [
        subprocess.run(
            [python, "-m", "mcpstation", "no-such-command"], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        for python in (sys.executable, shim)
    ]
    fresh, forked = runs
    assert forked.returncode == fresh.returncode == 2
    assert forked.stderr == fresh.stderr
    assert "No such command 'no-such-command'" in forked.stderr


def test_the_child_gets_the_shims_folder_and_environment(server: tuple[subprocess.Popen[str], str], tmp_path: Path):
    _, shim = server
    (tmp_path / "mcpstation.toml").write_text(
        f'[servers.tiny]\ncommand = "{sys.executable}"\nargs = ["{TINY_SERVER}"]\n'
    )
    data = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k != "MCPSTATION_CONFIG"} | {"MCPSTATION_DATA_DIR": str(data)}
    done = subprocess.run(
        [shim, "-m", "mcpstation", "--json", "tools", "list"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert '"server": "tiny"' in done.stdout  # the config found in the shim's folder, not the server's
    assert data.is_dir()  # the shim's environment, not the server's


def test_killing_the_shim_ends_its_child(server: tuple[subprocess.Popen[str], str]):
    process, shim = server
    before = set(_forked(process))
    demo = subprocess.Popen(
        [shim, "-m", "mcpstation.testing.demo_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    with demo:  # closes the pipes, and waits
        deadline = time.monotonic() + WAIT_S
        started: list[int] = []
        while time.monotonic() < deadline and not started:
            time.sleep(0.05)
            started = [pid for pid in _forked(process) if pid not in before]
        assert started, "the demo server was not forked"
        demo.kill()
        demo.wait()
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and any(alive(pid) for pid in started):
            time.sleep(0.05)
        assert not any(alive(pid) for pid in started)


def _answered_initialize(process: subprocess.Popen[bytes]) -> bool:
    """Send `initialize` on the process's stdin; True once its answer comes back on stdout."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INITIALIZE)
    process.stdin.flush()
    return b'"protocolVersion"' in process.stdout.readline()


def test_sigterm_reaches_the_child_and_the_shim_ends_as_it_did(server: tuple[subprocess.Popen[str], str]):
    _, shim = server
    statuses = []
    for python in (sys.executable, shim):
        demo = subprocess.Popen(
            [python, "-m", "mcpstation.testing.demo_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        with demo:
            assert _answered_initialize(demo)  # the server runs (in a fork, for the shim): now stop it
            demo.send_signal(signal.SIGTERM)
            statuses.append(demo.wait(timeout=WAIT_S))
    fresh, forked = statuses
    assert forked == fresh
