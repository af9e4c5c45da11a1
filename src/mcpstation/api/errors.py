"""HTTP errors: one JSON shape, `{type, message, server, tool}`, and one seam mapping station errors.

`ApiError` is raised by handlers and the access guard; station errors are mapped to a status here,
most specific first; anything else is a 500 at the marked boundary in `app.py`.
"""

from __future__ import annotations

from starlette.responses import Response

from mcpstation.api.models import ErrorBody
from mcpstation.errors import (
    CallError,
    CallTimeout,
    ConfigError,
    RemoteError,
    ServerError,
    ServerUnavailable,
    StationError,
    StoreError,
    ToolNotFound,
    UsageError,
)


class ApiError(Exception):
    """An HTTP error with a JSON body; `type` names the kind for scripts to branch on."""

    def __init__(
        self, status: int, type: str, message: str, *, server: str | None = None, tool: str | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.server = server
        self.tool = tool

    def body(self) -> ErrorBody:
        return ErrorBody(type=self.type, message=self.message, server=self.server, tool=self.tool)


# Most specific first: the first class the error is an instance of decides the status.
_STATUS: tuple[tuple[type[StationError], int], ...] = (
    (ToolNotFound, 404),
    (CallTimeout, 504),
    (RemoteError, 502),
    (CallError, 502),
    (ServerUnavailable, 503),
    (ServerError, 503),
    (ConfigError, 400),
    (UsageError, 400),
    (StoreError, 500),
    (StationError, 500),
)


def from_station_error(exc: StationError) -> ApiError:
    """The `ApiError` for a station error, keeping its server and tool when it has them."""
    status = next(code for cls, code in _STATUS if isinstance(exc, cls))
    return ApiError(
        status,
        type(exc).__name__,
        str(exc),
        server=getattr(exc, "server", None),
        tool=getattr(exc, "tool", None),
    )


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "Unauthorized", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def not_found(message: str, *, server: str | None = None, tool: str | None = None) -> ApiError:
    return ApiError(404, "NotFound", message, server=server, tool=tool)


def error_response(exc: ApiError) -> Response:
    """The JSON response for `exc` (401s carry `WWW-Authenticate: Bearer`)."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.status == 401 else None
    return Response(
        exc.body().model_dump_json(), status_code=exc.status, media_type="application/json", headers=headers
    )
