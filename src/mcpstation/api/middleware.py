"""The HTTP service's ASGI middlewares, composed in one place (`middleware_stack`) for both app factories.

Outermost first:

1. `SecurityHeaders`: every answer, refusals included, carries `SECURITY_HEADERS` (and `no-store`
   on everything but the console's files).
2. `RoutingHeaders`: a gateway request whose `Mcp-Method` or `Mcp-Name` header disagrees with its
   JSON-RPC body is refused (400, -32020) before anything is decided about who may do what; for
   the others it notes the body's method and name, read from the body, never from the headers.
3. `AccessGuard`: Host and Origin checks, then the bearer token; it puts the request's `Caller`
   in the ASGI scope (`auth` says who may use the API, and how).

`RoleGate` is not in the stack: it wraps one mounted app (the gateway at `/mcp`) so that only
callers whose role reaches its own get there.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.inbound import MCP_METHOD_HEADER, MCP_NAME_HEADER, NAME_BEARING_METHODS, decode_header_value
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcpstation.api.auth import GATEWAY_PREFIX, MCP_TARGET_SCOPE_KEY, Authenticator, require_role
from mcpstation.api.errors import ApiError, error_response, from_station_error
from mcpstation.config.models import Role
from mcpstation.errors import StoreError
from mcpstation.pipeline import CALLER_SCOPE_KEY, Principal

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; media-src 'self' data:; style-src 'self'; "
        b"script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    ),
)


class SecurityHeaders:
    """Adds `SECURITY_HEADERS` (and `no-store` on API answers) to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        api = not scope["path"].startswith("/static/") and scope["path"] != "/"

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {k.lower() for k, _ in headers}
                headers.extend((k, v) for k, v in SECURITY_HEADERS if k not in present)
                if api and b"cache-control" not in present:
                    headers.append((b"cache-control", b"no-store"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


MAX_GATEWAY_BODY_BYTES = 4 * 1024 * 1024  # a gateway request body over this is refused (413) unread


class RoutingHeaders:
    """Gateway POSTs: the routing headers must agree with the body; the body's target is noted."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].startswith(GATEWAY_PREFIX):
            await self.app(scope, receive, send)
            return
        body = bytearray()
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body.extend(message.get("body", b""))
            more = message.get("more_body", False)
            if len(body) > MAX_GATEWAY_BODY_BYTES:
                await JSONResponse({"error": f"the body is over {MAX_GATEWAY_BODY_BYTES} bytes"}, 413)(
                    scope, receive, send
                )
                return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            messages = json.loads(body) if body else None
        except ValueError:
            messages = None  # the SDK answers a body that is not JSON
        for item in messages if isinstance(messages, list) else [messages]:
            if not isinstance(item, dict):
                continue
            mismatch = _routing_mismatch(item, headers)
            if mismatch is not None:
                error = {"code": types.HEADER_MISMATCH, "message": mismatch}
                await JSONResponse({"jsonrpc": "2.0", "id": item.get("id"), "error": error}, 400)(scope, receive, send)
                return
            target = _target(item)
            if target is not None and isinstance(messages, dict):
                scope[MCP_TARGET_SCOPE_KEY] = target
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)


def _routing_mismatch(message: dict[str, Any], headers: dict[str, str]) -> str | None:
    method = message.get("method")
    sent_method = headers.get(MCP_METHOD_HEADER)
    if sent_method is not None and sent_method != method:
        return f"the {MCP_METHOD_HEADER} header does not match the request body's method"
    sent_name = headers.get(MCP_NAME_HEADER)
    name_key = NAME_BEARING_METHODS.get(method) if isinstance(method, str) else None
    if sent_name is not None and name_key is not None:
        params = message.get("params")
        named = params.get(name_key) if isinstance(params, dict) else None
        if decode_header_value(sent_name) != named:
            return f"the {MCP_NAME_HEADER} header does not match the request body's {name_key!r} parameter"
    return None


def _target(message: dict[str, Any]) -> tuple[str, str] | None:
    method = message.get("method")
    name_key = NAME_BEARING_METHODS.get(method) if isinstance(method, str) else None
    params = message.get("params")
    named = params.get(name_key) if name_key is not None and isinstance(params, dict) else None
    return (str(method), named) if isinstance(named, str) else None


class AccessGuard:
    """Host, Origin, then token (`Authenticator.admit`); sets the request's `Caller` in its scope."""

    def __init__(self, app: ASGIApp, *, authenticator: Authenticator) -> None:
        self.app = app
        self.authenticator = authenticator

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # websockets: nothing is served over them
            return
        try:
            caller = await self.authenticator.admit(scope)
        except ApiError as exc:
            await error_response(exc)(scope, receive, send)
            return
        except StoreError as exc:  # a token could not be checked: the same answer a handler gives
            await error_response(from_station_error(exc))(scope, receive, send)
            return
        if caller is not None:
            scope[CALLER_SCOPE_KEY] = caller
            if caller.principal is not None:
                scope["user"] = _sdk_user(caller.principal)
        await self.app(scope, receive, send)


def _sdk_user(principal: Principal) -> AuthenticatedUser:
    """The SDK's view of who signed in: its session manager binds each gateway session to this
    principal, and answers a request for it with anyone else's token as for an unknown session.
    The token itself is left out; `(client_id, iss, sub)` is what the SDK compares."""
    token = AccessToken(
        token="",
        client_id=principal.client_id or "",
        scopes=sorted(principal.scopes),
        subject=principal.subject,
        claims={"iss": principal.issuer},
    )
    return AuthenticatedUser(token)


class RoleGate:
    """Only callers whose role reaches `role` reach `app` (the gateway)."""

    def __init__(self, app: ASGIApp, role: Role) -> None:
        self.app = app
        self.role = role

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            require_role(Request(scope), self.role)
        except ApiError as exc:
            await error_response(exc)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def middleware_stack(authenticator: Authenticator) -> list[Middleware]:
    """The middlewares of every HTTP app of the station, outermost first."""
    return [
        Middleware(SecurityHeaders),
        Middleware(RoutingHeaders),
        Middleware(AccessGuard, authenticator=authenticator),
    ]
