"""The one seam where what the SDK raises on a request becomes a named station error.

Every exception class the SDK defines is either mapped (with the outcome it becomes) or listed
as never raised by a request, with the reason; a new SDK release that adds one fails here.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable

import anyio
import httpx2
import mcp
import mcp.client
import mcp.shared
import mcp_types as types
import pydantic
import pytest
from mcp.client import InputRequiredRoundsExceededError
from mcp.client.auth.exceptions import OAuthFlowError, OAuthRegistrationError, OAuthTokenError
from mcp.client.extension import UnexpectedClaimedResult
from mcp.client.streamable_http import ResumptionError, StreamableHTTPError
from mcp.shared.exceptions import MCPError, NoBackChannelError, UrlElicitationRequiredError

from mcpstation.connection._errors import MESSAGE_TOO_LARGE, translate_call_errors
from mcpstation.errors import CallError, ServerError
from mcpstation.outcomes import Outcome

_REQUEST = httpx2.Request("POST", "http://127.0.0.1:1/mcp")


def _validation_error() -> pydantic.ValidationError:
    try:
        types.CallToolResult.model_validate({"content": "not a list"})
    except pydantic.ValidationError as exc:
        return exc
    raise AssertionError("expected a validation error")


def _mcp(code: int, message: str = "m") -> MCPError:
    return MCPError(code=code, message=message)


# What a request can raise, and the outcome it must become.
RAISED: list[tuple[Callable[[], BaseException], Outcome]] = [
    (lambda: _mcp(types.REQUEST_TIMEOUT), Outcome.TIMEOUT),
    (lambda: _mcp(types.CONNECTION_CLOSED), Outcome.CONNECTION_LOST),
    (lambda: _mcp(types.INVALID_REQUEST, "Session not found"), Outcome.CONNECTION_LOST),
    (lambda: _mcp(types.INVALID_PARAMS), Outcome.REMOTE_ERROR),
    (lambda: _mcp(MESSAGE_TOO_LARGE, "message too large"), Outcome.TOO_LARGE),
    (lambda: NoBackChannelError("elicitation/create"), Outcome.REMOTE_ERROR),
    (lambda: UrlElicitationRequiredError([]), Outcome.REMOTE_ERROR),
    (lambda: TimeoutError(), Outcome.TIMEOUT),
    (lambda: httpx2.ConnectError("refused", request=_REQUEST), Outcome.CONNECTION_LOST),
    (lambda: httpx2.ReadTimeout("slow", request=_REQUEST), Outcome.CONNECTION_LOST),
    (
        lambda: httpx2.HTTPStatusError("boom", request=_REQUEST, response=httpx2.Response(500, request=_REQUEST)),
        Outcome.REMOTE_ERROR,
    ),
    (lambda: httpx2.DecodingError("garbled", request=_REQUEST), Outcome.INVALID_RESULT),
    (lambda: httpx2.TooManyRedirects("loop", request=_REQUEST), Outcome.REMOTE_ERROR),
    (lambda: StreamableHTTPError("stream broke"), Outcome.CONNECTION_LOST),
    (lambda: ResumptionError("cannot resume"), Outcome.CONNECTION_LOST),
    (lambda: OAuthFlowError("no token"), Outcome.UNAVAILABLE),
    (lambda: OAuthTokenError("refresh refused"), Outcome.UNAVAILABLE),
    (lambda: OAuthRegistrationError("no registration"), Outcome.UNAVAILABLE),
    (lambda: ConnectionResetError(), Outcome.CONNECTION_LOST),
    (lambda: anyio.BrokenResourceError(), Outcome.CONNECTION_LOST),
    (lambda: anyio.ClosedResourceError(), Outcome.CONNECTION_LOST),
    (_validation_error, Outcome.INVALID_RESULT),
    (lambda: UnexpectedClaimedResult(types.EmptyResult()), Outcome.INVALID_RESULT),
    (lambda: InputRequiredRoundsExceededError(10), Outcome.REMOTE_ERROR),
]

# SDK exception classes a client request never raises, and why.
NOT_RAISED_BY_REQUESTS: dict[str, str] = {
    "mcp.client.subscriptions.ListenNotSupportedError": "only `Client.listen` (the watch loop handles it)",
    "mcp.client.subscriptions.SubscriptionLost": "only `Client.listen` (the watch loop handles it)",
    "mcp.shared.auth.InvalidRedirectUriError": "validating OAuth client metadata, a server's job",
    "mcp.shared.auth.InvalidScopeError": "validating OAuth client metadata, a server's job",
    "mcp.shared.path_security.PathEscapeError": "server-side file resources",
    "mcp.shared.uri_template.InvalidUriTemplate": "parsing templates (the catalog handles it at listing)",
    "mcp.shared.exceptions.MCPDeprecationWarning": "a warning, not an error",
}


@pytest.mark.parametrize("make, outcome", RAISED, ids=lambda value: getattr(value, "name", None) or "")
def test_what_a_request_raises_becomes_a_named_station_error(make: Callable[[], BaseException], outcome: Outcome):
    raised = make()
    with pytest.raises((CallError, ServerError)) as caught:
        with translate_call_errors(server="s", tool="t", timeout_s=1.0):
            raise raised
    assert caught.value.outcome is outcome
    assert caught.value.__cause__ is raised
    assert "'s'" in str(caught.value)


def test_a_bare_runtime_error_is_not_called_an_invalid_result():
    with pytest.raises(RuntimeError, match="a bug"):
        with translate_call_errors(server="s", tool="t", timeout_s=1.0):
            raise RuntimeError("a bug")


def _sdk_exception_classes() -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for package in (mcp.client, mcp.shared):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == module.__name__:
                    found.add(value)
    return found


def test_every_exception_the_sdk_defines_is_mapped_or_known_not_to_come_from_requests():
    mapped = {type(make()) for make, _ in RAISED}
    for cls in _sdk_exception_classes():
        name = f"{cls.__module__}.{cls.__name__}"
        assert cls in mapped or name in NOT_RAISED_BY_REQUESTS, f"{name} is new in the SDK: map it in _errors.py"
