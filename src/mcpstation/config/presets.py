"""Built-in servers: `fetch` (web pages, behind the URL guard) and `exa` (web search), switched by `[presets]`.

`preset_servers` gives the enabled presets as config entries, which `StationConfig` validates and
puts first, so a validated config names every server it runs. A user server with a preset's name,
or with the same URL as a remote preset, replaces that preset. The builders take plain settings
values: the models import this module, never the other way round. Which servers the URL guard
judges is the pipeline's decision (`pipeline/url_guard.py`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

FETCH_PRESET = "fetch"
EXA_PRESET = "exa"
EXA_URL = "https://mcp.exa.ai/mcp?tools=web_search_exa"
EXA_API_KEY_ENV = "EXA_API_KEY"  # sent as `x-api-key` when set; exa works anonymously (rate limited) without
EXA_API_KEY_HEADER = "x-api-key"
OWN_FETCH_MODULE = "mcpstation.servers.fetch"
PYPI_FETCH_MODULE = "mcp_server_fetch"
FETCH_MODULES = frozenset({OWN_FETCH_MODULE, PYPI_FETCH_MODULE})
FETCH_PACKAGE = "mcp-server-fetch"  # the PyPI package and its console script
PYPI_FETCH_SERVER = "mcp-server-fetch"  # `fetch_server` choosing it over ours
# A browser UA: a bot UA gets challenge pages instead of content on many sites.
DEFAULT_FETCH_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)


@dataclass(frozen=True, slots=True)
class FetchOptions:
    """What the `fetch` preset is built from: the `[presets]` fetch settings and the URL guard's exceptions."""

    server: str = "mcpstation"  # or PYPI_FETCH_SERVER
    user_agent: str | None = None  # None: DEFAULT_FETCH_USER_AGENT; "": none sent
    ignore_robots_txt: bool = False
    allowed_hosts: Sequence[str] = ()
    allowed_cidrs: Sequence[str] = ()
    block_internal: bool = True


def fetch_preset(options: FetchOptions) -> dict[str, Any]:
    """The `fetch` preset: our guarded server (default) or mcp-server-fetch, run by this interpreter."""
    user_agent = DEFAULT_FETCH_USER_AGENT if options.user_agent is None else options.user_agent
    args = ["-m", PYPI_FETCH_MODULE if options.server == PYPI_FETCH_SERVER else OWN_FETCH_MODULE]
    if user_agent:
        args += ["--user-agent", user_agent]
    if options.ignore_robots_txt:
        args.append("--ignore-robots-txt")
    if options.server != PYPI_FETCH_SERVER:  # our server applies the guard's exceptions itself
        for host in options.allowed_hosts:
            args += ["--allow-host", host]
        for cidr in options.allowed_cidrs:
            args += ["--allow-cidr", cidr]
        if not options.block_internal:
            args.append("--allow-internal")
    return {"name": FETCH_PRESET, "command": sys.executable, "args": args, "env": {"PYTHONIOENCODING": "utf-8"}}


def exa_preset(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The `exa` preset: remote web search over streamable HTTP, keyed by `$EXA_API_KEY` when set."""
    key = (os.environ if environ is None else environ).get(EXA_API_KEY_ENV, "").strip()
    headers = {EXA_API_KEY_HEADER: key} if key else {}
    return {"name": EXA_PRESET, "transport": "streamable_http", "url": EXA_URL, "headers": headers}


def _same_url(a: str, b: str) -> bool:
    def canonical(url: str) -> str:
        parts = urlsplit(url.strip())
        path = parts.path.rstrip("/") or "/"
        return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))

    return canonical(a) == canonical(b)


def preset_servers(
    *,
    fetch: FetchOptions | None,
    exa: bool,
    names: Collection[str],
    urls: Collection[str],
    environ: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The enabled presets (`fetch` when its options are given, `exa` when true) that the user's
    servers, by their `names` and remote `urls`, do not stand in for yet: config entries to put first.

    A preset is left out when a user server has its name, or (for `exa`) its URL; the user's
    server then stands in for it. `environ` (default `os.environ`) supplies `EXA_API_KEY`.
    `StationConfig` adds these at validation, so every config has its presets explicit.
    """
    presets: list[dict[str, Any]] = []
    if fetch is not None and FETCH_PRESET not in names:
        presets.append(fetch_preset(fetch))
    if exa and EXA_PRESET not in names and not any(_same_url(EXA_URL, url) for url in urls):
        presets.append(exa_preset(environ))
    return presets
