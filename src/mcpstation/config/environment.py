"""The environment a stdio server inherits from the station: which of the station's variables it gets.

A server never gets the station's whole environment. It gets the SDK's short list (`HOME`,
`LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`), then, for servers from the user's own config, the
variables that make networks work (`NETWORK_VARIABLES`: proxies, CA bundles, package indexes)
and whatever `inherit_env` names, station-wide and per server; then its own `env`, which wins.
A server added at run time (by an agent or the API) inherits only the SDK's list, unless a
person approved its own `inherit_env`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase

__all__ = [
    "NETWORK_VARIABLES",
    "inherited_variables",
    "is_network_variable",
    "matches_any",
    "withheld_network_variables",
]

_NETWORK_UPPER = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "PIP_INDEX_URL",
    "NPM_CONFIG_*",
)
NETWORK_VARIABLES: tuple[str, ...] = (*_NETWORK_UPPER, *(name.lower() for name in _NETWORK_UPPER))
"""Names and globs a server from the user's own config inherits by default: what proxies, TLS
inspection and private package indexes need. Without them `npx` or `uvx` behind a proxy retries
in silence until its start-up budget runs out."""


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    """Whether `name` matches one of `patterns` (exact names or globs, case-sensitive as environments are)."""
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def is_network_variable(name: str) -> bool:
    """Whether `name` is one of `NETWORK_VARIABLES` (any case)."""
    return matches_any(name, NETWORK_VARIABLES) or matches_any(name.upper(), _NETWORK_UPPER)


def inherited_variables(environ: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
    """The variables of `environ` whose names match `patterns`, in `environ`'s order."""
    wanted = tuple(patterns)
    if not wanted:
        return {}
    return {name: value for name, value in environ.items() if matches_any(name, wanted)}


def withheld_network_variables(environ: Mapping[str, str], child: Mapping[str, str]) -> tuple[str, ...]:
    """The `NETWORK_VARIABLES` set in `environ` (the station's) that `child` (a server's environment) lacks."""
    return tuple(name for name in environ if is_network_variable(name) and name not in child)
