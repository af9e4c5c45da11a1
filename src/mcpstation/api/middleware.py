"""The HTTP service's ASGI middlewares, composed in one place (`middleware_stack`) for both app factories.

Outermost first:

1. `SecurityHeaders`: every answer, refusals included, carries `SECURITY_HEADERS` (and `no-store`
   on everything but the console's files).
2. `AccessGuard`: Host and Origin checks, then the bearer token; it puts the request's `Caller`
   in the ASGI scope (`auth` says who may use the API, and how).

`RoleGate` is not in the stack: it wraps one mounted app (the gateway at `/mcp`) so that only
callers whose role reaches its own get there.
"""

from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from mcpstation.api.auth import Authenticator, require_role
from mcpstation.api.errors import ApiError, error_response, from_station_error
from mcpstation.config.models import Role
from mcpstation.errors import StoreError
from mcpstation.pipeline import CALLER_SCOPE_KEY

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
        await self.app(scope, receive, send)


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
    return [Middleware(SecurityHeaders), Middleware(AccessGuard, authenticator=authenticator)]
