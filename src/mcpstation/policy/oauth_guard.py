"""The URL guard on the OAuth flow of a server added at run time.

The SDK's OAuth provider learns where to send requests from the server's own answers: the
protected-resource metadata names the authorization server, whose metadata names the
registration and token endpoints. A server an agent added (perhaps prompt-injected into adding
it) could point those at `http://169.254.169.254/...` or an internal host, and the station would
fetch them. `oauth_request_guard` judges every request the transport's HTTP client sends to a host
other than the server's own origin, before it is sent; the server's origin itself was judged when
the server was added and is judged again at every connect.

The guard resolves the name and httpx2 resolves it again to connect, so a name whose answers
change between the two (DNS rebinding) is not covered; literal addresses are.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx2

from mcpstation.errors import ServerStartError
from mcpstation.policy.urls import DEFAULT_PORTS, UrlGuard

RequestGuard = Callable[[httpx2.Request], Awaitable[None]]


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    scheme = url.scheme.lower()
    return scheme, url.host.lower(), url.port if url.port is not None else DEFAULT_PORTS.get(scheme)


def oauth_request_guard(server_url: str, guard: UrlGuard, *, server: str | None = None) -> RequestGuard:
    """A request hook (`TransportContext.request_guard`) for the HTTP client of the server at `server_url`.

    Requests to the server's own origin pass; every other one must pass `guard` as a fetch
    (internal addresses refused unless the deployment allows them). `server` is the config key
    named in the error (default: the URL).

    Raises (from the hook):
        ServerStartError: the request goes elsewhere and the guard refuses its URL; nothing was sent.
    """
    own = _origin(httpx2.URL(server_url))
    name = server if server is not None else server_url

    async def check_request(request: httpx2.Request) -> None:
        if _origin(request.url) == own:
            return
        shown = str(request.url.copy_with(query=None, fragment=None))
        verdict = await guard.check(shown, purpose="fetch")
        if verdict.allowed:
            return
        raise ServerStartError(
            f"server {name!r}: refused to send an OAuth request to {shown!r}: {verdict.reason}.\n"
            f"  The server at {server_url} pointed its authorization flow there; a server added at run time "
            "may only send it to public addresses.\n"
            "  Fix: if that host is yours and trusted, add it to [policy] allowed_internal_hosts; "
            "otherwise remove the server.",
            server=name,
        )

    return check_request
