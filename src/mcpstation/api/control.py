"""The HTTP API for the station's owner, served on the control socket (`mcpstation up`, `gateway`).

The same routes, handlers and rules as `build_app`, without the gateway and the console; every
request arriving on the Unix socket bound at `control_socket` runs as `Caller.cli()`, without a
token (the socket's file permissions authenticate it; see `auth`). Served on its own uvicorn
listener (`ApiServer(app).serve(sockets=[unix_socket])`) beside the TCP one.
"""

from __future__ import annotations

from starlette.applications import Starlette

from mcpstation.api.app import build_app
from mcpstation.api.metrics import MetricsLayer
from mcpstation.station import Station


def build_control_app(station: Station, control_socket: str, *, metrics: MetricsLayer | None = None) -> Starlette:
    """The API app for the control socket bound at `control_socket` (its `getsockname()`).

    Pass the TCP app's `MetricsLayer` (`app.state.metrics`) to count both in one place.
    """
    return build_app(station, gateway=False, metrics=metrics, control_socket=control_socket)
