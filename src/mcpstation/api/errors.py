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
    StoreUnavailable,
    ToolNotFound,
    UpstreamIdentityError,
    UsageError,
)
from mcpstation.outcomes import Outcome

RETRY_AFTER_S = 5  # the `Retry-After` of a 503: about how often the station checks whether its store is back


class ApiError(Exception):
    """An HTTP error with a JSON body; `type` names the kind for scripts to branch on."""

    def __init__(
        self,
        status: int,
        type: str,
        message: str,
        *,
        server: str | None = None,
        tool: str | None = None,
        challenge: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.type = type
        self.message = message
        self.server = server
        self.tool = tool
        self.challenge = challenge  # the `WWW-Authenticate` value of a refusal (401, 403 for scope)

    def body(self) -> ErrorBody:
        return ErrorBody(type=self.type, message=self.message, server=self.server, tool=self.tool)


# Most specific first: the first class the error is an instance of decides the status.
_STATUS: tuple[tuple[type[StationError], int], ...] = (
    (ToolNotFound, 404),
    (CallTimeout, 504),
    (RemoteError, 502),
    (UpstreamIdentityError, 403),  # refused: the caller must sign in, or authorize the upstream
    (CallError, 502),
    (ServerUnavailable, 503),
    (ServerError, 503),
    (ConfigError, 400),
    (UsageError, 400),
    (StoreUnavailable, 503),
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


# Every outcome's HTTP status. A tool that ran and said it failed is still an answer (200, `ok: false`).
OUTCOME_STATUS: dict[Outcome, int] = {
    Outcome.OK: 200,
    Outcome.TOOL_ERROR: 200,
    Outcome.REFUSED: 403,
    Outcome.NOT_FOUND: 404,
    Outcome.UNAVAILABLE: 503,
    Outcome.TIMEOUT: 504,
    Outcome.CONNECTION_LOST: 502,
    Outcome.REMOTE_ERROR: 502,
    Outcome.TOO_LARGE: 502,
    Outcome.INVALID_RESULT: 502,
    Outcome.CANCELLED: 503,
    Outcome.STORE_DOWN: 503,
}

# The `type` of the error body for requests that produced no answer.
OUTCOME_TYPE: dict[Outcome, str] = {
    Outcome.OK: "Ok",
    Outcome.TOOL_ERROR: "ToolError",
    Outcome.REFUSED: "Refused",
    Outcome.NOT_FOUND: "ToolNotFound",
    Outcome.UNAVAILABLE: "ServerUnavailable",
    Outcome.TIMEOUT: "CallTimeout",
    Outcome.CONNECTION_LOST: "ConnectionLost",
    Outcome.REMOTE_ERROR: "RemoteError",
    Outcome.TOO_LARGE: "MessageTooLarge",
    Outcome.INVALID_RESULT: "InvalidResult",
    Outcome.CANCELLED: "Cancelled",
    Outcome.STORE_DOWN: "StoreUnavailable",
}


def status_for(outcome: Outcome) -> int:
    """The HTTP status of a request's answer with this outcome."""
    return OUTCOME_STATUS[outcome]


def outcome_error(outcome: Outcome, message: str, *, server: str | None = None, tool: str | None = None) -> ApiError:
    """The error for a prompt or resource request that produced no answer."""
    return ApiError(OUTCOME_STATUS[outcome], OUTCOME_TYPE[outcome], message, server=server, tool=tool)


def unauthorized(message: str, *, challenge: str | None = None) -> ApiError:
    return ApiError(401, "Unauthorized", message, challenge=challenge)


def forbidden(message: str, *, challenge: str | None = None) -> ApiError:
    return ApiError(403, "Forbidden", message, challenge=challenge)


def not_found(message: str, *, server: str | None = None, tool: str | None = None) -> ApiError:
    return ApiError(404, "NotFound", message, server=server, tool=tool)


def retry_headers(status: int) -> dict[str, str]:
    """`Retry-After` for a 503: what it waits on (a server starting, the store coming back) may be
    there in a moment; none for any other status."""
    return {"Retry-After": str(RETRY_AFTER_S)} if status == 503 else {}


def error_response(exc: ApiError) -> Response:
    """The JSON response for `exc` (401s carry `WWW-Authenticate`, `Bearer` unless it says more;
    503s carry `Retry-After`)."""
    challenge = exc.challenge or ("Bearer" if exc.status == 401 else None)
    headers = retry_headers(exc.status)
    if challenge is not None:
        headers["WWW-Authenticate"] = challenge
    return Response(
        exc.body().model_dump_json(), status_code=exc.status, media_type="application/json", headers=headers
    )
