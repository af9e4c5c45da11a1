"""The running station, over its control socket: `RemoteView`, the CLI's verbs as HTTP API requests.

Each verb is one or two requests on `RemoteStation` (`cli/_control_client.py`), which blocks on the
local socket without an event loop; answers are the API's JSON bodies, which are the library's
`to_dict()` shapes, as `StationView` promises (`cli/_view.py`). A call the person at the terminal
may be asked about goes through `cli/_remote_confirm.py`, loaded only then.
"""

from __future__ import annotations

from typing import Any

from mcpstation.cli._control_client import RemoteStation, Reply, path_segment
from mcpstation.cli._exits import exit_code_of_answer
from mcpstation.cli._view import (
    ACTION_FIELDS,
    CALL_FIELDS,
    AuditQuery,
    CacheAge,
    Confirm,
    ProgressFn,
    Refusal,
    ServerVerb,
    Shape,
)
from mcpstation.errors import StationError, UsageError
from mcpstation.outcomes import Outcome

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
    on the local socket (`complete_now` runs them); a call the person is asked about blocks on an
    event loop of its own (`cli/_remote_confirm.py`)."""

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
        self,
        name: str,
        arguments: Shape,
        *,
        timeout_s: float | None,
        progress: ProgressFn | None,
        confirm: Confirm | None,
    ) -> Shape:
        params = {"answer": "result"} | ({"timeout_s": repr(timeout_s)} if timeout_s is not None else {})
        path = f"/api/mcp/tools/{path_segment(name)}/call"
        if confirm is None:
            # Nobody to ask (no terminal): the running station refuses a confirm-tier call as
            # unaskable at once, and its reason says how to be asked.
            reply = self.station.post(path, arguments, params)
        else:
            # The person at the terminal is asked about a confirm-tier call while it waits at the
            # station (`?confirm=wait`); that needs an event loop, which the other verbs do without.
            from mcpstation.cli._remote_confirm import call_confirming

            reply = call_confirming(self.station, path, arguments, params, confirm)
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
