"""The one seam where SDK and transport exceptions become station errors."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcpstation.errors import CallTimeout, ConnectionLost, RemoteError, StationError


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


@contextmanager
def translate_call_errors(*, server: str, tool: str, timeout_s: float | None) -> Iterator[None]:
    """Map what the SDK raises from a request to `CallError`/`ServerError` subclasses."""
    try:
        yield
    except MCPError as exc:
        if exc.code == types.REQUEST_TIMEOUT:
            raise CallTimeout(
                f"{tool!r} on server {server!r} did not answer within {timeout_s} s; the request was cancelled",
                tool=tool,
                server=server,
            ) from exc
        if exc.code == types.CONNECTION_CLOSED or is_session_gone(exc):
            raise ConnectionLost(
                f"connection lost: server {server!r} went away while {tool!r} was running; the call was not retried",
                server=server,
            ) from exc
        raise RemoteError(
            f"server {server!r} answered {tool!r} with error {exc.code}: {exc.error.message}",
            tool=tool,
            server=server,
            code=exc.code,
        ) from exc
    except TimeoutError as exc:
        raise CallTimeout(
            f"{tool!r} on server {server!r} did not answer within {timeout_s} s", tool=tool, server=server
        ) from exc
    except (httpx2.TransportError, OSError, EOFError) as exc:
        raise ConnectionLost(
            f"connection lost: {tool!r} on server {server!r} failed in transport ({describe_failure(exc)})",
            server=server,
        ) from exc
    except RuntimeError as exc:
        # The SDK raises RuntimeError for structured content that violates the tool's outputSchema.
        raise RemoteError(
            f"server {server!r} sent an invalid result for {tool!r}: {exc}", tool=tool, server=server
        ) from exc
