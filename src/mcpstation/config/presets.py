"""Built-in servers: `fetch` (web pages, behind the URL guard) and `exa` (web search), switched by `[presets]`.

`preset_servers` gives the enabled presets as config entries, which `StationConfig` validates and
puts first, so a validated config names every server it runs. A user server with a preset's name,
or with the same URL as a remote preset, replaces that preset. `needs_url_guard` says which
servers' requests the URL guard judges. (The models import this module, not the other way round.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from mcpstation.config.models import AnyServerSpec, StationConfig

FETCH_PRESET = "fetch"
EXA_PRESET = "exa"
EXA_URL = "https://mcp.exa.ai/mcp?tools=web_search_exa"
EXA_API_KEY_ENV = "EXA_API_KEY"  # sent as `x-api-key` when set; exa works anonymously (rate limited) without
EXA_API_KEY_HEADER = "x-api-key"
OWN_FETCH_MODULE = "mcpstation.servers.fetch"
PYPI_FETCH_MODULE = "mcp_server_fetch"
FETCH_MODULES = frozenset({OWN_FETCH_MODULE, PYPI_FETCH_MODULE})
FETCH_PACKAGE = "mcp-server-fetch"  # the PyPI package and its console script
# A browser UA: a bot UA gets challenge pages instead of content on many sites.
DEFAULT_FETCH_USER_AGENT = (
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36"
)


def fetch_preset(config: StationConfig) -> dict[str, Any]:
    """The `fetch` preset: our guarded server (default) or mcp-server-fetch, run by this interpreter."""
    presets, policy = config.presets, config.policy
    user_agent = DEFAULT_FETCH_USER_AGENT if presets.fetch_user_agent is None else presets.fetch_user_agent
    if presets.fetch_server == "mcp-server-fetch":
        args = ["-m", PYPI_FETCH_MODULE]
        if user_agent:
            args += ["--user-agent", user_agent]
        if presets.fetch_ignore_robots_txt:
            args.append("--ignore-robots-txt")
    else:
        args = ["-m", OWN_FETCH_MODULE]
        if user_agent:
            args += ["--user-agent", user_agent]
        if presets.fetch_ignore_robots_txt:
            args.append("--ignore-robots-txt")
        for host in policy.allowed_internal_hosts:
            args += ["--allow-host", host]
        for cidr in policy.allowed_internal_cidrs:
            args += ["--allow-cidr", cidr]
        if not policy.fetch_block_internal:
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


def preset_servers(config: StationConfig, *, environ: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The enabled presets that `config.servers` does not have yet, to put first, as config entries.

    A preset is left out when a user server has its name, or (for `exa`) its URL; the user's
    server then stands in for it. `environ` (default `os.environ`) supplies `EXA_API_KEY`.
    `StationConfig` adds these at validation, so every config has its presets explicit.
    """
    user = config.servers
    names = {spec.name for spec in user}
    urls = [url for spec in user if isinstance(url := getattr(spec, "url", None), str)]
    presets: list[dict[str, Any]] = []
    if config.presets.fetch_enabled and FETCH_PRESET not in names:
        presets.append(fetch_preset(config))
    if config.presets.exa_enabled and EXA_PRESET not in names and not any(_same_url(EXA_URL, u) for u in urls):
        presets.append(exa_preset(environ))
    return presets


def _module_of(args: Sequence[str]) -> str | None:
    for index, arg in enumerate(args):
        if arg == "-m":
            return args[index + 1] if index + 1 < len(args) else None
        if arg.startswith("-m") and len(arg) > 2:
            return arg[2:]
    return None


def runs_fetch_server(spec: AnyServerSpec) -> bool:
    """True for a stdio server running mcp-server-fetch or our fetch server, however launched."""
    command, args = getattr(spec, "command", None), getattr(spec, "args", ())
    if spec.transport != "stdio" or not isinstance(command, str):
        return False
    if _module_of(args) in FETCH_MODULES:
        return True
    program = PurePath(command).name.lower().removesuffix(".exe")
    if program == FETCH_PACKAGE:
        return True
    launched = [PurePath(arg).name.lower() for arg in args if not arg.startswith("-")]
    packages = {arg.split("==")[0].split("@")[0] for arg in launched}
    return program in {"uvx", "pipx", "uv"} and FETCH_PACKAGE in packages


def needs_url_guard(spec: AnyServerSpec) -> bool:
    """Whether the URL guard judges the arguments of every request to `spec`: its `url_guard`
    setting, else on for the fetch servers we recognise."""
    if spec.url_guard is not None:
        return spec.url_guard
    return runs_fetch_server(spec)


def fetch_guard_targets(config: StationConfig) -> set[str]:
    """Names of the servers whose requests' URL arguments must pass the URL guard."""
    return {spec.name for spec in config.servers if needs_url_guard(spec)}
