"""A guarded fetch MCP server: `fetch` a URL as Markdown or text, never an internal address.

    python -m mcpstation.servers.fetch [--user-agent UA] [--ignore-robots-txt]
        [--allow-host HOST ...] [--allow-cidr CIDR ...] [--allow-internal] [--timeout SECONDS]

The tool matches mcp-server-fetch's `fetch` (`url`, `max_length`, `start_index`, `raw`) and closes
the two holes a guard in front of it leaves open:

- **DNS rebinding**: every hop is resolved once, every address checked by the URL guard, and
  the connection goes to a checked address (the URL's host replaced by the IP, the original
  `Host` header and TLS SNI kept), so no second lookup can answer differently.
- **Redirects to internal hosts**: redirects are followed here, one hop at a time (at most
  `MAX_REDIRECTS`), and each new URL passes the guard before anything connects to it.

A refusal is a tool result with `isError` set and a reason the LLM can act on; its structured
content is `{"success": false, "error": ...}`.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated
from urllib.parse import urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser

import httpx2
import mcp_types as types
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from mcpstation.policy.urls import AsyncResolver, Resolver, UrlGuard, UrlVerdict
from mcpstation.servers._html import html_to_markdown

logger = logging.getLogger(__name__)

# A browser UA: the bot UA of mcp-server-fetch gets challenge pages instead of content on many sites.
DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)
MAX_REDIRECTS = 10
DEFAULT_TIMEOUT_S = 30.0  # per request: connect, each read, each write
MAX_BODY_BYTES = 5 * 1024 * 1024  # a page longer than this is cut before conversion
MAX_ROBOTS_BYTES = 512 * 1024
DEFAULT_MAX_LENGTH = 5000
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
TOOL_DESCRIPTION = (
    "Fetches a URL from the internet and extracts its contents as markdown. Only public http(s) "
    "addresses can be fetched. Long pages are returned in parts: call again with start_index."
)


class FetchRefused(Exception):
    """The URL guard refused a URL (the one asked for, or a redirect target)."""

    def __init__(self, message: str, verdict: UrlVerdict) -> None:
        self.verdict = verdict
        super().__init__(message)


class FetchFailed(Exception):
    """The fetch ran but produced no usable page (HTTP error, robots.txt, network, too many redirects)."""


@dataclass(frozen=True)
class FetchSettings:
    """How the fetch server behaves; the guard's exceptions are the operator's."""

    user_agent: str = DEFAULT_USER_AGENT
    ignore_robots_txt: bool = False
    allowed_hosts: tuple[str, ...] = ()
    allowed_cidrs: tuple[str, ...] = ()
    block_internal: bool = True
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_redirects: int = MAX_REDIRECTS
    max_body_bytes: int = MAX_BODY_BYTES
    resolver: Resolver | AsyncResolver | None = None  # tests inject one; None is the system resolver

    def __post_init__(self) -> None:
        self.guard  # noqa: B018  (a bad CIDR fails here, at start-up, not per call)

    @property
    def guard(self) -> UrlGuard:
        return UrlGuard(
            allowed_hosts=self.allowed_hosts,
            allowed_cidrs=self.allowed_cidrs,
            block_internal=self.block_internal,
            resolver=self.resolver,
        )


@dataclass(frozen=True)
class Page:
    """One fetched document after redirects: final URL, status, content type and decoded text."""

    url: str
    status: int
    content_type: str
    text: str
    truncated: bool = False


def pinned_request(client: httpx2.AsyncClient, url: str, verdict: UrlVerdict, address: str) -> httpx2.Request:
    """A GET of `url` that connects to `address` (one the guard checked) and nowhere else.

    The URL's host becomes the IP; `Host` keeps the name, and for https the TLS SNI and
    certificate check use the name too (httpcore's `sni_hostname` extension).
    """
    assert verdict.host is not None and verdict.port is not None and verdict.scheme is not None
    parts = urlsplit(url)
    ip = ipaddress.ip_address(address)
    ip_host = f"[{ip}]" if ip.version == 6 else str(ip)
    default_port = {"http": 80, "https": 443}[verdict.scheme]
    port_suffix = "" if verdict.port == default_port else f":{verdict.port}"
    target = urlunsplit((verdict.scheme, f"{ip_host}:{verdict.port}", parts.path or "/", parts.query, ""))
    display_host = f"[{verdict.host}]" if ":" in verdict.host else verdict.host
    extensions: dict[str, object] = {}
    if verdict.scheme == "https" and not _is_ip(verdict.host):
        extensions["sni_hostname"] = verdict.host
    return client.build_request(
        "GET", target, headers={"Host": f"{display_host}{port_suffix}"}, extensions=extensions or None
    )


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def _get_once(
    client: httpx2.AsyncClient, url: str, verdict: UrlVerdict, limit: int
) -> tuple[httpx2.Response, bytes, bool]:
    """One request to the first checked address that accepts a connection; body read up to `limit`."""
    last_error: Exception | None = None
    for address in verdict.addresses:
        request = pinned_request(client, url, verdict, address)
        try:
            response = await client.send(request, stream=True)
        except httpx2.ConnectError as exc:
            last_error = exc
            continue
        except httpx2.HTTPError as exc:
            raise FetchFailed(f"failed to fetch {url}: {type(exc).__name__}: {exc}") from exc
        try:
            body = bytearray()
            truncated = False
            async for chunk in response.aiter_bytes():
                body.extend(chunk)
                if len(body) > limit:
                    del body[limit:]
                    truncated = True
                    break
        except httpx2.HTTPError as exc:
            raise FetchFailed(f"failed to read {url}: {type(exc).__name__}: {exc}") from exc
        finally:
            await response.aclose()
        return response, bytes(body), truncated
    raise FetchFailed(f"failed to connect to {url} ({', '.join(verdict.addresses)}): {last_error}")


async def get_guarded(
    url: str,
    settings: FetchSettings,
    *,
    client: httpx2.AsyncClient | None = None,
    limit: int | None = None,
    verdict: UrlVerdict | None = None,
) -> Page:
    """GET `url`, following redirects by hand; every hop passes the URL guard before it connects.

    `verdict` is an allowing verdict already obtained for `url`'s origin; it saves the first
    hop's lookup, so one fetch resolves each host once.

    Raises:
        FetchRefused: the URL or a redirect target is not allowed.
        FetchFailed: network error, too many redirects.
    """
    if client is None:
        async with _client(settings) as own:
            return await get_guarded(url, settings, client=own, limit=limit, verdict=verdict)
    guard = settings.guard
    current = url
    for hop in range(settings.max_redirects + 1):
        if hop > 0 or verdict is None or not verdict.allowed:
            verdict = await guard.check(current)
        if not verdict.allowed:
            if hop == 0:
                raise FetchRefused(verdict.refusal(), verdict)
            message = f"Refused to follow a redirect from {url!r} to {current!r}: {verdict.reason}."
            raise FetchRefused(message, verdict)
        response, body, truncated = await _get_once(client, current, verdict, limit or settings.max_body_bytes)
        location = response.headers.get("location")
        if response.status_code in REDIRECT_STATUSES and location:
            current = urljoin(current, location.strip())
            logger.debug("redirect %d to %s", response.status_code, current)
            continue
        text = body.decode(response.encoding or "utf-8", errors="replace")
        content_type = response.headers.get("content-type", "")
        return Page(url=current, status=response.status_code, content_type=content_type, text=text, truncated=truncated)
    raise FetchFailed(f"failed to fetch {url}: more than {settings.max_redirects} redirects")


def _client(settings: FetchSettings) -> httpx2.AsyncClient:
    # trust_env=False: a proxy from the environment would connect somewhere we did not check.
    return httpx2.AsyncClient(trust_env=False, follow_redirects=False, timeout=settings.timeout_s)


async def check_robots_txt(
    url: str, settings: FetchSettings, client: httpx2.AsyncClient, *, verdict: UrlVerdict | None = None
) -> None:
    """Refuse when the site's robots.txt disallows `url` for our user agent (as mcp-server-fetch does).

    `verdict` is an allowing verdict for `url` (same origin as robots.txt), reused for the first hop.

    Raises:
        FetchFailed: robots.txt disallows the URL, or answers 401/403.
        FetchRefused: robots.txt redirects somewhere the guard refuses.
    """
    parts = urlsplit(url)
    robots_url = urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))
    try:
        page = await get_guarded(robots_url, settings, client=client, limit=MAX_ROBOTS_BYTES, verdict=verdict)
    except FetchFailed as exc:
        raise FetchFailed(f"could not fetch {robots_url} to check permission; not fetching {url}: {exc}") from exc
    if page.status in {401, 403}:
        raise FetchFailed(
            f"{robots_url} answered {page.status}, so autonomous fetching of this site is assumed not allowed."
        )
    if 400 <= page.status < 500:
        return
    parser = RobotFileParser()
    parser.parse(page.text.splitlines())
    if not parser.can_fetch(settings.user_agent, url):
        raise FetchFailed(
            f"The site's robots.txt ({robots_url}) does not allow fetching {url}. "
            "Do not retry this page; the user can fetch it themselves, or try another source."
        )


def _is_html(page: Page) -> bool:
    return "text/html" in page.content_type.lower() or "<html" in page.text[:100].lower()


def page_content(page: Page, *, raw: bool) -> tuple[str, str]:
    """(prefix, content): Markdown for HTML unless `raw`, else the text as it came."""
    if _is_html(page) and not raw:
        return "", html_to_markdown(page.text, base_url=page.url)
    if raw or page.content_type.lower().startswith(("text/", "application/json", "application/xml")):
        return "", page.text
    kind = page.content_type or "unknown"
    prefix = f"Content type {kind} cannot be simplified to markdown, but here is the raw content:\n"
    return prefix, page.text


def paginate(content: str, *, start_index: int, max_length: int) -> str:
    """`content[start_index:start_index + max_length]`, with a note telling where the rest starts."""
    total = len(content)
    if start_index >= total:
        return "<error>No more content available.</error>"
    part = content[start_index : start_index + max_length]
    remaining = total - (start_index + len(part))
    if len(part) == max_length and remaining > 0:
        next_start = start_index + len(part)
        part += (
            f"\n\n<error>Content truncated. Call the fetch tool with a start_index of {next_start} "
            "to get more content.</error>"
        )
    return part


async def fetch(
    url: str,
    settings: FetchSettings,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    start_index: int = 0,
    raw: bool = False,
    client: httpx2.AsyncClient | None = None,
) -> str:
    """What the `fetch` tool returns for `url`: robots.txt checked, page fetched, converted, paged.

    Raises:
        FetchRefused: the URL guard refused the URL or a redirect.
        FetchFailed: robots.txt, HTTP status >= 400, network errors.
    """
    if client is None:
        async with _client(settings) as own:
            return await fetch(url, settings, max_length=max_length, start_index=start_index, raw=raw, client=own)
    verdict = await settings.guard.check(url)
    if not verdict.allowed:
        raise FetchRefused(verdict.refusal(), verdict)
    if not settings.ignore_robots_txt:
        await check_robots_txt(url, settings, client, verdict=verdict)
    page = await get_guarded(url, settings, client=client, verdict=verdict)
    if page.status >= 400:
        raise FetchFailed(f"failed to fetch {url}: status code {page.status}")
    prefix, content = page_content(page, raw=raw)
    return f"{prefix}Contents of {page.url}:\n{paginate(content, start_index=start_index, max_length=max_length)}"


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structured_content={"success": False, "error": message},
        is_error=True,
    )


def build_fetch_server(settings: FetchSettings, *, name: str = "fetch") -> MCPServer:
    """The `fetch` tool bound to `settings`, ready to run on any transport."""
    mcp = MCPServer(name, instructions="Fetch public web pages as Markdown.", log_level="WARNING")

    @mcp.tool(name="fetch", description=TOOL_DESCRIPTION)
    async def fetch_tool(
        url: Annotated[str, Field(description="URL to fetch")],
        max_length: Annotated[
            int, Field(default=DEFAULT_MAX_LENGTH, gt=0, lt=1_000_000, description="Maximum number of characters.")
        ] = DEFAULT_MAX_LENGTH,
        start_index: Annotated[
            int, Field(default=0, ge=0, description="Start output at this character index (for more of a page).")
        ] = 0,
        raw: Annotated[bool, Field(default=False, description="The page as it came, without Markdown.")] = False,
    ) -> types.CallToolResult:
        try:
            text = await fetch(url, settings, max_length=max_length, start_index=start_index, raw=raw)
        except (FetchRefused, FetchFailed) as exc:
            logger.info("fetch %s refused or failed: %s", url, exc)
            return _error_result(str(exc))
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return mcp


def _parse_args(argv: Sequence[str] | None) -> FetchSettings:
    parser = argparse.ArgumentParser(prog="python -m mcpstation.servers.fetch", description=__doc__.split("\n")[0])
    parser.add_argument("--user-agent", default=DEFAULT_USER_AGENT, help="User-Agent for pages and robots.txt.")
    parser.add_argument("--ignore-robots-txt", action="store_true", help="Fetch even where robots.txt disallows it.")
    parser.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="An internal host to allow.")
    parser.add_argument(
        "--allow-cidr", action="append", default=[], metavar="CIDR", help="An internal network to allow."
    )
    parser.add_argument("--allow-internal", action="store_true", help="Allow every internal address (no SSRF guard).")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="Seconds per request.")
    args = parser.parse_args(argv)
    try:
        return FetchSettings(
            user_agent=args.user_agent or DEFAULT_USER_AGENT,
            ignore_robots_txt=args.ignore_robots_txt,
            allowed_hosts=tuple(args.allow_host),
            allowed_cidrs=tuple(args.allow_cidr),
            block_internal=not args.allow_internal,
            timeout_s=args.timeout,
        )
    except ValueError as exc:
        parser.error(str(exc))


def main(argv: Sequence[str] | None = None) -> None:
    """Run the fetch server over stdio until stdin closes."""
    settings = _parse_args(argv)
    build_fetch_server(settings).run("stdio")


if __name__ == "__main__":
    main()
