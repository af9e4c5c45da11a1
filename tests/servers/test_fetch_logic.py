"""The guarded fetch as a library: redirects, rebinding, paging, robots.txt, pinned connections."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import anyio
import httpx2
import pytest
from fetch_pages import Site, serve_site

from mcpstation.policy import check_url
from mcpstation.servers.fetch import (
    FetchFailed,
    FetchRefused,
    FetchSettings,
    fetch,
    paginate,
    pinned_request,
)

pytestmark = pytest.mark.anyio

FETCH_TIMEOUT_S = 20.0
LOOPBACK_ONLY = FetchSettings(allowed_hosts=("127.0.0.1",), timeout_s=5.0)


@pytest.fixture
def site() -> Iterator[Site]:
    with serve_site() as running:
        yield running


async def test_html_page_comes_back_as_markdown(site: Site) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S):
        text = await fetch(f"{site.base}/article", LOOPBACK_ONLY)
    assert text.startswith(f"Contents of {site.base}/article:\n")
    assert "# Guarded fetch" in text
    assert f"[a link]({site.base}/next)" in text
    assert "- first\n- second" in text
    assert '```\nprint("hi")\n```' in text
    assert "tracking" not in text and "color:red" not in text


async def test_raw_returns_the_html_itself(site: Site) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S):
        text = await fetch(f"{site.base}/article", LOOPBACK_ONLY, raw=True)
    assert "<h1>Guarded  fetch</h1>" in text


async def test_paging_with_start_index_and_max_length(site: Site) -> None:
    url = f"{site.base}/long"
    with anyio.fail_after(FETCH_TIMEOUT_S):
        first = await fetch(url, LOOPBACK_ONLY, max_length=300)
        second = await fetch(url, LOOPBACK_ONLY, max_length=300, start_index=300)
        last = await fetch(url, LOOPBACK_ONLY, max_length=300, start_index=900)
        beyond = await fetch(url, LOOPBACK_ONLY, start_index=5000)
    body = first.split(":\n", 1)[1]
    assert body.startswith("0123456789" * 30)
    assert "start_index of 300" in body
    assert second.split(":\n", 1)[1].startswith("0123456789")
    assert "start_index of 600" in second
    assert "truncated" not in last and last.endswith("0123456789")
    assert "No more content available" in beyond


def test_paginate_edges() -> None:
    assert paginate("abcdef", start_index=0, max_length=10) == "abcdef"
    assert paginate("abcdef", start_index=2, max_length=2).startswith("cd\n\n<error>Content truncated")
    assert paginate("abcdef", start_index=4, max_length=2) == "ef"


async def test_robots_txt_disallow_is_refused_unless_ignored(site: Site) -> None:
    url = f"{site.base}/private/page"
    with anyio.fail_after(FETCH_TIMEOUT_S):
        with pytest.raises(FetchFailed, match=r"robots\.txt"):
            await fetch(url, LOOPBACK_ONLY)
        assert ("/private/page", f"127.0.0.1:{site.port}") not in site.requests
        ignoring = FetchSettings(allowed_hosts=("127.0.0.1",), ignore_robots_txt=True)
        assert "secret" in await fetch(url, ignoring)


@pytest.mark.parametrize(
    ("path", "target"),
    [("/to-metadata", "169.254.169.254"), ("/to-ten", "10.0.0.1"), ("/to-localhost", "localhost")],
)
async def test_redirect_to_an_internal_host_is_refused_before_connecting(site: Site, path: str, target: str) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S):
        with pytest.raises(FetchRefused, match="redirect") as caught:
            await fetch(f"{site.base}{path}", LOOPBACK_ONLY)
    assert target in str(caught.value)
    assert not caught.value.verdict.allowed


async def test_relative_redirect_is_followed(site: Site) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S):
        text = await fetch(f"{site.base}/to-article", LOOPBACK_ONLY)
    assert text.startswith(f"Contents of {site.base}/article:")


async def test_redirect_loop_stops_after_ten_hops(site: Site) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S):
        with pytest.raises(FetchFailed, match="more than 10 redirects"):
            await fetch(f"{site.base}/loop", LOOPBACK_ONLY)
    assert sum(1 for path, _ in site.requests if path == "/loop") == 11


async def test_http_error_status_fails(site: Site) -> None:
    with anyio.fail_after(FETCH_TIMEOUT_S), pytest.raises(FetchFailed, match="status code 404"):
        await fetch(f"{site.base}/missing", LOOPBACK_ONLY)


async def test_internal_url_is_refused_without_an_exception_for_it() -> None:
    with pytest.raises(FetchRefused, match="loopback"):
        await fetch("http://127.0.0.1:9/", FetchSettings())


class RebindingDns:
    """Answers `first` to the first lookup and `later` to every later one; counts lookups."""

    def __init__(self, first: Sequence[str], later: Sequence[str]) -> None:
        self.first, self.later = first, later
        self.lookups = 0

    def __call__(self, host: str) -> Sequence[str]:
        self.lookups += 1
        return self.first if self.lookups == 1 else self.later


async def test_dns_rebinding_cannot_swap_the_address_after_the_check(site: Site) -> None:
    # The first answer passes the guard (an allowed loopback network stands in for a public
    # address: tests send nothing off this machine); any later lookup would say metadata service.
    dns = RebindingDns(["127.0.0.1"], ["169.254.169.254"])
    settings = FetchSettings(allowed_cidrs=("127.0.0.0/8",), resolver=dns, timeout_s=5.0)
    with anyio.fail_after(FETCH_TIMEOUT_S):
        text = await fetch(f"http://rebind.test:{site.port}/article", settings)
    assert "# Guarded fetch" in text
    assert dns.lookups == 1  # robots.txt and the page both went to the checked address
    assert ("/article", f"rebind.test:{site.port}") in site.requests  # original Host header kept


async def test_an_answer_with_any_internal_address_is_refused() -> None:
    dns = RebindingDns(["93.184.216.34", "127.0.0.1"], ["93.184.216.34"])
    with pytest.raises(FetchRefused, match=r"127\.0\.0\.1"):
        await fetch("http://rebind.test/", FetchSettings(resolver=dns))
    assert dns.lookups == 1


async def test_pinned_request_connects_to_the_ip_and_keeps_host_and_sni() -> None:
    dns = RebindingDns(["93.184.216.34"], [])
    verdict = check_url("https://example.com:8443/a?b=1", resolver=dns)
    async with httpx2.AsyncClient(trust_env=False) as client:
        request = pinned_request(client, "https://example.com:8443/a?b=1", verdict, "93.184.216.34")
        v6 = check_url("https://example.com/", resolver=lambda host: ["2606:2800:220:1:248:1893:25c8:1946"])
        request_v6 = pinned_request(client, "https://example.com/", v6, v6.addresses[0])
        plain = pinned_request(client, "http://example.com/", check_url("http://example.com/", resolver=dns), "1.1.1.1")
    assert str(request.url) == "https://93.184.216.34:8443/a?b=1"
    assert request.headers["host"] == "example.com:8443"
    assert request.extensions["sni_hostname"] == "example.com"
    assert request_v6.url.host == "2606:2800:220:1:248:1893:25c8:1946"
    assert request_v6.headers["host"] == "example.com"
    assert "sni_hostname" not in plain.extensions and plain.headers["host"] == "example.com"


def test_bad_cidr_in_settings_fails_at_start() -> None:
    with pytest.raises(ValueError):
        FetchSettings(allowed_cidrs=("nope",))
