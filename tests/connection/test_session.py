"""`Session` against a fake owner: what a session reports, and when, seen without a `ServerConnection`.

The owner is a recorder that satisfies `SessionOwner`; the servers are real (our demo server
in-process over the SDK's memory transport, and a stdio command that does not exist).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Set
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpstation.config.models import AnyServerSpec, InProcessServerSpec, StationSettings, StdioServerSpec
from mcpstation.connection import Session, SessionOwner
from mcpstation.connection.discovery import Discovered
from mcpstation.connection.snapshot import SessionInfo
from mcpstation.testing.demo_server import build_demo_server

pytestmark = pytest.mark.anyio

WAIT_S = 20.0
CONNECTION = Path(__file__).resolve().parents[2] / "src" / "mcpstation" / "connection"


class RecordingOwner:
    """Satisfies `SessionOwner`; records every report in order."""

    def __init__(self, spec: AnyServerSpec, settings: StationSettings | None = None, *, idle: bool = False) -> None:
        self._spec = spec
        self._settings = settings or StationSettings()
        self._subscriptions: set[str] = set()
        self.idle = idle
        self.reports: list[tuple[str, Any]] = []
        self.changed = anyio.Event()

    @property
    def spec(self) -> AnyServerSpec:
        return self._spec

    @property
    def settings(self) -> StationSettings:
        return self._settings

    @property
    def subscriptions(self) -> Set[str]:
        return self._subscriptions

    def idle_remaining_s(self) -> float | None:
        return 0.0 if self.idle else None

    async def activity_ended(self) -> None:
        await anyio.sleep(math.inf)

    def _report(self, kind: str, detail: Any) -> None:
        self.reports.append((kind, detail))
        self.changed.set()
        self.changed = anyio.Event()

    def session_ready(self, info: SessionInfo) -> None:
        self._report("ready", info)

    def listing_found(self, discovered: Discovered, dropped: tuple[str, ...], *, full: bool) -> None:
        self._report("listing" if full else "refresh", discovered)

    def session_failed(self, error: str) -> None:
        self._report("failed", error)

    def session_stalled(self, note: str | None) -> None:
        self._report("stalled", note)

    def session_ending(self, *, idle: bool) -> None:
        self._report("ending", idle)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.reports]

    async def wait_for(self, kind: str) -> Any:
        while not any(k == kind for k, _ in self.reports):
            await self.changed.wait()
        return next(detail for k, detail in self.reports if k == kind)


def _owner(server: object | None = None, **fields: Any) -> RecordingOwner:
    spec = InProcessServerSpec(name="demo", server=server or build_demo_server(), **fields)
    return RecordingOwner(spec)


def _tool_names(discovered: Discovered) -> set[str]:
    return {tool.name for tool in discovered.found["tools"]}


async def test_a_session_reports_its_listing_then_ready_then_its_end() -> None:
    recorder = _owner()
    owner: SessionOwner = recorder  # a fake owner is all a session needs
    session = Session(owner)
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            info = await recorder.wait_for("ready")
            assert session.client is not None and session.became_ready
            session.end(stopping=True)
    assert recorder.kinds() == ["listing", "ready", "ending"]
    listing = recorder.reports[0][1]
    assert "add" in _tool_names(listing)
    assert info.server_name == "demo" and info.startup_s is not None
    assert recorder.reports[2][1] is False  # not ended for being idle
    assert session.client is None


async def test_a_change_the_server_announces_comes_back_as_a_refresh() -> None:
    recorder = _owner(build_demo_server(registering=True), protocol="legacy")
    session = Session(recorder)
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await recorder.wait_for("ready")
            assert session.client is not None
            await session.client.call_tool("register_tool", {"name": "late"})
            refreshed = await recorder.wait_for("refresh")
            session.end(stopping=True)
    assert "late" in _tool_names(refreshed)


async def test_a_session_the_owner_finds_idle_ends_as_idle() -> None:
    recorder = _owner(start="lazy")
    recorder.idle = True
    session = Session(recorder)
    with anyio.fail_after(WAIT_S):
        await session.run()  # ends by itself: the owner says the server went unused
    assert recorder.kinds() == ["listing", "ready", "ending"]
    assert recorder.reports[-1][1] is True and session.went_idle


async def test_a_session_that_cannot_start_reports_why_and_never_ready() -> None:
    recorder = RecordingOwner(StdioServerSpec(name="ghost", command="mcpstation-no-such-command"))
    session = Session(recorder)
    with anyio.fail_after(WAIT_S):
        await session.run()
    assert recorder.kinds() == ["failed"]
    assert "command not found" in recorder.reports[0][1]
    assert not session.became_ready


async def test_a_session_lost_by_a_request_reports_the_loss() -> None:
    recorder = _owner()
    session = Session(recorder)
    with anyio.fail_after(WAIT_S):
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.run)
            await recorder.wait_for("ready")
            session.lose("connection lost: the pipe broke")
    assert recorder.kinds() == ["listing", "ready", "failed", "ending"]
    assert recorder.reports[2][1] == "connection lost: the pipe broke"


def _imports_of(path: Path) -> set[str]:
    """Every `mcpstation.connection.*` module `path` imports, `TYPE_CHECKING` blocks included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("mcpstation.connection."):
            found.add(node.module.removeprefix("mcpstation.connection."))
    return found


def test_the_connection_package_has_no_import_circle_not_even_for_type_checking() -> None:
    graph = {path.stem: _imports_of(path) for path in CONNECTION.glob("*.py") if path.stem != "__init__"}

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for target in graph.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        return seen

    circles = sorted(module for module in graph if module in reach(module))
    assert circles == []
    assert "connection" not in reach("session")  # the session knows its owner only as `SessionOwner`
