"""Serving the app with uvicorn inside a task the caller owns (`mcpstation up`, tests).

The caller owns the signals (`up` catches SIGINT and SIGTERM from the start and stops the
station itself), so `ApiServer` installs no handlers of its own; the caller sets `should_exit`.
The socket is bound before the station starts, so a busy port fails fast and port 0 is known.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Generator

import anyio
import uvicorn
from starlette.applications import Starlette

from mcpstation.errors import UsageError

SHUTDOWN_GRACE_S = 3  # seconds open requests and streams get to finish at shutdown (uvicorn takes whole seconds)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (port 0 picks a free one).

    Raises:
        UsageError: the address cannot be bound (in use, not this machine's, no permission).
    """
    name = host.strip("[]")
    family = socket.AF_INET6 if ":" in name else socket.AF_INET
    try:
        sock = socket.create_server((name, port), family=family, reuse_port=False)
    except OSError as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}. Fix: pick another --port, or stop what uses it."
        ) from None
    sock.set_inheritable(False)
    return sock


def bound_port(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


class ApiServer(uvicorn.Server):
    """uvicorn without its signal handlers, ending the app's event streams when it shuts down."""

    def __init__(self, app: Starlette) -> None:
        config = uvicorn.Config(
            app,
            lifespan="on",
            log_config=None,  # our logging is configured by the CLI; uvicorn must not replace it
            log_level="warning",
            access_log=False,  # a query string may hold a token (`/api/events?token=`)
            proxy_headers=False,
            server_header=False,
            timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        )
        super().__init__(config)
        self.app = app
        self._started_event: anyio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self._started_event is not None:
            self._started_event.set()

    async def wait_started(self) -> None:
        """Return once the server listens (bound it with `anyio.fail_after`: a failed start never is)."""
        if self.started:
            return
        if self._started_event is None:
            self._started_event = anyio.Event()
        await self._started_event.wait()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        streams = getattr(self.app.state, "event_streams", None)
        if streams is not None:
            streams.close()
        await super().shutdown(sockets=sockets)
