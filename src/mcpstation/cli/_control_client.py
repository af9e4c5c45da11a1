"""HTTP/1.1 to the running station's control socket: `RemoteStation`, one request at a time.

A command sends one or two requests and exits, so the client is the standard library's
`http.client` on a Unix socket, one connection per request: no event loop, no TLS set-up, and
nothing of httpx2/httpcore2/anyio to import (they cost a CLI command about 100 ms of its 300 ms
budget; bench/cli_latency.py). Answers are the API's JSON bodies (`Reply`). A call the person at
the terminal may be asked about needs two things at once, and has its own client
(`cli/_remote_confirm.py`).
"""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from mcpstation.errors import StationError

CONTROL_HOST = "mcpstation.control"  # the socket is the address; the Host header is a label only
CONNECT_TIMEOUT_S = 5.0  # connecting to a local socket is immediate; longer means the station is wedged
REPLY_TIMEOUT_S = 900.0  # the station bounds each request itself (start-up, call_timeout_s); this ends a hung wait
ACTOR_HEADER = "X-Mcpstation-Actor"  # see `mcpstation.api.auth.CONTROL_ACTOR_HEADER`


class StationGone(Exception):
    """The station stopped listening before the request was sent: nothing happened there."""


class RemoteFailure(StationError):
    """The running station took the request but no answer came back (it stopped, or hangs)."""

    exit_code = 3


@dataclass(frozen=True, slots=True)
class Reply:
    """One answer: its status and JSON body."""

    status: int
    body: Any

    @property
    def is_error(self) -> bool:
        """An error body (`{type, message, server, tool}`) rather than the route's answer."""
        return self.status >= 400 and isinstance(self.body, dict) and {"type", "message"} <= self.body.keys()

    @property
    def error_type(self) -> str:
        return str(self.body.get("type", "")) if isinstance(self.body, dict) else ""

    @property
    def message(self) -> str:
        return str(self.body.get("message", "")) if isinstance(self.body, dict) else str(self.body)


def path_segment(value: str) -> str:
    """`value` quoted as one URL path segment."""
    return quote(value, safe="")


class RemoteStation:
    """HTTP/1.1 to the station's control socket at `path`."""

    def __init__(self, path: Path, *, actor: str | None = None) -> None:
        self.path = path
        self._headers = {"Host": CONTROL_HOST, "Accept": "application/json"}
        if actor is not None:
            self._headers[ACTOR_HEADER] = actor

    @property
    def headers(self) -> dict[str, str]:
        """What every request carries: the Host label, and who acts (`--actor`)."""
        return dict(self._headers)

    def get(self, path: str, params: dict[str, str] | None = None) -> Reply:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, params: dict[str, str] | None = None) -> Reply:
        return self.request("POST", path, body=body, params=params)

    def delete(self, path: str) -> Reply:
        return self.request("DELETE", path)

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None) -> Reply:
        """Send one request on a connection of its own and read its JSON answer.

        Raises:
            StationGone: nothing listens on the socket any more; the request was not sent.
            RemoteFailure: the request was sent, and no (JSON) answer came back.
        """
        target = path + (f"?{urlencode(params)}" if params else "")
        headers = dict(self._headers)
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        connection = _UnixConnection(self.path)
        try:
            try:
                connection.connect()
            except (FileNotFoundError, ConnectionRefusedError) as exc:
                raise StationGone(exc.strerror or type(exc).__name__) from None
            except OSError as exc:
                raise RemoteFailure(f"cannot connect to the running station ({self.path}): {exc}") from None
            try:
                connection.sock.settimeout(REPLY_TIMEOUT_S)
                connection.request(method, target, body=payload, headers=headers)
                response = connection.getresponse()
                status, raw = response.status, response.read()
            except TimeoutError:
                raise RemoteFailure(
                    f"the running station ({self.path}) did not answer within {REPLY_TIMEOUT_S:.0f} s"
                ) from None
            except (OSError, http.client.HTTPException) as exc:
                raise RemoteFailure(f"lost the connection to the running station ({self.path}): {exc!r}") from None
        finally:
            connection.close()
        try:
            return Reply(status, json.loads(raw))
        except ValueError:
            raise RemoteFailure(f"the running station answered {method} {path} with {status} and no JSON") from None


class _UnixConnection(http.client.HTTPConnection):
    """`http.client` over a Unix socket."""

    def __init__(self, path: Path) -> None:
        super().__init__(CONTROL_HOST, timeout=CONNECT_TIMEOUT_S)
        self.socket_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(self.socket_path))
        except BaseException:
            sock.close()
            raise
        self.sock = sock
