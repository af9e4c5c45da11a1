"""The loopback redirect target of the authorization-code flow (RFC 8252 §7.3).

`LoopbackCallback` listens on `http://127.0.0.1:PORT/callback` only while an authorization is in
progress, shows the authorization URL through a `RedirectHandler`, and returns the `code`,
`state` and `iss` the browser brings back.
"""

from __future__ import annotations

import contextlib
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult

CALLBACK_PATH = "/callback"
LOOPBACK_HOST = "127.0.0.1"
AUTHORIZATION_TIMEOUT_S = 300.0  # time a person has to sign in once the authorization URL is shown
REDIRECT_GRACE_S = 5.0  # time the redirect handler gets to finish after the callback arrived
CALLBACK_READ_TIMEOUT_S = 10.0  # time a connection to the callback server gets to send its request head
MAX_REQUEST_HEAD_BYTES = 16 * 1024

RedirectHandler = Callable[[str], Awaitable[None]]
"""Shows (or follows) the authorization URL: print it, open a browser, hand it to a UI."""
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]
"""Returns the authorization response (code, state, iss) when it does not come to the loopback server."""


def loopback_redirect_uri(redirect_uris: object) -> str | None:
    """The first of a registered client's redirect URIs if it is our loopback callback."""
    if isinstance(redirect_uris, list) and redirect_uris:
        first = str(redirect_uris[0])
        if _is_loopback_callback(first):
            return first
    return None


def _is_loopback_callback(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and parts.hostname == LOOPBACK_HOST and parts.path == CALLBACK_PATH


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((LOOPBACK_HOST, 0))
        return int(probe.getsockname()[1])


async def print_authorization_url(url: str) -> None:
    """The headless default: show the URL on stderr for a person to open."""
    print(f"\nTo authorize mcpstation, open this URL in a browser:\n\n  {url}\n", file=sys.stderr, flush=True)


_DONE_PAGE = (
    b"<!doctype html><title>mcpstation</title>"
    b"<p>Authorization received. You can close this window and return to mcpstation.</p>"
)


class LoopbackCallback:
    """Receives the authorization response on `http://127.0.0.1:PORT/callback` (RFC 8252 §7.3).

    `authorize(url)` listens, shows `url` through the redirect handler, and returns once the
    browser comes back with `code` (or `error`), `state` and `iss`. The listener lives only while
    an authorization is in progress. Its two methods are the SDK's `redirect_handler` and
    `callback_handler` (`handle_redirect`, `handle_callback`).
    """

    def __init__(
        self,
        port: int = 0,
        *,
        show: RedirectHandler = print_authorization_url,
        timeout_s: float = AUTHORIZATION_TIMEOUT_S,
    ) -> None:
        self.port = port or _free_port()
        self.show = show
        self.timeout_s = timeout_s
        self._result: AuthorizationCodeResult | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://{LOOPBACK_HOST}:{self.port}{CALLBACK_PATH}"

    async def handle_redirect(self, authorization_url: str) -> None:
        self._result = await self.authorize(authorization_url)

    async def handle_callback(self) -> AuthorizationCodeResult:
        result, self._result = self._result, None
        if result is None:
            raise OAuthFlowError("no authorization response was received on the loopback callback")
        return result

    async def authorize(self, authorization_url: str) -> AuthorizationCodeResult:
        """Show `authorization_url` and wait for the redirect back.

        Raises:
            OAuthFlowError: the port is taken, the authorization server answered with an
                error, the redirect handler failed, or no answer came within `timeout_s`.
        """
        try:
            listener = await anyio.create_tcp_listener(local_host=LOOPBACK_HOST, local_port=self.port)
        except OSError as exc:
            raise OAuthFlowError(
                f"cannot listen for the OAuth redirect on {self.redirect_uri}: {exc}. "
                "Fix: free that port, or set another oauth.redirect_port for this server."
            ) from exc
        received = anyio.Event()
        shown = anyio.Event()
        outcome: dict[str, Any] = {}

        async def serve_one(stream: Any) -> None:
            async with stream:
                query = await _read_callback_query(stream)
                if query is None or not ({"code", "error"} & query.keys()) or "result" in outcome:
                    await _respond(stream, 404, b"Not found")
                    return
                await _respond(stream, 200, _DONE_PAGE)
                outcome["result"] = query
                received.set()

        async def show() -> None:
            try:
                await self.show(authorization_url)
            except Exception as exc:  # handed to the flow below as its error
                outcome["show_error"] = exc
                received.set()
            finally:
                shown.set()

        async with listener, anyio.create_task_group() as task_group:
            task_group.start_soon(listener.serve, serve_one, task_group)
            task_group.start_soon(show)
            with anyio.move_on_after(self.timeout_s):
                await received.wait()
            with anyio.move_on_after(REDIRECT_GRACE_S):
                await shown.wait()
            task_group.cancel_scope.cancel()

        if "show_error" in outcome and "result" not in outcome:
            error = outcome["show_error"]
            raise OAuthFlowError(f"showing the authorization URL failed: {error}") from error
        query = outcome.get("result")
        if query is None:
            raise OAuthFlowError(
                f"no authorization response on {self.redirect_uri} within {self.timeout_s:g} s; "
                "open the printed URL and finish signing in, then connect again"
            )
        if "error" in query:
            description = query.get("error_description")
            detail = f" ({description})" if description else ""
            raise OAuthFlowError(f"the authorization server refused: {query['error']}{detail}")
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))


async def _read_callback_query(stream: Any) -> dict[str, str] | None:
    """The query of a `GET /callback?...` request, or None for anything else."""
    head = b""
    with anyio.move_on_after(CALLBACK_READ_TIMEOUT_S):
        while b"\r\n\r\n" not in head and len(head) < MAX_REQUEST_HEAD_BYTES:
            try:
                head += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                break
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or parts[0] != "GET":
        return None
    target = urlsplit(parts[1])
    if target.path != CALLBACK_PATH:
        return None
    return {key: values[0] for key, values in parse_qs(target.query).items()}


async def _respond(stream: Any, status: int, body: bytes) -> None:
    reason = {200: "OK", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
    ).encode()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head + body)
