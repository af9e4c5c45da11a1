"""The running station, over its control socket: the CLI's verbs as HTTP API requests.

A command sends one or two requests and exits, so the client is httpx2's synchronous one over
the Unix socket: no event loop to start, and neither anyio nor the SDK to import. Answers are
the API's JSON bodies, which are the library's `to_dict()` shapes; the commands render them with
the same code as the one-shot path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx2

from mcpstation.errors import StationError
from mcpstation.outcomes import Outcome

CONTROL_BASE_URL = "http://mcpstation.control"  # the socket is the address; the host name is a label only
CONNECT_TIMEOUT_S = 5.0  # connecting to a local socket is immediate; longer means the station is wedged
REPLY_TIMEOUT_S = 900.0  # the station bounds each request itself (start-up, call_timeout_s); this ends a hung wait
ACTOR_HEADER = "X-Mcpstation-Actor"  # see `mcpstation.api.auth.CONTROL_ACTOR_HEADER`

# The error body's `type` of a request that produced no answer, back to its outcome: the inverse
# of `mcpstation.api.errors.OUTCOME_TYPE` (tests/cli/test_control.py checks it stays so).
OUTCOME_OF_TYPE: dict[str, Outcome] = {
    "Ok": Outcome.OK,
    "ToolError": Outcome.TOOL_ERROR,
    "Refused": Outcome.REFUSED,
    "ToolNotFound": Outcome.NOT_FOUND,
    "ServerUnavailable": Outcome.UNAVAILABLE,
    "CallTimeout": Outcome.TIMEOUT,
    "ConnectionLost": Outcome.CONNECTION_LOST,
    "RemoteError": Outcome.REMOTE_ERROR,
    "MessageTooLarge": Outcome.TOO_LARGE,
    "InvalidResult": Outcome.INVALID_RESULT,
    "Cancelled": Outcome.CANCELLED,
}


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
    """HTTP/1.1 to the station's control socket at `path`; use it as a context manager."""

    def __init__(self, path: Path, *, actor: str | None = None) -> None:
        self.path = path
        headers = {ACTOR_HEADER: actor} if actor is not None else {}
        self._client = httpx2.Client(
            transport=httpx2.HTTPTransport(uds=str(path)),
            base_url=CONTROL_BASE_URL,
            headers=headers,
            timeout=httpx2.Timeout(REPLY_TIMEOUT_S, connect=CONNECT_TIMEOUT_S),
            trust_env=False,  # no proxy settings: the socket is the station
        )

    def __enter__(self) -> RemoteStation:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: dict[str, str] | None = None) -> Reply:
        return self.request("GET", path, params=params)

    def post(self, path: str, body: Any = None, params: dict[str, str] | None = None) -> Reply:
        return self.request("POST", path, body=body, params=params)

    def delete(self, path: str) -> Reply:
        return self.request("DELETE", path)

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, str] | None = None) -> Reply:
        """Send one request and read its JSON answer.

        Raises:
            StationGone: nothing listens on the socket any more; the request was not sent.
            RemoteFailure: the request was sent, and no (JSON) answer came back.
        """
        try:
            response = self._client.request(method, path, json=body, params=params)
        except httpx2.ConnectError as exc:
            raise StationGone(str(exc) or type(exc).__name__) from None
        except httpx2.TimeoutException:
            raise RemoteFailure(
                f"the running station ({self.path}) did not answer within {REPLY_TIMEOUT_S:.0f} s"
            ) from None
        except httpx2.TransportError as exc:
            raise RemoteFailure(f"lost the connection to the running station ({self.path}): {exc}") from None
        try:
            return Reply(response.status_code, response.json())
        except ValueError:
            raise RemoteFailure(
                f"the running station answered {method} {path} with {response.status_code} and no JSON"
            ) from None
