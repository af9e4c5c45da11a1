"""The URL guard over a broad table of URLs; DNS only through the resolver seam."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from mcpstation.policy import UrlGuard, blocked_reason, check_url, check_url_async, embedded_ipv4
from mcpstation.policy.addresses import BLOCKED_NETWORKS
from mcpstation.policy.urls import MAX_JUDGED_VALUES

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"


class FakeDns:
    """A resolver seam: a fixed table, counting lookups; unknown names do not resolve."""

    def __init__(self, table: dict[str, Sequence[str]] | None = None) -> None:
        self.table = {"example.com": [PUBLIC_V4], "v6.example.com": [PUBLIC_V6], **(table or {})}
        self.lookups: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.lookups.append(host)
        if host not in self.table:
            raise OSError(f"no such host {host}")
        return self.table[host]


BLOCKED = [
    # every blocked range, by literal
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://10.1.2.3/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.255/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.100.100.200/", "Alibaba"),
    ("http://127.0.0.1/", "loopback"),
    ("http://127.255.255.254:8080/", "loopback"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://169.254.1.1/", "link-local"),
    ("http://192.0.0.8/", "reserved"),
    ("http://192.0.2.1/", "documentation"),
    ("http://198.51.100.1/", "documentation"),
    ("http://203.0.113.9/", "documentation"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://[::]/", "unspecified"),
    ("http://[::1]/", "loopback"),
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fd12:3456::1]/", "unique-local"),
    ("http://[fd00:ec2::254]/", "AWS"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[100::1]/", "discard"),
    ("http://[64:ff9b:1::1]/", "NAT64"),
    # IPv4 embedded in IPv6, judged by the embedded address
    ("http://[::ffff:127.0.0.1]/", "embedding 127.0.0.1: loopback"),
    ("http://[::ffff:7f00:1]/", "embedding 127.0.0.1"),
    ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
    ("http://[64:ff9b::a9fe:a9fe]/", "NAT64 address embedding 169.254.169.254"),
    ("http://[64:ff9b::10.0.0.1]/", "NAT64 address embedding 10.0.0.1"),
    ("http://[2002:7f00:1::]/", "6to4 address embedding 127.0.0.1"),
    ("http://[2002:a9fe:a9fe::1]/", "6to4 address embedding 169.254.169.254"),
    ("http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "Teredo address embedding 127.0.0.1"),
    ("http://[::127.0.0.1]/", "IPv4-compatible"),
    # odd spellings, judged by the address they reach
    ("http://127.1/", "loopback"),
    ("http://127.0.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://0x7F.0x0.0x0.0x1/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://0251.0376.0251.0376/", "cloud metadata"),
    ("http://2852039166/", "cloud metadata"),
    ("http://①②⑦.0.0.1/", "loopback"),
    ("http://１２７.０.０.１/", "loopback"),
    ("http://127。0。0。1/", "loopback"),
    ("http://127.0.0.1./", "loopback"),
    ("HTTP://127.0.0.1/", "loopback"),
    ("http://user:pw@127.0.0.1/", "loopback"),
    ("http://example.com@127.0.0.1/", "loopback"),
    # names
    ("http://localhost/", "local machine"),
    ("http://localhost./", "local machine"),
    ("http://LOCALHOST:8080/", "local machine"),
    ("http://a.localhost/", "local machine"),
    ("http://a.b.localhost./", "local machine"),
    ("http://localhost.localdomain/", "local machine"),
    ("http://internal.test/", "resolves to 10.0.0.5, which is private"),
    ("http://rebind.test/", "resolves to 127.0.0.1"),
    ("http://nowhere.invalid/", "does not resolve"),
    ("http://empty.test/", "does not resolve"),
    # syntax
    ("http://user@127.0.0.1@example.com/", "more than one '@'"),
    ("http://example.com\\@127.0.0.1/", "backslash"),
    ("http://exa mple.com/", "whitespace"),
    ("http://[fe80::1%25eth0]/", "zone id"),
    ("http://1.2.3.4.5/", "not a valid one"),
    ("http://256.1.1.1/", "out of range"),
    ("http://1.2.3.0x100/", "out of range"),
    ("http://08.1.1.1/", "octal"),
    ("http://example.com:99999/", "invalid port"),
    ("http:///path", "no host"),
    ("http://[::1/", "IPv6"),
    # schemes
    ("ftp://example.com/", "scheme 'ftp'"),
    ("file:///etc/passwd", "scheme 'file'"),
    ("gopher://example.com/", "scheme 'gopher'"),
    ("ws://example.com/", "scheme 'ws'"),
    ("javascript:alert(1)", "scheme 'javascript'"),
    ("example.com/page", "no scheme"),
    ("data:text/html,hi", "scheme 'data'"),
]

DNS = {
    "internal.test": ["10.0.0.5"],
    "rebind.test": [PUBLIC_V4, "127.0.0.1"],  # a public answer first, loopback second: any hit refuses
    "empty.test": [],
}


@pytest.mark.parametrize(("url", "expected"), BLOCKED)
def test_url_is_refused_with_a_reason(url: str, expected: str) -> None:
    verdict = check_url(url, resolver=FakeDns(DNS))
    assert not verdict.allowed
    assert expected.lower() in verdict.reason.lower()


ALLOWED = [
    ("http://example.com/", [PUBLIC_V4]),
    ("https://example.com/path?q=1#frag", [PUBLIC_V4]),
    ("https://EXAMPLE.COM.:8443/", [PUBLIC_V4]),
    ("http://user:pw@example.com/", [PUBLIC_V4]),
    ("https://v6.example.com/", [PUBLIC_V6]),
    ("http://8.8.8.8/", ["8.8.8.8"]),
    ("http://134744072/", ["8.8.8.8"]),
    ("http://[2606:4700:4700::1111]/", ["2606:4700:4700::1111"]),
    ("http://[::ffff:8.8.8.8]/", ["::ffff:808:808"]),
    ("http://[64:ff9b::8.8.8.8]/", ["64:ff9b::808:808"]),
    ("http://bücher.example/", [PUBLIC_V4]),
]


@pytest.mark.parametrize(("url", "addresses"), ALLOWED)
def test_public_url_is_allowed_with_its_addresses(url: str, addresses: list[str]) -> None:
    dns = FakeDns({"xn--bcher-kva.example": [PUBLIC_V4]})
    verdict = check_url(url, resolver=dns)
    assert verdict.allowed, verdict.reason
    assert list(verdict.addresses) == addresses


def test_localhost_is_refused_without_asking_dns() -> None:
    dns = FakeDns({"localhost": [PUBLIC_V4], "a.localhost": [PUBLIC_V4]})
    assert not check_url("http://a.localhost/", resolver=dns).allowed
    assert not check_url("http://localhost/", resolver=dns).allowed
    assert dns.lookups == []


def test_literal_addresses_are_never_resolved() -> None:
    dns = FakeDns()
    check_url("http://127.1/", resolver=dns)
    check_url("http://8.8.8.8/", resolver=dns)
    assert dns.lookups == []


def test_names_are_resolved_after_idna_and_trailing_dot_normalisation() -> None:
    dns = FakeDns({"xn--bcher-kva.example": [PUBLIC_V4]})
    check_url("http://BÜCHER.example./", resolver=dns)
    assert dns.lookups == ["xn--bcher-kva.example"]


def test_every_resolved_address_is_checked() -> None:
    dns = FakeDns({"multi.test": [PUBLIC_V4, "8.8.8.8", "169.254.169.254"]})
    verdict = check_url("http://multi.test/", resolver=dns)
    assert not verdict.allowed
    assert "169.254.169.254" in verdict.reason
    assert verdict.addresses == (PUBLIC_V4, "8.8.8.8", "169.254.169.254")


def test_server_purpose_also_admits_websockets() -> None:
    dns = FakeDns()
    assert check_url("wss://example.com/ws", purpose="server", resolver=dns).allowed
    assert check_url("ws://example.com/ws", purpose="server", resolver=dns).allowed
    assert not check_url("ws://example.com/ws", purpose="fetch", resolver=dns).allowed
    assert not check_url("ws://127.0.0.1/ws", purpose="server", resolver=dns).allowed
    assert not check_url("ftp://example.com/", purpose="server", resolver=dns).allowed


def test_allowed_hosts_and_cidrs_are_explicit_exceptions() -> None:
    dns = FakeDns({"wiki.corp": ["10.1.2.3"], "other.corp": ["10.9.9.9"]})
    assert check_url("http://127.0.0.1:8000/", allowed_hosts=["127.0.0.1"], resolver=dns).allowed
    assert check_url("http://127.1:8000/", allowed_hosts=["127.0.0.1"], resolver=dns).allowed
    assert not check_url("http://127.0.0.2/", allowed_hosts=["127.0.0.1"], resolver=dns).allowed
    assert not check_url("http://localhost/", allowed_hosts=["127.0.0.1"], resolver=dns).allowed
    assert check_url("http://WIKI.corp./", allowed_hosts=["wiki.corp"], resolver=dns).allowed
    assert not check_url("http://other.corp/", allowed_hosts=["wiki.corp"], resolver=dns).allowed
    assert check_url("http://other.corp/", allowed_cidrs=["10.0.0.0/8"], resolver=dns).allowed
    assert check_url("http://[::ffff:10.0.0.1]/", allowed_cidrs=["10.0.0.0/8"], resolver=dns).allowed
    assert not check_url("http://169.254.169.254/", allowed_cidrs=["10.0.0.0/8"], resolver=dns).allowed


def test_block_internal_off_allows_internal_addresses_but_still_checks_scheme() -> None:
    dns = FakeDns()
    assert check_url("http://169.254.169.254/", block_internal=False, resolver=dns).allowed
    assert not check_url("file:///etc/passwd", block_internal=False, resolver=dns).allowed


def test_bad_allowed_cidr_raises() -> None:
    with pytest.raises(ValueError):
        check_url("http://example.com/", allowed_cidrs=["not-a-cidr"], resolver=FakeDns())
    with pytest.raises(ValueError):
        UrlGuard(allowed_cidrs=("10.0.0.0/33",))


def test_verdict_json_shape_and_refusal_message() -> None:
    verdict = check_url("http://169.254.169.254/", resolver=FakeDns())
    assert verdict.to_dict() == {
        "url": "http://169.254.169.254/",
        "allowed": False,
        "reason": "address 169.254.169.254, which is cloud metadata service",
        "addresses": ["169.254.169.254"],
    }
    assert "try a different, public URL" in verdict.refusal()


@pytest.mark.anyio
async def test_async_check_accepts_sync_and_async_resolvers() -> None:
    async def async_dns(host: str) -> list[str]:
        return {"example.com": [PUBLIC_V4]}.get(host, [])

    assert (await check_url_async("http://example.com/", resolver=async_dns)).allowed
    assert (await check_url_async("http://example.com/", resolver=FakeDns())).allowed
    assert not (await check_url_async("http://nowhere.test/", resolver=async_dns)).allowed
    assert not (await check_url_async("http://127.1/", resolver=async_dns)).allowed


@pytest.mark.anyio
async def test_guard_checks_url_and_uri_arguments_and_every_absolute_url() -> None:
    guard = UrlGuard(resolver=FakeDns())
    assert await guard.check_arguments({"url": "http://example.com/", "max_length": 5}) is None
    refused = await guard.check_arguments({"uri": "http://10.0.0.1/"})
    assert refused is not None and not refused.allowed
    for hidden in ({"query": "http://10.0.0.1/"}, {"pages": ["https://example.com/", "http://127.0.0.1:8/"]},
                   {"request": {"target": "file:///etc/passwd"}}):  # fmt: skip
        verdict = await guard.check_arguments(hidden)
        assert verdict is not None and not verdict.allowed, hidden
    assert await guard.check_arguments({"query": "what is 10.0.0.1?", "url": "https://example.com/"}) is None
    outside = await guard.check_arguments({}, extra=["http://169.254.169.254/latest/meta-data/"])
    assert outside is not None and not outside.allowed


@pytest.mark.anyio
async def test_guard_refuses_a_request_with_too_many_urls_rather_than_checking_some() -> None:
    guard = UrlGuard(resolver=FakeDns())
    many = {"urls": [f"https://example.com/{i}" for i in range(MAX_JUDGED_VALUES + 1)]}
    verdict = await guard.check_arguments(many)
    assert verdict is not None and not verdict.allowed and "at most" in verdict.reason


def test_guard_from_policy_settings() -> None:
    from mcpstation.config.models import PolicySettings

    guard = UrlGuard.from_policy(
        PolicySettings(allowed_internal_hosts=("wiki.corp",), allowed_internal_cidrs=("10.0.0.0/8",))
    )
    assert guard.allowed_hosts == ("wiki.corp",) and guard.allowed_cidrs == ("10.0.0.0/8",) and guard.block_internal
    assert not UrlGuard.from_policy(PolicySettings(fetch_block_internal=False)).block_internal


def test_embedded_ipv4_forms() -> None:
    import ipaddress

    assert embedded_ipv4(ipaddress.ip_address("::ffff:1.2.3.4")) == (
        "IPv4-mapped IPv6",
        (ipaddress.IPv4Address("1.2.3.4"),),
    )
    assert embedded_ipv4(ipaddress.ip_address("2002:0102:0304::1"))[1] == (ipaddress.IPv4Address("1.2.3.4"),)  # type: ignore[index]
    assert embedded_ipv4(ipaddress.ip_address(PUBLIC_V6)) is None
    assert embedded_ipv4(ipaddress.ip_address("8.8.8.8")) is None


def test_is_global_is_not_the_only_authority() -> None:
    import ipaddress

    # Python calls these global (or not private); the table refuses them anyway.
    for text in ("100.64.0.1", "192.0.0.9", "2002:7f00:1::", "64:ff9b::7f00:1"):
        assert blocked_reason(ipaddress.ip_address(text)) is not None, text


def test_blocked_table_names_every_row() -> None:
    assert all(row.name for row in BLOCKED_NETWORKS)
    assert len({str(row.network) for row in BLOCKED_NETWORKS}) == len(BLOCKED_NETWORKS)
