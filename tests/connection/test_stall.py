"""A start gone quiet, and a failed start's telling stderr line, with real subprocesses.

The servers: the stdlib tiny server sleeping before it answers `initialize` (silent meanwhile),
the same behind a script named `npx` (as a package download looks), and a script that writes
npm's 404 block and exits.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_session import RecordingOwner

from mcpstation import Station, StationConfig
from mcpstation.config.environment import is_network_variable
from mcpstation.config.models import StationSettings, StdioServerSpec
from mcpstation.connection import ServerConnection, Session
from mcpstation.connection._stall import package_download, stall_note
from mcpstation.connection.state import ConnectionState

pytestmark = pytest.mark.anyio

PY = sys.executable
HERE = Path(__file__).resolve().parent
TINY_SERVER = HERE.parents[1] / "bench" / "servers" / "tiny_server.py"
NPM_FAILING = HERE / "npm_failing_server.py"
WAIT_S = 30.0
NETWORK = {"HTTPS_PROXY": "http://127.0.0.1:3128", "NODE_EXTRA_CA_CERTS": "/etc/ssl/inspecting-proxy.pem"}


def fake_npx(folder: Path, init_delay_s: float) -> Path:
    """A command named `npx` that is silent for `init_delay_s`, then serves (as npx after a download)."""
    script = folder / "npx"
    script.write_text(f'#!/bin/sh\nexec "{PY}" "{TINY_SERVER}" --init-delay {init_delay_s}\n')
    script.chmod(0o755)
    return script


async def test_a_silent_start_is_reported_stalled_and_the_report_goes_when_it_answers() -> None:
    # Stalled after a third of the 6 s budget (2 s); the server answers after 3 s of silence.
    spec = StdioServerSpec(name="sleepy", command=PY, args=[str(TINY_SERVER), "--init-delay", "3"], startup_timeout_s=6)
    owner = RecordingOwner(spec)
    session = Session(owner)
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await owner.wait_for("ready")
            session.end(stopping=True)
    [(_, note), (_, cleared)] = [report for report in owner.reports if report[0] == "stalled"]
    assert note.startswith("stalled: wrote nothing for 2 s while starting")
    assert "downloading" not in note  # a plain command downloads nothing
    assert cleared is None
    assert owner.kinds()[:4] == ["stalled", "stalled", "listing", "ready"]


async def test_a_stalled_npx_fails_naming_the_download_and_the_network_variables_it_did_not_get(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in [name for name in os.environ if is_network_variable(name)]:
        monkeypatch.delenv(name)  # this machine's own proxy or CA variables are not the test's
    for name, value in NETWORK.items():
        monkeypatch.setenv(name, value)
    # Not from a config file (as a server added at run time): it inherits no network variable.
    spec = StdioServerSpec(
        name="fs", command=str(fake_npx(tmp_path, 30)), args=["-y", "@example/slow-server"], startup_timeout_s=1.5
    )
    owner = RecordingOwner(spec)
    with anyio.fail_after(WAIT_S):
        await Session(owner).run()
    [error] = [detail for kind, detail in owner.reports if kind == "failed"]
    assert error.startswith("TimeoutError: did not start within 1.5 s (stalled: wrote nothing for 1 s while")
    assert "'npx' is probably downloading '@example/slow-server' from the npm registry" in error
    assert "it did not get HTTPS_PROXY, NODE_EXTRA_CA_CERTS" in error
    stalled = [detail for kind, detail in owner.reports if kind == "stalled" and detail]
    assert len(stalled) == 1 and "probably downloading" in stalled[0]  # said while it was starting


async def test_status_shows_a_stalled_start_while_it_is_starting(tmp_path: Path) -> None:
    spec = StdioServerSpec(name="fs", command=str(fake_npx(tmp_path, 30)), args=["-y", "@x/y"], startup_timeout_s=3)
    seen = anyio.Event()

    class Observer:
        def connection_changed(self, connection: ServerConnection) -> None:
            if (connection.snapshot().error or "").startswith("stalled"):
                seen.set()

        def stderr_line(self, server: str, line: str) -> None: ...
        def server_log(self, server: str, params: Any) -> None: ...
        def resource_updated(self, server: str, uri: str) -> None: ...

    connection = ServerConnection(spec, StationSettings(), observer=Observer())
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.run)
            await seen.wait()
            snapshot = connection.snapshot()
            connection.stop()
    assert snapshot.state is ConnectionState.STARTING
    assert snapshot.error is not None and "'npx' is probably downloading '@x/y'" in snapshot.error


def test_a_server_from_the_config_gets_the_network_variables_so_the_note_does_not_name_them() -> None:
    spec = StdioServerSpec(name="fs", command="npx", args=["-y", "@scope/server", "/tmp"])
    runtime = stall_note(spec, 10.2, NETWORK | {"PATH": "/usr/bin"})
    assert runtime == (
        "stalled: wrote nothing for 10 s while starting; 'npx' is probably downloading '@scope/server' from "
        "the npm registry; it did not get HTTPS_PROXY, NODE_EXTRA_CA_CERTS (inherit_env or env passes them)"
    )
    configured = stall_note(spec.from_config(()), 10.2, NETWORK | {"PATH": "/usr/bin"})
    assert configured.endswith("from the npm registry")
    bare = stall_note(spec.from_config(()), 10.2, {"PATH": "/usr/bin"})
    assert "no proxy or CA variable is set (HTTP_PROXY, HTTPS_PROXY" in bare


@pytest.mark.parametrize(
    "command, args, expected",
    [
        ("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "@modelcontextprotocol/server-filesystem"),
        ("/usr/local/bin/uvx", ["mcp-server-time"], "mcp-server-time"),
        ("uvx", ["--python", "3.12", "--from", "mcp-server-git==1.0", "mcp-server-git"], "mcp-server-git==1.0"),
        ("pipx", ["run", "mcp-server-fetch"], "mcp-server-fetch"),
        ("npm", ["exec", "--yes", "--package=@a/b", "--", "b"], "@a/b"),
        ("python", ["-m", "mcp_server_time"], None),
        ("npx", ["-y"], None),
    ],
)
def test_the_package_a_runner_downloads_is_named(command: str, args: list[str], expected: str | None) -> None:
    found = package_download(command, args)
    assert (found[1] if found is not None else None) == expected


async def test_a_failed_start_quotes_npms_error_not_its_summary() -> None:
    config = StationConfig(servers=[{"name": "fs", "command": PY, "args": [str(NPM_FAILING), "@example/nope"]}])
    with anyio.fail_after(WAIT_S):
        async with Station(config) as station:
            [status] = station.status().servers
    assert status.state == "FAILED"
    assert "(stderr: 'npm error 404 Not Found - GET https://registry.npmjs.org/@example%2fnope - Not found')" in (
        status.error or ""
    )
    assert "A complete log" not in (status.error or "")
