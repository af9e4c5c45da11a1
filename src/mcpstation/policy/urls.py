"""The URL guard: may the station touch this URL on an agent's behalf?

One validator for every URL an agent can steer: URL arguments of fetch-like tools, URLs of
servers added at run time, OAuth metadata URLs. It parses the URL the way a client would reach
it, normalises odd host spellings (`127.1`, `2130706433`, `0x7f.1`, `0177.0.0.1`, Unicode digits,
trailing dots), refuses `localhost` by name, resolves every other name and checks *every* address
against `addresses.blocked_reason`. A name that does not resolve is refused (fail closed).

The verdict lists the addresses it checked, so a caller that connects (the guarded fetch server)
connects to one of those and never asks DNS a second time.

The guard's steps, in order: parse, normalise, resolve, judge each address.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import unicodedata
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import SplitResult, urlsplit

import anyio
import idna

from mcpstation.config.models import PolicySettings
from mcpstation.policy.addresses import IPAddress, IPNetwork, blocked_reason, in_networks

Purpose = Literal["fetch", "server"]
Resolver = Callable[[str], Sequence[str]]
"""Host name → its IP addresses as strings; raise `OSError` (or return nothing) when it does not resolve."""
AsyncResolver = Callable[[str], Awaitable[Sequence[str]]]

SCHEMES: Mapping[Purpose, frozenset[str]] = {
    "fetch": frozenset({"http", "https"}),
    "server": frozenset({"http", "https", "ws", "wss"}),
}
DEFAULT_PORTS: Mapping[str, int] = {"http": 80, "https": 443, "ws": 80, "wss": 443}
MAX_URL_CHARS = 8192  # longer "URLs" are refused rather than parsed
LOCALHOST_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"})
URL_ARGUMENT_NAMES = frozenset({"url", "uri", "href", "link", "endpoint", "address"})  # always judged
MAX_JUDGED_VALUES = 256  # strings looked at per request; a request with more URLs is refused, not half-checked
_LOOKS_LIKE_URL = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")

_IPV4_PART = re.compile(r"^(0[xX][0-9a-fA-F]*|[0-9]+)$")
_FORBIDDEN_IN_URL = re.compile(r"[\x00-\x20\x7f\\]")
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})


@dataclass(frozen=True)
class UrlVerdict:
    """The guard's answer for one URL.

    `addresses` are the IP addresses the host resolved to (or the literal address), all
    checked; a caller that connects must use one of them. `host` is the normalised host (ASCII,
    no trailing dot) and `port` the effective port; both are None when the URL did not parse.
    """

    url: str
    allowed: bool
    reason: str
    addresses: tuple[str, ...] = ()
    host: str | None = field(default=None, compare=False)
    port: int | None = field(default=None, compare=False)
    scheme: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `mcpstation policy url --json`."""
        return {"url": self.url, "allowed": self.allowed, "reason": self.reason, "addresses": list(self.addresses)}

    def refusal(self) -> str:
        """A message an LLM can act on when this verdict refuses."""
        return (
            f"Refused to fetch {self.url!r}: {self.reason}. "
            "Only public http(s) addresses may be fetched; try a different, public URL."
        )


@dataclass(frozen=True)
class _Parsed:
    scheme: str
    host: str  # ASCII name without trailing dot, or the canonical IP literal
    port: int
    literal: IPAddress | None


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        self.reason = reason


def _parse_url(url: str, purpose: Purpose) -> _Parsed:
    if len(url) > MAX_URL_CHARS:
        raise _Refused(f"URL is longer than {MAX_URL_CHARS} characters")
    if _FORBIDDEN_IN_URL.search(url):
        raise _Refused("URL contains whitespace, control characters or a backslash")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise _Refused(f"URL does not parse: {exc}") from None
    scheme = parts.scheme.lower()
    allowed = SCHEMES[purpose]
    if scheme not in allowed:
        shown = f"scheme {scheme!r}" if scheme else "no scheme"
        raise _Refused(f"{shown} is not allowed; use {' or '.join(sorted(allowed))}")
    netloc = parts.netloc
    if not netloc:
        raise _Refused("URL has no host")
    if netloc.count("@") > 1:
        # `user@127.0.0.1@example.com`: parsers disagree on which '@' ends the user info.
        raise _Refused("URL has more than one '@' in its authority; its host is ambiguous")
    host, literal = _normalise_host(_raw_host(parts))
    return _Parsed(scheme=scheme, host=host, port=_port(parts, scheme), literal=literal)


def _raw_host(parts: SplitResult) -> str:
    hostport = parts.netloc.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise _Refused("URL has an unterminated IPv6 literal")
        return hostport[: end + 1]
    return hostport.rpartition(":")[0] if ":" in hostport else hostport


def _port(parts: SplitResult, scheme: str) -> int:
    try:
        port = parts.port
    except ValueError:
        raise _Refused("URL has an invalid port") from None
    return DEFAULT_PORTS[scheme] if port is None else port


def _normalise_host(raw: str) -> tuple[str, IPAddress | None]:
    """The host as a client would reach it: (ASCII name or canonical IP, the IP if it is one)."""
    if raw.startswith("["):
        inner = raw[1:-1]
        if "%" in inner:
            raise _Refused("scoped IPv6 addresses (with a zone id) are not allowed")
        try:
            v6 = ipaddress.IPv6Address(inner)
        except ValueError:
            raise _Refused(f"{raw!r} is not a valid IPv6 address") from None
        return str(v6), v6
    if not raw:
        raise _Refused("URL has no host")
    try:
        mapped = idna.uts46_remap(unicodedata.normalize("NFKC", raw).translate(_DOTS), std3_rules=False)
    except idna.IDNAError as exc:
        raise _Refused(f"host {raw!r} is not a valid name: {exc}") from None
    host = mapped.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host or host.startswith(".") or ".." in host:
        raise _Refused(f"host {raw!r} has empty labels")
    address = _parse_ipv4(host)
    if address is not None:
        return str(address), address
    if host.isascii():
        return host, None
    try:
        return idna.encode(host, uts46=True).decode("ascii"), None
    except idna.IDNAError as exc:
        raise _Refused(f"host {raw!r} is not a valid name: {exc}") from None


def _parse_ipv4(host: str) -> ipaddress.IPv4Address | None:
    """Parse `host` like inet_aton and the WHATWG URL standard do: 1–4 parts, decimal, octal or hex.

    Returns None for a name. A host whose last label is numeric but that is no valid address
    (`1.2.3.4.5`, `999.1`) is refused: clients either reject it or read it some other way.
    """
    labels = host.split(".")
    last = labels[-1]
    if not (last.isascii() and _IPV4_PART.match(last)):
        return None
    if len(labels) > 4 or not all(label.isascii() and _IPV4_PART.match(label) for label in labels):
        raise _Refused(f"host {host!r} looks like an IP address but is not a valid one")
    numbers = [_ipv4_number(label) for label in labels]
    *head, tail = numbers
    if any(n > 255 for n in head) or tail >= 256 ** (5 - len(numbers)):
        raise _Refused(f"host {host!r} looks like an IP address but is out of range")
    value = tail
    for index, number in enumerate(head):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


def _ipv4_number(label: str) -> int:
    if label[:2].lower() == "0x":
        return int(label[2:] or "0", 16)
    if len(label) > 1 and label.startswith("0"):
        if any(ch not in "01234567" for ch in label):
            raise _Refused(f"{label!r} is not a valid octal number")
        return int(label, 8)
    return int(label, 10)


def _is_localhost(host: str) -> bool:
    return host in LOCALHOST_NAMES or host.endswith(".localhost")


def _allowed_networks(allowed_cidrs: Iterable[str]) -> list[IPNetwork]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in allowed_cidrs]


def _host_allowed(parsed: _Parsed, allowed_hosts: Iterable[str]) -> bool:
    for entry in allowed_hosts:
        name = entry.strip().lower().rstrip(".").strip("[]")
        try:
            if parsed.literal is not None and ipaddress.ip_address(name) == parsed.literal:
                return True
        except ValueError:
            pass
        if name == parsed.host:
            return True
    return False


def _judge(
    url: str,
    parsed: _Parsed,
    addresses: Sequence[str],
    *,
    host_allowed: bool,
    networks: Sequence[IPNetwork],
    block_internal: bool,
) -> UrlVerdict:
    def verdict(allowed: bool, reason: str, checked: Sequence[str] = ()) -> UrlVerdict:
        return UrlVerdict(url, allowed, reason, tuple(checked), parsed.host, parsed.port, parsed.scheme)

    if not addresses:
        return verdict(False, f"host {parsed.host!r} does not resolve")
    checked: list[str] = []
    for text in dict.fromkeys(addresses):
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            return verdict(False, f"host {parsed.host!r} resolved to an unusable address {text!r}", checked)
        checked.append(str(address))
    if host_allowed:
        return verdict(True, f"host {parsed.host!r} is explicitly allowed", checked)
    if not block_internal:
        return verdict(True, "internal addresses are not blocked by this deployment", checked)
    for text in checked:
        address = ipaddress.ip_address(text)
        reason = blocked_reason(address)
        if reason is not None and not in_networks(address, networks):
            where = f"host {parsed.host!r} resolves to {text}" if parsed.literal is None else f"address {text}"
            return verdict(False, f"{where}, which is {reason}", checked)
    if any(blocked_reason(ipaddress.ip_address(text)) is not None for text in checked):
        return verdict(True, "internal address in an explicitly allowed network", checked)
    return verdict(True, "public address", checked)


def _precheck(
    url: str, purpose: Purpose, allowed_hosts: Collection[str]
) -> tuple[_Parsed | None, UrlVerdict | None, bool]:
    """Parse and apply the checks that need no DNS: (parsed, early verdict, host explicitly allowed)."""
    try:
        parsed = _parse_url(url, purpose)
    except _Refused as refused:
        return None, UrlVerdict(url, False, refused.reason), False
    host_allowed = _host_allowed(parsed, allowed_hosts)
    if parsed.literal is None and _is_localhost(parsed.host) and not host_allowed:
        reason = f"host {parsed.host!r} is the local machine (localhost names are never fetched)"
        return parsed, UrlVerdict(url, False, reason, (), parsed.host, parsed.port, parsed.scheme), False
    return parsed, None, host_allowed


@dataclass(frozen=True)
class _Check:
    """A URL past the syntax and scheme checks, waiting only for its addresses to be judged."""

    url: str
    parsed: _Parsed
    host_allowed: bool
    networks: list[IPNetwork]
    block_internal: bool

    @classmethod
    def start(
        cls,
        url: str,
        purpose: Purpose,
        allowed_hosts: Collection[str],
        allowed_cidrs: Collection[str],
        block_internal: bool,
    ) -> _Check | UrlVerdict:
        """The early verdict (a bad URL, a refused scheme or host), or what is left to check."""
        networks = _allowed_networks(allowed_cidrs)
        parsed, early, host_allowed = _precheck(url, purpose, allowed_hosts)
        if early is not None or parsed is None:
            assert early is not None
            return early
        return cls(url, parsed, host_allowed, networks, block_internal)

    @property
    def literal(self) -> list[str]:
        """The address itself when the host is an IP literal (no lookup needed), else empty."""
        return [self.parsed.host] if self.parsed.literal is not None else []

    def judge(self, addresses: Sequence[str]) -> UrlVerdict:
        return _judge(
            self.url,
            self.parsed,
            addresses,
            host_allowed=self.host_allowed,
            networks=self.networks,
            block_internal=self.block_internal,
        )


def check_url(
    url: str,
    *,
    purpose: Purpose = "fetch",
    resolver: Resolver | None = None,
    allowed_hosts: Collection[str] = (),
    allowed_cidrs: Collection[str] = (),
    block_internal: bool = True,
) -> UrlVerdict:
    """Judge `url`, resolving its host with `resolver` (the system resolver by default; this blocks).

    `purpose="server"` also admits `ws` and `wss`. `allowed_hosts` (names or IP literals) and
    `allowed_cidrs` are the deployment's explicit exceptions; `block_internal=False` is the
    all-or-nothing form (scheme and syntax are still checked). Never raises for a bad URL.

    Raises:
        ValueError: an entry of `allowed_cidrs` is not a network.
    """
    check = _Check.start(url, purpose, allowed_hosts, allowed_cidrs, block_internal)
    if isinstance(check, UrlVerdict):
        return check
    try:
        addresses = check.literal or list((resolver or system_resolver)(check.parsed.host))
    except (OSError, UnicodeError):
        addresses = []
    return check.judge(addresses)


async def check_url_async(
    url: str,
    *,
    purpose: Purpose = "fetch",
    resolver: Resolver | AsyncResolver | None = None,
    allowed_hosts: Collection[str] = (),
    allowed_cidrs: Collection[str] = (),
    block_internal: bool = True,
) -> UrlVerdict:
    """`check_url` without blocking the event loop: names resolve through `anyio.getaddrinfo`.

    `resolver` may be a plain or an async callable.

    Raises:
        ValueError: an entry of `allowed_cidrs` is not a network.
    """
    check = _Check.start(url, purpose, allowed_hosts, allowed_cidrs, block_internal)
    if isinstance(check, UrlVerdict):
        return check
    try:
        addresses = check.literal
        if not addresses:
            answer = (resolver or async_system_resolver)(check.parsed.host)
            addresses = list(await answer if isinstance(answer, Awaitable) else answer)
    except (OSError, UnicodeError):
        addresses = []
    return check.judge(addresses)


def system_resolver(host: str) -> list[str]:
    """Every address the system resolver gives for `host` (blocking)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def async_system_resolver(host: str) -> list[str]:
    """Every address the system resolver gives for `host`, off the event loop."""
    infos = await anyio.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def url_arguments(arguments: Mapping[str, Any], *, extra: Iterable[str] = ()) -> list[str]:
    """The strings among a request's arguments (nested ones too) that must pass the guard.

    Values under a URL-ish key (`url`, `uri`, `href`, ...) always count, whatever they look like;
    any other string counts when it is an absolute URL (`scheme://...`). `extra` (a resource URI,
    completion values) is judged by the same rule.
    """
    found: list[str] = []

    def visit(value: Any, key: str | None, depth: int) -> None:
        if isinstance(value, str):
            if (key is not None and key.lower() in URL_ARGUMENT_NAMES) or _LOOKS_LIKE_URL.match(value):
                found.append(value)
        elif depth < 8 and isinstance(value, Mapping):
            for inner_key, inner in value.items():
                visit(inner, str(inner_key), depth + 1)
        elif depth < 8 and isinstance(value, list | tuple):
            for inner in value:
                visit(inner, key, depth + 1)

    visit(arguments, None, 0)
    for value in extra:
        visit(value, None, 0)
    return found


@dataclass(frozen=True)
class UrlGuard:
    """The guard with one deployment's settings bound: exceptions, resolver, on or off."""

    allowed_hosts: tuple[str, ...] = ()
    allowed_cidrs: tuple[str, ...] = ()
    block_internal: bool = True
    resolver: Resolver | AsyncResolver | None = None

    def __post_init__(self) -> None:
        _allowed_networks(self.allowed_cidrs)  # a bad CIDR fails here, once, not per URL

    @classmethod
    def from_policy(cls, policy: PolicySettings, *, resolver: Resolver | AsyncResolver | None = None) -> UrlGuard:
        """The guard a `[policy]` table describes."""
        return cls(
            allowed_hosts=policy.allowed_internal_hosts,
            allowed_cidrs=policy.allowed_internal_cidrs,
            block_internal=policy.fetch_block_internal,
            resolver=resolver,
        )

    async def check(self, url: str, *, purpose: Purpose = "fetch") -> UrlVerdict:
        """Judge one URL (see `check_url_async`)."""
        return await check_url_async(
            url,
            purpose=purpose,
            resolver=self.resolver,
            allowed_hosts=self.allowed_hosts,
            allowed_cidrs=self.allowed_cidrs,
            block_internal=self.block_internal,
        )

    async def check_arguments(self, arguments: Mapping[str, Any], *, extra: Iterable[str] = ()) -> UrlVerdict | None:
        """The first refusing verdict among a request's URL arguments (see `url_arguments`), or None."""
        urls = url_arguments(arguments, extra=extra)
        if len(urls) > MAX_JUDGED_VALUES:
            return UrlVerdict(
                url=urls[0], allowed=False, reason=f"{len(urls)} URLs in one request; at most {MAX_JUDGED_VALUES}"
            )
        for url in urls:
            verdict = await self.check(url)
            if not verdict.allowed:
                return verdict
        return None
