"""The one seam where SDK and transport exceptions become station errors."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType

import anyio
import httpx2
import mcp_types as types
import pydantic
from mcp.client import ClientSession, InputRequiredRoundsExceededError
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.extension import UnexpectedClaimedResult
from mcp.client.streamable_http import StreamableHTTPError
from mcp.shared.exceptions import MCPError

from mcpstation.connection.limits import MESSAGE_TOO_LARGE, MESSAGE_UNREADABLE
from mcpstation.connection.operations import SubscriptionsNeedHandshakeEra
from mcpstation.errors import (
    CallError,
    CallTimeout,
    ConnectionLost,
    InvalidResult,
    MessageTooLarge,
    RemoteError,
    ServerError,
    ServerUnavailable,
    StationError,
)


def leaf_errors(exc: BaseException) -> list[BaseException]:
    """The innermost exceptions of a (nested) exception group, or the exception itself."""
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        for inner in exc.exceptions:
            leaves.extend(leaf_errors(inner))
        return leaves
    return [exc]


def describe_failure(exc: BaseException) -> str:
    """One line saying why a connection failed, most specific cause first."""
    leaves = leaf_errors(exc)
    messages = [_describe_leaf(leaf) for leaf in leaves]
    unique = list(dict.fromkeys(m for m in messages if m))
    return "; ".join(unique) or type(exc).__name__


def _describe_leaf(exc: BaseException) -> str:
    if isinstance(exc, StationError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}"
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED or is_session_gone(exc):
            return "the server closed the connection"
        return f"server error {exc.code}: {exc.error.message}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError | ConnectionRefusedError):
        return f"cannot connect: {exc}"
    if isinstance(exc, httpx2.TimeoutException):
        return f"HTTP timeout: {type(exc).__name__}"
    if isinstance(exc, OSError) and exc.errno == errno.ECONNREFUSED:
        return f"connection refused: {exc}"
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def is_session_gone(exc: MCPError) -> bool:
    """The server no longer knows our session (it restarted): only a new session helps."""
    message = exc.error.message.lower()
    return exc.code == types.INVALID_REQUEST and ("session not found" in message or "session terminated" in message)


def _raised_by(exc: BaseException, functions: frozenset[CodeType]) -> bool:
    """Whether `exc` was raised inside one of `functions` (its innermost frames are checked)."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in functions:
            return True
        tb = tb.tb_next
    return False


# Where the SDK checks a tool's structured output against its `outputSchema`: a RuntimeError from
# here means the server's answer broke its own contract. Any other RuntimeError is not ours to name.
_OUTPUT_VALIDATION: frozenset[CodeType] = frozenset(
    {ClientSession.validate_tool_result.__code__, ClientSession._output_schema_validator.__code__}
)


@contextmanager
def translate_call_errors(*, server: str, tool: str, timeout_s: float | None) -> Iterator[None]:
    """Map what the SDK and transports raise from a request to named `CallError`/`ServerError`s.

    Every exception a request can raise is named here (a test enumerates the SDK's and fails
    when it grows one this does not map); anything else is a programming error and propagates.
    """
    try:
        yield
    except MCPError as exc:
        raise _from_mcp_error(exc, server=server, tool=tool, timeout_s=timeout_s) from exc
    except TimeoutError as exc:
        raise CallTimeout(
            f"{tool!r} on server {server!r} did not answer within {timeout_s} s; the request was cancelled",
            tool=tool,
            server=server,
        ) from exc
    except (
        httpx2.TransportError,
        StreamableHTTPError,
        OSError,
        EOFError,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
    ) as exc:
        raise ConnectionLost(
            f"connection lost: {tool!r} on server {server!r} failed in transport ({describe_failure(exc)})",
            server=server,
        ) from exc
    except OAuthFlowError as exc:
        raise ServerUnavailable(
            f"server {server!r}: signing in failed while sending {tool!r}: {exc}; sign in again", server=server
        ) from exc
    except httpx2.HTTPStatusError as exc:
        raise RemoteError(
            f"server {server!r} answered {tool!r} with HTTP {exc.response.status_code}", tool=tool, server=server
        ) from exc
    except httpx2.DecodingError as exc:
        raise InvalidResult(
            f"server {server!r} sent an undecodable answer to {tool!r}", tool=tool, server=server
        ) from exc
    except httpx2.TooManyRedirects as exc:
        raise RemoteError(f"server {server!r} redirected {tool!r} too many times", tool=tool, server=server) from exc
    except pydantic.ValidationError as exc:
        raise InvalidResult(
            f"server {server!r} sent a result for {tool!r} that does not fit the protocol "
            f"({exc.error_count()} problems, first: {exc.errors()[0]['msg']})",
            tool=tool,
            server=server,
        ) from exc
    except UnexpectedClaimedResult as exc:
        raise InvalidResult(
            f"server {server!r} answered {tool!r} with an extension result the station did not ask for",
            tool=tool,
            server=server,
        ) from exc
    except SubscriptionsNeedHandshakeEra as exc:
        raise RemoteError(
            f"server {server!r} speaks 2026-07-28; resource subscriptions through the station need "
            f'a handshake-era session: set protocol = "legacy" for it',
            tool="resources/subscribe",
            server=server,
        ) from exc
    except InputRequiredRoundsExceededError as exc:
        raise RemoteError(
            f"server {server!r} kept asking for more input on {tool!r}; gave up: {exc}", tool=tool, server=server
        ) from exc
    except RuntimeError as exc:
        if not _raised_by(exc, _OUTPUT_VALIDATION):
            raise
        raise InvalidResult(
            f"server {server!r} sent an invalid result for {tool!r}: {exc}", tool=tool, server=server
        ) from exc


def _from_mcp_error(exc: MCPError, *, server: str, tool: str, timeout_s: float | None) -> CallError | ServerError:
    code = exc.code
    if code == types.REQUEST_TIMEOUT:
        return CallTimeout(
            f"{tool!r} on server {server!r} did not answer within {timeout_s} s; the request was cancelled",
            tool=tool,
            server=server,
        )
    if code == types.CONNECTION_CLOSED or is_session_gone(exc):
        return ConnectionLost(
            f"connection lost: server {server!r} went away while {tool!r} was running; the call was not retried",
            server=server,
        )
    if code == MESSAGE_TOO_LARGE:
        return MessageTooLarge(f"server {server!r}: {exc.error.message}", tool=tool, server=server)
    if code == MESSAGE_UNREADABLE:
        return InvalidResult(
            f"server {server!r} sent an unreadable answer to {tool!r}: {exc.error.message}", tool=tool, server=server
        )
    return RemoteError(
        f"server {server!r} answered {tool!r} with error {code}: {exc.error.message}",
        tool=tool,
        server=server,
        code=code,
    )
