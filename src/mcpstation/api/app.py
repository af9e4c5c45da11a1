"""`build_app(station, host=..., port=...)`: the HTTP API, the event stream, metrics, the gateway
at `/mcp` and the web console at `/`, as one Starlette app.

Every handler calls the `Station`'s own methods, so the API follows the same rules, allowlists
and command policy as the CLI and the LLM's management tools. The route table below is also what
`/openapi.json` is built from. Who may ask is `auth`'s rule, applied by `middleware`.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from mcpstation.api import models as m
from mcpstation.api.auth import Authenticator, LocalDev, TargetScopes, allowed_hosts_for, caller_of, require_role
from mcpstation.api.errors import (
    ApiError,
    error_response,
    from_station_error,
    not_found,
    outcome_error,
    retry_headers,
    status_for,
)
from mcpstation.api.events import EventStreams
from mcpstation.api.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from mcpstation.api.metrics import MetricsLayer, exposition
from mcpstation.api.middleware import RoleGate, middleware_stack
from mcpstation.api.openapi import Operation, Param, openapi_document
from mcpstation.api.redaction import Redactor, secret_values
from mcpstation.catalog import CatalogTool, ToolResult
from mcpstation.catalog.search import DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT
from mcpstation.catalog.search import MAX_LIMIT as SEARCH_MAX_LIMIT
from mcpstation.config.models import Role
from mcpstation.confirmations import Answered
from mcpstation.errors import StationError
from mcpstation.gateway import GATEWAY_PATH, GatewayInstrument, GatewayRelay, gateway_asgi_app
from mcpstation.host.oauth.exchange import UpstreamTokenError
from mcpstation.host.oauth.user_sign_in import CALLBACK_PATH, UnknownSignIn
from mcpstation.identity import ResourceServer
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Ask, Caller
from mcpstation.station import Station
from mcpstation.wire import ANSWER_TOO_LATE, CONFIRM_WAIT

logger = logging.getLogger(__name__)

DEFAULT_API_HOST = "127.0.0.1"
DEFAULT_API_PORT = 8765
MAX_BODY_BYTES = 4 * 1024 * 1024  # a request body over this is refused (413) before it is parsed
AUDIT_DEFAULT_LIMIT = 100
AUDIT_MAX_LIMIT = 1000
AUDIT_KINDS = ("all", "calls", "actions")
ANSWER_RESULT = "result"  # `?answer=result`: the typed result body whatever the outcome, not-found included
CONFIRM_TAG = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")  # `?confirm_tag=`: the client's label for its questions
CLIENT_CLOSED = 499  # the status of a request whose client left first (as nginx logs it); nobody reads it
STATIC_DIR = Path(__file__).parent / "static"


def _package_version() -> str:
    try:
        return version("mcpstation")
    except PackageNotFoundError:
        return "0+unknown"


@dataclass(frozen=True, slots=True)
class Reply:
    """A handler's answer: a model to send as JSON, its status, and secrets the request carried."""

    body: BaseModel
    status: int = 200
    secrets: tuple[str, ...] = ()


Handler = Callable[[Request, Any], Awaitable[Reply | Response]]


@dataclass(frozen=True, slots=True)
class _Route:
    operation: Operation
    handler: Handler


@dataclass
class _Api:
    """The handlers, over one station."""

    station: Station
    metrics: MetricsLayer
    redactor: Redactor
    streams: EventStreams
    local_dev: LocalDev
    public_health: bool
    operations: list[Operation] = field(default_factory=list)

    # -- health, servers ------------------------------------------------------------------------

    async def health(self, request: Request, _: None) -> Reply:
        by_state: dict[str, int] = {}
        for status in self.station.status().servers:
            by_state[status.state] = by_state.get(status.state, 0) + 1
        auth: Literal["token", "local-dev"] = "local-dev" if await self.local_dev.active() else "token"
        totals = self.station.requests.surface_totals(Caller.library())
        surface = m.SurfaceInfo.model_validate(totals.to_dict()) if totals is not None else None
        follower = self.station.follower
        replica = (
            m.ReplicaInfo(
                id=follower.replica_id,
                applied=follower.applied,
                head=follower.head,
                behind=follower.behind,
                lag_s=round(follower.lag_s, 3),
            )
            if follower is not None
            else None
        )
        return Reply(
            m.Health(
                version=_package_version(),
                auth=auth,
                servers=by_state,
                tools=len(self.station.tools),
                surface=surface,
                replica=replica,
            )
        )

    async def list_servers(self, request: Request, _: None) -> Reply:
        return Reply(m.ServerList.model_validate(self.station.status(caller_of(request)).to_dict()))

    async def add_server(self, request: Request, body: m.AddServerRequest) -> Reply:
        change = await self.station.add_server(body.root, actor=caller_of(request).actor)
        return _change(change.to_dict(), secrets=tuple(secret_values(body.root)))

    async def remove_server(self, request: Request, _: None) -> Reply:
        change = await self.station.remove_server(_name(request), actor=caller_of(request).actor)
        return _change(change.to_dict())

    async def enable_server(self, request: Request, _: None) -> Reply:
        change = await self.station.enable_server(_name(request), actor=caller_of(request).actor)
        return _change(change.to_dict())

    async def disable_server(self, request: Request, _: None) -> Reply:
        change = await self.station.disable_server(_name(request), actor=caller_of(request).actor)
        return _change(change.to_dict())

    async def approve_server(self, request: Request, _: None) -> Reply:
        change = await self.station.approve_server(_name(request), actor=caller_of(request).actor)
        return _change(change.to_dict())

    async def reload_server(self, request: Request, _: None) -> Reply:
        change = await self.station.reload_server(_name(request), actor=caller_of(request).actor)
        return _change(change.to_dict())

    async def reconnect_server(self, request: Request, _: None) -> Reply:
        name = _name(request)
        if name not in self.station.connections:
            raise not_found(f"server {name!r} is not running (enable or approve it first)", server=name)
        await self.station.reconnect(name, actor=caller_of(request).actor)
        connection = self.station.connections.get(name)
        ready = connection is not None and connection.is_ready
        state = str(connection.state) if connection is not None else "STOPPED"
        error = connection.error if connection is not None else None
        tools = sum(1 for t in self.station.tools if t.server == name)
        message = f"reconnected {name!r}: {tools} tools" if ready else f"{name!r} did not come back: {error or state}"
        return _change(
            {"ok": ready, "action": "reconnect", "server": name, "message": message, "state": state, "tools": tools}
        )

    async def reconnect_servers(self, request: Request, _: None) -> Reply:
        name = request.query_params.get("server") or None
        names = await self.station.reconnect(name, failed_only=name is None, actor=caller_of(request).actor)
        return Reply(m.ReconnectBody.model_validate({"reconnected": names, **self.station.status().to_dict()}))

    async def approve_tool(self, request: Request, _: None) -> Reply:
        server, tool = _name(request), str(request.path_params["tool"])
        if not await self.station.approve_tool(server, tool, actor=caller_of(request).actor):
            raise not_found(f"no pinned tool {tool!r} on a running server {server!r}", server=server, tool=tool)
        return Reply(m.ToolApprovalBody(server=server, tool=tool, message=f"approved {server}/{tool} as it is now"))

    # -- catalog ----------------------------------------------------------------------------------

    def _visible_tools(self, request: Request) -> list[CatalogTool]:
        return self.station.visible_tools(caller_of(request))

    async def list_tools(self, request: Request, _: None) -> Reply:
        connections = self.station.connections
        tools = []
        for entry in self._visible_tools(request):
            connection = connections.get(entry.server)
            server_name = connection.server_name if connection is not None else None
            tools.append(m.ToolInfo(**entry.to_dict(), server_name=server_name, tokens=self.station.tool_tokens(entry)))
        return Reply(m.ToolList(tools=tools))

    async def search_tools(self, request: Request, _: None) -> Reply:
        query = request.query_params.get("q", "")
        if not query.strip():
            raise ApiError(400, "BadRequest", "say what to search for: ?q=<what you want to do>")
        limit = _int_query(request, "limit", SEARCH_DEFAULT_LIMIT, maximum=SEARCH_MAX_LIMIT)
        server = request.query_params.get("server") or None
        hits = await self.station.requests.search_tools(query, caller=caller_of(request), limit=limit, server=server)
        return Reply(
            m.ToolSearchBody(
                query=query,
                hybrid=self.station.live_catalog.index.hybrid,
                tools=[m.ToolHit(**hit.to_dict()) for hit in hits],
            )
        )

    async def call_tool(self, request: Request, body: m.CallToolRequest) -> Reply | Response:
        timeout_s = _float_query(request, "timeout_s")
        ask = self._confirm_ask(request)

        async def call() -> ToolResult:
            return await self.station.requests.call_tool(
                request.path_params["name"], body.root, caller=caller_of(request), timeout_s=timeout_s, ask=ask
            )

        # A client that gives up cancels its call (the upstream is told, as an MCP client's
        # cancellation would), and withdraws its question if the call waits for a person.
        answered = await _unless_client_leaves(request, call)
        if answered is None:
            return Response(status_code=CLIENT_CLOSED)
        result = answered
        if result.outcome is Outcome.NOT_FOUND and request.query_params.get("answer") != ANSWER_RESULT:
            raise ApiError(404, "ToolNotFound", result.error or "not found", tool=result.name)
        return Reply(m.ToolResultBody.model_validate(result.to_dict()), status_for(result.outcome))

    def _confirm_ask(self, request: Request) -> Ask | None:
        """How a call opting in with `?confirm=wait` is asked (`station.confirmations`); None without it,
        so the confirm tier refuses it as unaskable at once and nobody is kept waiting."""
        mode = request.query_params.get("confirm") or None
        tag = request.query_params.get("confirm_tag") or None
        if mode is None:
            if tag is not None:
                raise ApiError(400, "BadRequest", f"confirm_tag labels a waiting call: add confirm={CONFIRM_WAIT}")
            return None
        if mode != CONFIRM_WAIT:
            raise ApiError(400, "BadRequest", f"confirm must be {CONFIRM_WAIT!r}, not {mode!r}")
        if tag is not None and not CONFIRM_TAG.fullmatch(tag):
            raise ApiError(400, "BadRequest", "confirm_tag must be 1-64 letters, digits, '_', '.' or '-'")
        return self.station.confirmations.asker(tag)

    async def list_confirmations(self, request: Request, _: None) -> Reply:
        tag = request.query_params.get("tag") or None
        waiting = self.station.confirmations.visible_to(caller_of(request))
        return Reply(
            m.ConfirmationList(
                confirmations=[m.ConfirmationInfo(**q.to_dict()) for q in waiting if tag is None or q.tag == tag]
            )
        )

    async def answer_confirmation(self, request: Request, body: m.ConfirmationAnswer) -> Reply:
        question_id = str(request.path_params["id"])
        answered = await self.station.answer_confirmation(caller_of(request), question_id, approve=body.approve)
        if answered is None:  # not theirs reads the same as none: the id's existence is not confirmed
            raise not_found(f"no call waits for your answer as {question_id!r} (answered, timed out, or not asked)")
        pending, fate = answered
        name = pending.question.name
        if fate is Answered.TOO_LATE:
            ended = f"the answer came as the wait ended: the call of {name!r} was refused as unanswered"
            raise ApiError(409, ANSWER_TOO_LATE, ended)
        verdict = "runs" if body.approve else "is refused"
        return Reply(
            m.ConfirmationAnswered(
                id=pending.id, name=name, approved=body.approve, message=f"the call of {name!r} {verdict}"
            )
        )

    async def list_prompts(self, request: Request, _: None) -> Reply:
        prompts = self.station.prompts_for(caller_of(request))
        return Reply(m.PromptList(prompts=[m.PromptInfo(**p.to_dict()) for p in prompts]))

    async def get_prompt(self, request: Request, body: m.GetPromptRequest) -> Reply:
        name = request.path_params["name"]
        result = await self.station.requests.get_prompt(name, body.root, caller=caller_of(request))
        if result.raw is None:
            raise outcome_error(result.outcome, result.error or "failed", tool=name, server=result.server)
        dumped = result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        return Reply(m.PromptResultBody.model_validate(dumped))

    async def list_resources(self, request: Request, _: None) -> Reply:
        caller = caller_of(request)
        return Reply(
            m.ResourceList(
                resources=[m.ResourceInfo(**r.to_dict()) for r in self.station.resources_for(caller)],
                templates=[m.TemplateInfo(**t.to_dict()) for t in self.station.templates_for(caller)],
            )
        )

    async def read_resource(self, request: Request, _: None) -> Reply:
        uri = request.query_params.get("uri")
        if not uri:
            raise ApiError(400, "BadRequest", "say which resource: ?uri=<resource URI>")
        result = await self.station.requests.read_resource(uri, caller=caller_of(request))
        if result.raw is None:
            raise outcome_error(result.outcome, result.error or "failed", tool=uri, server=result.server)
        dumped = result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)
        return Reply(m.ResourceResultBody.model_validate(dumped))

    # -- the caller's own authorizations of user-oauth servers --------------------------------------

    async def list_authorizations(self, request: Request, _: None) -> Reply:
        found = await self.station.upstream_authorizations(caller_of(request))
        return Reply(m.AuthorizationList(authorizations=[m.Authorization(**c.to_dict()) for c in found]))

    async def start_authorization(self, request: Request, _: None) -> Reply:
        server = _name(request)
        url = await self.station.authorize_upstream(caller_of(request), server)
        return Reply(m.AuthorizationStart(server=server, authorization_url=url))

    async def revoke_authorization(self, request: Request, _: None) -> Reply:
        server = _name(request)
        revoked = await self.station.revoke_upstream(caller_of(request), server)
        return Reply(m.AuthorizationRevoked(server=server, revoked=revoked))

    # -- audit, events, metrics, document ------------------------------------------------------------

    async def audit(self, request: Request, _: None) -> Reply:
        store = self.station.store
        if store is None:
            raise ApiError(404, "NotFound", "this station has no store, so nothing is audited")
        server = request.query_params.get("server") or None
        since = _since(request.query_params.get("since"))
        limit = _int_query(request, "limit", AUDIT_DEFAULT_LIMIT, maximum=AUDIT_MAX_LIMIT)
        kind = request.query_params.get("kind") or "all"
        if kind not in AUDIT_KINDS:
            raise ApiError(400, "BadRequest", f"kind must be one of {', '.join(AUDIT_KINDS)}, not {kind!r}")
        calls = await store.list_calls(server, since, limit) if kind in ("all", "calls") else ()
        actions = await store.list_actions(server, since, limit) if kind in ("all", "actions") else ()
        return Reply(
            m.AuditBody(
                calls=[
                    m.AuditCall(
                        id=c.id,
                        at=c.at.isoformat(),
                        server=c.server,
                        tool=c.tool,
                        caller=c.caller,
                        argument_bytes=c.argument_bytes,
                        argument_sha256=c.argument_sha256,
                        outcome=c.outcome,
                        error=c.error,
                        duration_s=c.duration_s,
                        issuer=c.issuer,
                        subject=c.subject,
                        client_id=c.client_id,
                        token_id=c.token_id,
                        upstream=c.upstream,
                        via=c.via,
                        run_id=c.run_id,
                    )
                    for c in calls
                ],
                actions=[
                    m.AuditAction(
                        id=a.id,
                        at=a.at.isoformat(),
                        actor=a.actor,
                        action=a.action,
                        server=a.server,
                        detail=dict(a.detail),
                    )
                    for a in actions
                ],
            )
        )

    async def events(self, request: Request, _: None) -> Response:
        return StreamingResponse(
            self.streams.stream(caller_of(request)),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    async def metrics_text(self, request: Request, _: None) -> Response:
        body, content_type = exposition(self.metrics, self.station, request.headers.get("accept"))
        return Response(body, headers={"Content-Type": content_type})

    async def openapi(self, request: Request, _: None) -> Response:
        document = openapi_document(self.operations, version=_package_version(), public_health=self.public_health)
        return Response(json.dumps(document), media_type="application/json")

    async def console(self, request: Request, _: None) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    # -- the route table ----------------------------------------------------------------------------

    def routes(self) -> list[_Route]:
        name = Param("name", "path", "The server's name (its config key).")
        tool = Param("name", "path", "The tool's public name.")
        refused = {409: ("Refused: the change breaks a rule; `message` says which.", m.ServerChangeBody)}

        def server_action(verb: str, summary: str, handler: Handler, method: str = "POST") -> _Route:
            path = "/api/mcp/servers/{name}" + (f"/{verb}" if verb else "")
            return _Route(
                Operation(
                    method,
                    path,
                    summary,
                    "admin",
                    response=m.ServerChangeBody,
                    params=(name,),
                    extra_responses=refused,
                    tag="servers",
                ),
                handler,
            )

        return [
            _Route(
                Operation(
                    "GET",
                    "/api/health",
                    "Liveness, auth mode, servers by state.",
                    None,
                    response=m.Health,
                    tag="station",
                ),
                self.health,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/servers",
                    "Every server with origin, state, version, counts, last error.",
                    "user",
                    response=m.ServerList,
                    tag="servers",
                ),
                self.list_servers,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/servers",
                    "Add a server (admitted by policy, saved, connected).",
                    "admin",
                    body=m.AddServerRequest,
                    response=m.ServerChangeBody,
                    extra_responses=refused,
                    tag="servers",
                ),
                self.add_server,
            ),
            server_action("", "Remove a dynamic server.", self.remove_server, method="DELETE"),
            server_action("enable", "Enable a dynamic server and connect it.", self.enable_server),
            server_action("disable", "Disable a dynamic server and disconnect it.", self.disable_server),
            server_action("reconnect", "Reconnect a running server.", self.reconnect_server),
            server_action("reload", "Reconnect a server and list what it offers again.", self.reload_server),
            server_action("approve", "Approve a server waiting for an operator; it connects.", self.approve_server),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/reconnect",
                    "Reconnect every failed server (or `server`); answer, once they settled, with every status.",
                    "admin",
                    response=m.ReconnectBody,
                    params=(Param("server", "query", "Reconnect this server (running or not) instead."),),
                    tag="servers",
                ),
                self.reconnect_servers,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/servers/{name}/tools/{tool}/approve",
                    "Approve a pinned tool's changed definition as it is now (policy.tool_pinning).",
                    "admin",
                    response=m.ToolApprovalBody,
                    params=(name, Param("tool", "path", "The tool's own name on that server.")),
                    tag="servers",
                ),
                self.approve_tool,
            ),
            _Route(
                Operation(
                    "GET", "/api/mcp/tools", "The tools the token's role may see, flat.", "user", response=m.ToolList
                ),
                self.list_tools,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/tools/search",
                    "The best tools for a request in words (any language), best first, among those the token's "
                    "role may see.",
                    "user",
                    response=m.ToolSearchBody,
                    params=(
                        Param("q", "query", "What you want to do, in words.", required=True),
                        Param(
                            "limit",
                            "query",
                            f"At most this many (1-{SEARCH_MAX_LIMIT}, default {SEARCH_DEFAULT_LIMIT}).",
                            {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_LIMIT},
                        ),
                        Param("server", "query", "Only this server's tools."),
                    ),
                ),
                self.search_tools,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/tools/{name}/call",
                    "Call a tool; the body is its arguments.",
                    "user",
                    body=m.CallToolRequest,
                    response=m.ToolResultBody,
                    params=(
                        tool,
                        Param(
                            "timeout_s",
                            "query",
                            "Seconds before the call is cancelled.",
                            {"type": "number", "exclusiveMinimum": 0},
                        ),
                        Param(
                            "answer",
                            "query",
                            "`result`: answer an unknown name with the ToolResult body too (404, `outcome` "
                            "not_found) instead of the error body.",
                            {"type": "string", "enum": [ANSWER_RESULT]},
                        ),
                        Param(
                            "confirm",
                            "query",
                            "`wait`: a tool in `[policy] confirm_tools` waits (up to `confirm_timeout_s`) for the "
                            "caller or an admin to answer it at `/api/mcp/confirmations`; without it, such a call is "
                            "refused at once (`confirmation: unaskable`). Leaving cancels the call.",
                            {"type": "string", "enum": [CONFIRM_WAIT]},
                        ),
                        Param(
                            "confirm_tag",
                            "query",
                            "With `confirm=wait`: a label of the client's choosing, shown with the question, so "
                            "the client can find its own.",
                            {"type": "string", "pattern": CONFIRM_TAG.pattern},
                        ),
                    ),
                ),
                self.call_tool,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/confirmations",
                    "Calls waiting for a person's answer (`confirm=wait`): the caller's own, or every one for an "
                    "admin. Also announced as `confirmation` events.",
                    "user",
                    response=m.ConfirmationList,
                    params=(Param("tag", "query", "Only the calls made with this `confirm_tag`."),),
                ),
                self.list_confirmations,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/confirmations/{id}",
                    "Answer a waiting call: `approve` true runs it, false refuses it. Only the caller who made it "
                    "or an admin may; to anyone else it is 404. Answered once the call took it, and then audited "
                    f"as an action; an answer that came as the wait ended is 409 `{ANSWER_TOO_LATE}` (the call "
                    "was refused as unanswered).",
                    "user",
                    body=m.ConfirmationAnswer,
                    response=m.ConfirmationAnswered,
                    params=(Param("id", "path", "The question's id (from the list or its event)."),),
                ),
                self.answer_confirmation,
            ),
            _Route(
                Operation("GET", "/api/mcp/prompts", "The catalog's prompts.", "user", response=m.PromptList),
                self.list_prompts,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/mcp/prompts/{name}/get",
                    "Get a prompt, filled with its arguments.",
                    "user",
                    body=m.GetPromptRequest,
                    response=m.PromptResultBody,
                    params=(Param("name", "path", "The prompt's public name."),),
                ),
                self.get_prompt,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/resources",
                    "The catalog's resources and templates.",
                    "user",
                    response=m.ResourceList,
                ),
                self.list_resources,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/resources/read",
                    "Read a resource.",
                    "user",
                    response=m.ResourceResultBody,
                    params=(Param("uri", "query", "The resource URI.", required=True),),
                ),
                self.read_resource,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/me/authorizations",
                    "The caller's own authorizations of user-oauth servers (a signed-in user's).",
                    "user",
                    response=m.AuthorizationList,
                    tag="identity",
                ),
                self.list_authorizations,
            ),
            _Route(
                Operation(
                    "POST",
                    "/api/me/authorizations/{name}",
                    "Start authorizing a user-oauth server: answers the URL to open in a browser.",
                    "user",
                    response=m.AuthorizationStart,
                    params=(name,),
                    tag="identity",
                ),
                self.start_authorization,
            ),
            _Route(
                Operation(
                    "DELETE",
                    "/api/me/authorizations/{name}",
                    "Forget the caller's authorization of a server (revoked at its authorization server).",
                    "user",
                    response=m.AuthorizationRevoked,
                    params=(name,),
                    tag="identity",
                ),
                self.revoke_authorization,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/mcp/audit",
                    "Audited calls and management actions, newest first.",
                    "admin",
                    response=m.AuditBody,
                    tag="audit",
                    params=(
                        Param("server", "query", "Only this server."),
                        Param(
                            "since",
                            "query",
                            "Only at or after this ISO 8601 time.",
                            {"type": "string", "format": "date-time"},
                        ),
                        Param(
                            "limit",
                            "query",
                            "At most this many of each (1-1000).",
                            {"type": "integer", "minimum": 1, "maximum": AUDIT_MAX_LIMIT},
                        ),
                        Param(
                            "kind",
                            "query",
                            "calls, actions or all (default).",
                            {"type": "string", "enum": list(AUDIT_KINDS)},
                        ),
                    ),
                ),
                self.audit,
            ),
            _Route(
                Operation(
                    "GET",
                    "/api/events",
                    "Server-Sent Events: snapshot, state, catalog, server, log. "
                    "`?token=` is accepted here, for EventSource.",
                    "user",
                    media_type="text/event-stream",
                    tag="station",
                ),
                self.events,
            ),
            _Route(
                Operation(
                    "GET", "/metrics", "Prometheus metrics.", "user", media_type=METRICS_CONTENT_TYPE, tag="station"
                ),
                self.metrics_text,
            ),
            _Route(Operation("GET", "/openapi.json", "This document.", "user", tag="station"), self.openapi),
        ]


_T = TypeVar("_T")


async def _unless_client_leaves(request: Request, work: Callable[[], Awaitable[_T]]) -> _T | None:
    """`work()`'s answer, or None when the client closed its connection first (`work` is cancelled)."""
    answers: list[_T] = []
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            # The body is read: the server says nothing more until the client disconnects.
            while (await request.receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        answers.append(await work())
        group.cancel_scope.cancel()
    return answers[0] if answers else None


def _change(data: dict[str, Any], *, secrets: tuple[str, ...] = ()) -> Reply:
    body = m.ServerChangeBody.model_validate(data)
    return Reply(body, 200 if body.ok else 409, secrets)


def _name(request: Request) -> str:
    return str(request.path_params["name"])


def _float_query(request: Request, key: str) -> float | None:
    raw = request.query_params.get(key)
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ApiError(400, "BadRequest", f"{key} must be a number of seconds, not {raw!r}") from None
    if value <= 0:
        raise ApiError(400, "BadRequest", f"{key} must be more than 0")
    return value


def _int_query(request: Request, key: str, default: int, *, maximum: int) -> int:
    raw = request.query_params.get(key)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, "BadRequest", f"{key} must be a whole number, not {raw!r}") from None
    if not 1 <= value <= maximum:
        raise ApiError(400, "BadRequest", f"{key} must be between 1 and {maximum}")
    return value


def _since(raw: str | None) -> datetime | None:
    if not raw:
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        example = "2026-01-31T12:00:00Z"
        raise ApiError(400, "BadRequest", f"since must be an ISO 8601 time ({example}), not {raw!r}") from None


async def _read_body(request: Request, model: type[BaseModel]) -> BaseModel:
    """The request body validated with `model`; an empty body is an empty object."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, "BodyTooLarge", f"the body is over {MAX_BODY_BYTES} bytes")
    raw = bytearray()
    async for chunk in request.stream():
        raw.extend(chunk)
        if len(raw) > MAX_BODY_BYTES:
            raise ApiError(413, "BodyTooLarge", f"the body is over {MAX_BODY_BYTES} bytes")
    try:
        return model.model_validate_json(bytes(raw) or b"{}")
    except ValidationError as exc:
        # Locations and messages only: pydantic's `input` would echo values back, secrets included.
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc'] if p != 'root') or 'body'}: {error['msg']}"
            for error in exc.errors()[:5]
        )
        raise ApiError(422, "ValidationError", f"invalid {model.__name__}: {problems}") from None


def _endpoint(api: _Api, route: _Route) -> Callable[[Request], Awaitable[Response]]:
    op = route.operation

    async def endpoint(request: Request) -> Response:
        secrets: Iterable[str] = ()
        try:
            if op.role is not None:
                require_role(request, Role(op.role))
            body = await _read_body(request, op.body) if op.body is not None else None
            reply = await route.handler(request, body)
            if isinstance(reply, Response):
                return reply
            secrets = reply.secrets
            text = reply.body.model_dump_json()
            status = reply.status
        except ApiError as exc:
            text, status = exc.body().model_dump_json(), exc.status
            if status in (401, 413) or exc.challenge is not None:
                return error_response(exc)
        except StationError as exc:
            error = from_station_error(exc)
            text, status = error.body().model_dump_json(), error.status
        except Exception:  # boundary: one request's bug is a 500, never a dead server
            logger.exception("%s %s failed", request.method, request.url.path)
            error = ApiError(500, "InternalError", "the request failed inside the station; see its log")
            text, status = error.body().model_dump_json(), error.status
        return Response(
            api.redactor.scrub(text, secrets),
            status_code=status,
            media_type="application/json",
            headers=retry_headers(status),
        )

    return endpoint


def _metadata_routes(identity: ResourceServer | None) -> list[BaseRoute]:
    """Protected Resource Metadata at its well-known paths (served without a token), when issuers are configured."""
    if identity is None:
        return []
    document = json.dumps(identity.metadata())

    async def metadata(request: Request) -> Response:
        return Response(document, media_type="application/json", headers={"Cache-Control": "max-age=300"})

    return [Route(path, metadata, methods=["GET"]) for path in identity.metadata_paths]


def _callback_route(station: Station) -> Route:
    """`GET /oauth/callback`: a user's browser back from an upstream's authorization server (served
    without a token: the unguessable `state` names the sign-in, which this process started)."""

    async def callback(request: Request) -> Response:
        query = request.query_params
        state = query.get("state")
        if not state:
            return _page(400, "This is not an answer to a sign-in the station started (no state).")
        try:
            user, server = await station.complete_authorization(
                state, query.get("code"), query.get("iss"), query.get("error")
            )
        except UnknownSignIn as exc:
            return _page(400, str(exc))
        except UpstreamTokenError as exc:
            return _page(502, f"The authorization did not complete: {exc}")
        return _page(
            200, f"{user[1]} authorized the station to use server {server!r} as them. You can close this window."
        )

    return Route(CALLBACK_PATH, callback, methods=["GET"])


def _page(status: int, message: str) -> Response:
    body = f"<!doctype html><meta charset=utf-8><title>mcpstation</title><p>{html.escape(message)}</p>"
    return Response(body, status_code=status, media_type="text/html", headers={"Cache-Control": "no-store"})


def _target_scopes(station: Station) -> TargetScopes:
    """The `auth.caller_scopes` a named target's server asks of a caller who otherwise reaches it."""

    def scopes(caller: Caller, method: str, name: str) -> tuple[str, ...]:
        catalog = station.catalog
        server: str | None = None
        tool: str | None = None
        if method == "tools/call" and (entry := catalog.tools.get(name)) is not None:
            server, tool = entry.server, entry.tool
        elif method == "prompts/get" and (prompt := catalog.prompts.get(name)) is not None:
            server = prompt.server
        elif method == "resources/read":
            server = catalog.resource_owner(name)
        if server is None or not station.visibility.reaches(caller, server, tool):
            return ()
        spec = station.roster.spec(server)
        return spec.auth.caller_scopes if spec is not None else ()

    return scopes


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    kind = {404: "NotFound", 405: "MethodNotAllowed"}.get(exc.status_code, "HTTPError")
    return error_response(ApiError(exc.status_code, kind, str(exc.detail)))


def build_app(
    station: Station,
    *,
    host: str = DEFAULT_API_HOST,
    port: int = DEFAULT_API_PORT,
    allowed_hosts: Sequence[str] = (),
    public_health: bool = False,
    gateway: bool = True,
    metrics: MetricsLayer | None = None,
    instrument: GatewayInstrument | None = None,
    control_socket: str | None = None,
) -> Starlette:
    """The HTTP service for a running `station`, bound (by the caller) to `host:port`.

    `host` and `port` decide the allowed `Host` headers (see `auth`) and whether local-dev mode
    (loopback, no token in the store) is possible; `allowed_hosts` adds names (`name:port`, or
    `name:*`). `public_health` serves `/api/health` without a token. `gateway` mounts the MCP
    gateway at `/mcp`, where each request runs as its token's caller (a `user` token sees and
    calls what its role may). A `MetricsLayer` is added to the station's request path
    (pass one to share it). Run the app under uvicorn (`serve.ApiServer`) while `station` runs;
    check the bind first with `auth.check_bind`. `control_socket` is the address of the Unix socket
    the app is (also) served on for the station's owner: requests arriving there run as
    `Caller.cli()` without a token (see `auth`).
    """
    identity = ResourceServer.from_config(station.config)
    hosts = allowed_hosts_for(host, port, allowed_hosts, public_url=identity.public_url if identity else None)
    if metrics is None:
        metrics = MetricsLayer()
        station.add_layer(metrics)
    redactor = Redactor(station)
    streams = EventStreams(station, redactor)
    local_dev = LocalDev(station.store, host)
    api = _Api(station, metrics, redactor, streams, local_dev, public_health)
    table = api.routes()
    api.operations = [r.operation for r in table]
    routes: list[BaseRoute] = [Route(r.operation.path, _endpoint(api, r), methods=[r.operation.method]) for r in table]
    routes.append(Route("/", _endpoint(api, _Route(Operation("GET", "/", "", None), api.console)), methods=["GET"]))
    routes.append(Mount("/static", app=StaticFiles(directory=STATIC_DIR), name="static"))
    routes.extend(_metadata_routes(identity))
    routes.append(_callback_route(station))
    gateway_app: Starlette | None = None
    if gateway:
        origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
        gateway_app = gateway_asgi_app(
            station, allowed_hosts=list(hosts), allowed_origins=origins, instrument=instrument
        )
        routes.append(Route(GATEWAY_PATH, RoleGate(gateway_app, Role.USER), methods=["GET", "POST", "DELETE"]))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if gateway_app is not None:
                await stack.enter_async_context(gateway_app.router.lifespan_context(gateway_app))
            try:
                yield
            finally:
                streams.close()

    app = Starlette(
        routes=routes,
        middleware=middleware_stack(
            Authenticator(
                store=station.store,
                local_dev=local_dev,
                allowed_hosts=hosts,
                public_health=public_health,
                control_socket=control_socket,
                identity=identity,
                target_scopes=_target_scopes(station),
            )
        ),
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.state.event_streams = streams
    app.state.metrics = metrics
    return app


def build_gateway_app(
    station: Station,
    *,
    host: str,
    port: int,
    allowed_hosts: Sequence[str] = (),
    json_response: bool = False,
    stateless: bool = False,
    relay: GatewayRelay | None = None,
    instrument: GatewayInstrument | None = None,
) -> Starlette:
    """The gateway alone (`mcpstation gateway --host --port`), behind the same middlewares as the API
    (`middleware.middleware_stack`): security headers; Host and Origin checks, then bearer tokens,
    each request running as its token's caller."""
    identity = ResourceServer.from_config(station.config)
    hosts = allowed_hosts_for(host, port, allowed_hosts, public_url=identity.public_url if identity else None)
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    app = gateway_asgi_app(
        station,
        json_response=json_response,
        stateless=stateless,
        allowed_hosts=list(hosts),
        allowed_origins=origins,
        relay=relay,
        instrument=instrument,
    )
    app.router.routes.extend(_metadata_routes(identity))
    authenticator = Authenticator(
        store=station.store,
        local_dev=LocalDev(station.store, host),
        allowed_hosts=hosts,
        identity=identity,
        target_scopes=_target_scopes(station),
    )
    for middleware in reversed(middleware_stack(authenticator)):  # add_middleware puts each outermost
        app.add_middleware(middleware.cls, *middleware.args, **middleware.kwargs)
    return app
