"""The running station, over its control socket: `RemoteView`, the CLI's verbs as HTTP API requests.

A command sends one or two requests and exits, so the client is the standard library's
`http.client` on a Unix socket, one connection per request: no event loop, no TLS set-up, and
nothing of httpx2/httpcore2/anyio to import (they cost a CLI command about 100 ms of its 300 ms
budget; bench/cli_latency.py). Answers are the API's JSON bodies, which are the library's
`to_dict()` shapes, as `StationView` promises (`cli/_view.py`).
"""

from __future__ import annotations

import http.client
import json
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from mcpstation.cli._exits import exit_code_of_answer
from mcpstation.cli._view import (
    ACTION_FIELDS,
    CALL_FIELDS,
    AuditQuery,
    CacheAge,
    ProgressFn,
    Refusal,
    ServerVerb,
    Shape,
)
from mcpstation.errors import StationError, UsageError
from mcpstation.outcomes import Outcome

if TYPE_CHECKING:
    from mcpstation.pipeline import Ask

CONTROL_HOST = "mcpstation.control"  # the socket is the address; the Host header is a label only
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
    "StoreUnavailable": Outcome.STORE_DOWN,
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
    """HTTP/1.1 to the station's control socket at `path`."""

    def __init__(self, path: Path, *, actor: str | None = None) -> None:
        self.path = path
        self._headers = {"Host": CONTROL_HOST, "Accept": "application/json"}
        if actor is not None:
            self._headers[ACTOR_HEADER] = actor

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


class ErrorAnswer(StationError):
    """The running station answered with an error: its own type's name, its message, its exit code."""

    def __init__(self, reply: Reply) -> None:
        super().__init__(reply.message)
        self.type_name = reply.error_type
        self.exit_code = exit_code_of_answer(reply.error_type, reply.status, OUTCOME_OF_TYPE.get(reply.error_type))


def _body(reply: Reply) -> Any:
    """The body of a successful answer.

    Raises:
        ErrorAnswer: an error answer.
    """
    if reply.is_error:
        raise ErrorAnswer(reply)
    return reply.body


# Each change to a server at run time: its method and its path under /api/mcp/servers.
_CHANGES: dict[ServerVerb, tuple[str, str]] = {
    ServerVerb.ADD: ("POST", ""),
    ServerVerb.REMOVE: ("DELETE", "/{name}"),
    ServerVerb.ENABLE: ("POST", "/{name}/enable"),
    ServerVerb.DISABLE: ("POST", "/{name}/disable"),
    ServerVerb.RELOAD: ("POST", "/{name}/reload"),
    ServerVerb.APPROVE: ("POST", "/{name}/approve"),
}


class RemoteView:
    """`StationView` over the running station's HTTP API. Its coroutines never suspend: each blocks
    on the local socket (`complete_now` runs them)."""

    reports_progress = False

    def __init__(self, station: RemoteStation) -> None:
        self.station = station

    async def status(self) -> Shape:
        body: Shape = _body(self.station.get("/api/mcp/servers"))
        return body

    async def reconnect(self, name: str | None) -> Shape:
        body: Shape = _body(self.station.post("/api/mcp/reconnect", params={"server": name} if name else None))
        return body

    async def tools(self) -> list[Shape]:
        tools = _body(self.station.get("/api/mcp/tools"))["tools"]
        return [{k: v for k, v in t.items() if k != "server_name"} for t in tools]

    async def search_tools(self, query: str, *, limit: int, server: str | None) -> list[Shape]:
        params = {"q": query, "limit": str(limit), **({"server": server} if server else {})}
        hits: list[Shape] = _body(self.station.get("/api/mcp/tools/search", params=params))["tools"]
        return hits

    async def approve_tool(self, server: str, tool: str) -> bool:
        reply = self.station.post(f"/api/mcp/servers/{path_segment(server)}/tools/{path_segment(tool)}/approve")
        if reply.is_error and reply.status == 404:
            return False
        _body(reply)
        return True

    async def prompts(self) -> list[Shape]:
        prompts: list[Shape] = _body(self.station.get("/api/mcp/prompts"))["prompts"]
        return prompts

    async def resources(self) -> Shape:
        listed: Shape = _body(self.station.get("/api/mcp/resources"))
        return listed

    async def catalog_age(self) -> CacheAge | None:
        return None  # the running station keeps its catalog current itself

    async def refresh(self) -> None:
        return None  # the running station keeps its catalog current itself

    async def call_tool(
        self, name: str, arguments: Shape, *, timeout_s: float | None, progress: ProgressFn | None, ask: Ask | None
    ) -> Shape:
        # The control socket carries no question back: a confirm-tier call is refused by the running
        # station as unaskable, and its reason says to run the command with --one-shot to be asked.
        params = {"answer": "result"} | ({"timeout_s": repr(timeout_s)} if timeout_s is not None else {})
        reply = self.station.post(f"/api/mcp/tools/{path_segment(name)}/call", arguments, params)
        if not isinstance(reply.body, dict) or "outcome" not in reply.body:
            raise ErrorAnswer(reply)
        result: Shape = reply.body
        return result

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Shape:
        return _answer_or_refusal(self.station.post(f"/api/mcp/prompts/{path_segment(name)}/get", arguments))

    async def read_resource(self, uri: str) -> Shape:
        return _answer_or_refusal(self.station.get("/api/mcp/resources/read", params={"uri": uri}))

    async def change_server(self, verb: ServerVerb, name: str, entry: Shape | None = None) -> Shape:
        method, path = _CHANGES[verb]
        reply = self.station.request(method, "/api/mcp/servers" + path.format(name=path_segment(name)), body=entry)
        if reply.is_error and reply.error_type == UsageError.__name__:
            raise UsageError(reply.message)
        change: Shape = _body(reply)
        return change

    async def audit(self, query: AuditQuery) -> dict[str, list[Shape]]:
        params = {"kind": query.kind, "limit": str(query.limit)}
        if query.server is not None:
            params["server"] = query.server
        if query.since is not None:
            params["since"] = query.since.isoformat()
        body = _body(self.station.get("/api/mcp/audit", params=params))
        return {
            "calls": [{name: c[name] for name in CALL_FIELDS} for c in body["calls"]],
            "actions": [{name: a[name] for name in ACTION_FIELDS} for a in body["actions"]],
        }


def _answer_or_refusal(reply: Reply) -> Shape:
    """A prompt's or resource's answer (the protocol's JSON, no nulls, as `LocalView` dumps it).

    Raises:
        Refusal: the request produced no answer (its outcome and why).
        ErrorAnswer: any other error answer.
    """
    if reply.is_error:
        outcome = OUTCOME_OF_TYPE.get(reply.error_type)
        if outcome is None:
            raise ErrorAnswer(reply)
        raise Refusal(outcome, reply.message)
    return {k: v for k, v in reply.body.items() if v is not None}
