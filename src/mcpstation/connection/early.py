"""Servers started before their station, whose first session adopts the process.

A one-shot `mcpstation call` knows, from the last one-shot call on the same input, which server
owns the tool; it starts that server's process with `EarlyStarts.start` before it imports the
SDK, the store and the station, so the server's own start-up overlaps the station's. The server's
first session then takes the process (`take`) instead of spawning one, with the stderr sink that
has held its output meanwhile. A process is adopted only by a session of the server it was
started for, and only when the launch it would spawn now is the same (`_launch.Launch.of`: same
executable, arguments, environment and folder); one nobody adopted is stopped when the
`EarlyStarts` closes, as the transport stops any server.

Only a server of the operator's config (`StdioServerSpec`) is started early, and only what the
station would start for it: the same spec, judged by the same rules (`usable`).
"""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass
from typing import TypeGuard

from mcpstation.config.models import AnyServerSpec, StdioServerSpec
from mcpstation.connection._launch import Launch, spawn
from mcpstation.connection._stderr import StderrSink

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class EarlyProcess:
    """A server's process started before its session, and the sink its stderr goes to."""

    launch: Launch
    process: subprocess.Popen[bytes]
    sink: StderrSink


class EarlyStarts:
    """The processes started ahead of their station, until a session takes each or this closes."""

    def __init__(self) -> None:
        self._started: dict[str, EarlyProcess] = {}
        self._taken: list[EarlyProcess] = []  # a session may end before its transport adopted the process

    def start(self, spec: AnyServerSpec) -> EarlyProcess | None:
        """Start `spec`'s process now when the station would run it as written (None: not started)."""
        if not usable(spec) or spec.name in self._started:
            return None
        launch = Launch.of(spec)
        if launch is None:
            return None
        sink = StderrSink(spec.name)
        try:
            process = spawn(launch, sink.file)
        except OSError as exc:  # its session says so, with the transport's words
            logger.debug("server %r not started early: %s", spec.name, exc)
            sink.close()
            return None
        logger.info("server %r started before the station (pid %d)", spec.name, process.pid)
        early = self._started[spec.name] = EarlyProcess(launch, process, sink)
        return early

    def take(self, spec: AnyServerSpec) -> EarlyProcess | None:
        """The process started early for `spec`, when it is the process `spec` would start now."""
        early = self._started.get(spec.name)
        if early is None or not usable(spec) or Launch.of(spec) != early.launch:
            return None
        del self._started[spec.name]
        self._taken.append(early)
        return early

    async def aclose(self) -> None:
        """Stop every process no transport adopted, as the stdio transport stops a server; call it
        once the station is closed (every adopted process has been stopped and reaped by then)."""
        left = [*self._started.items(), *((e.sink.server, e) for e in self._taken if e.process.poll() is None)]
        self._started.clear()
        self._taken.clear()
        if not left:
            return
        from mcp import StdioServerParameters

        from mcpstation.connection._stdio import stdio_transport

        for name, early in left:
            launch = early.launch
            params = StdioServerParameters(command=launch.command, args=list(launch.args), env=dict(launch.env))
            logger.info("server %r was started early but not used; stopping it", name)
            try:
                async with stdio_transport(params, server=name, process=early.process):
                    pass
            finally:
                early.sink.close()


def usable(spec: AnyServerSpec) -> TypeGuard[StdioServerSpec]:
    """Whether `spec` may start before its station: a stdio server of the config, enabled, that
    the station runs as written with the shared identity (`ServerRoster.put_static`'s rules)."""
    return (
        isinstance(spec, StdioServerSpec)
        and spec.enabled
        and spec.unusable is None
        and spec.unsupported is None
        and spec.auth.upstream == "shared"
    )
