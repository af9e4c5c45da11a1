"""`[policy] allowed_packages`: which npm and PyPI packages (and Python modules) runners may start.

An entry is `name`, `name@1.2.3` or `name==1.2.3`, optionally prefixed `npm:` or `pypi:` to bind
it to one registry; a scoped name (`@scope/name`) is npm's. An entry without a version admits any
version; a pinned entry admits exactly that version. Names are compared the way each registry
does: npm exactly, PyPI after PEP 503 normalisation (`Mcp_Server.Fetch` → `mcp-server-fetch`);
a Python module matches a PyPI entry with `-` read as `_` (`mcp-server-fetch` → `mcp_server_fetch`).

A request that is not a plain registry name with an optional version (a URL, a git or file
reference, an npm alias `name@npm:other`, a path, `name @ url`) is never vouched for by a name.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from enum import StrEnum


class Registry(StrEnum):
    NPM = "npm"
    PYPI = "pypi"


_ENTRY = re.compile(
    r"^(?:(?P<registry>npm|pypi):)?(?P<name>(?:@[A-Za-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*)"
    r"(?:(?:@|==)(?P<version>[A-Za-z0-9][\w.+!-]*))?$"
)
_NPM_NAME = re.compile(r"^(?:@[a-z0-9][\w.~-]*/)?[A-Za-z0-9][\w.~-]*$")
_NPM_RANGE = re.compile(r"^[\w.^~<>=*|+ -]*$")
_NPM_EXACT = re.compile(r"^v?\d+\.\d+\.\d+(?:[-+][\w.-]+)?$")
_PYPI_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")
_PYPI_REQUEST = re.compile(
    r"^(?P<name>[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[\w\s,.-]*\])?\s*"
    r"(?:@(?P<tag>[\w.+!-]+)|(?P<spec>(?:(?:===|==|~=|!=|<=|>=|<|>)\s*[\w.*+!-]+\s*,?\s*)+))?$"
)
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_DIRECT_MARKERS = ("://", "git+", "git:", "github:", "gitlab:", "bitbucket:", "gist:", "file:", "link:", "npm:",
                   "workspace:", "hg+", "svn+", "bzr+", "portal:", "patch:", "jsr:")  # fmt: skip
_ARCHIVES = (".tgz", ".tar.gz", ".tar", ".whl", ".zip", ".tar.bz2", ".tar.xz")


@dataclass(frozen=True, slots=True)
class AllowedPackage:
    """One parsed `allowed_packages` entry."""

    name: str
    version: str | None
    registries: frozenset[Registry]


@dataclass(frozen=True, slots=True)
class PackageRequest:
    """What a runner was asked to fetch: a registry name and version, or a direct reference."""

    spec: str
    registry: Registry
    name: str | None  # None: not a plain registry request (see `problem`)
    exact_version: str | None = None  # set when the request pins one version
    problem: str | None = None


def parse_allowed(entries: Collection[str]) -> tuple[AllowedPackage, ...]:
    """Parse `allowed_packages` entries.

    Raises:
        ValueError: an entry is not `[npm:|pypi:]name[@version|==version]`, naming the entry.
    """
    parsed = []
    for entry in entries:
        match = _ENTRY.match(entry.strip())
        if match is None:
            raise ValueError(
                f"allowed_packages entry {entry!r} is not a package name with an optional version "
                "('name', 'name@1.2.3', 'name==1.2.3', '@scope/name', 'npm:name', 'pypi:name')"
            )
        name = match["name"]
        if match["registry"]:
            registries = frozenset({Registry(match["registry"])})
        elif name.startswith("@"):
            registries = frozenset({Registry.NPM})
        else:
            registries = frozenset(Registry)
        parsed.append(AllowedPackage(name, match["version"], registries))
    return tuple(parsed)


def pypi_normal(name: str) -> str:
    """PEP 503: `Mcp_Server.Fetch` → `mcp-server-fetch`."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _direct_problem(spec: str) -> str | None:
    lowered = spec.strip().lower()
    if any(marker in lowered for marker in _DIRECT_MARKERS):
        return f"{spec!r} is fetched from a URL, git, a file or another package, not by its registry name"
    if lowered.startswith((".", "/", "~", "\\")) or re.match(r"^[a-z]:[\\/]", lowered):
        return f"{spec!r} is a local path, not a registry package"
    if lowered.endswith(_ARCHIVES):
        return f"{spec!r} is an archive, not a registry package"
    return None


def npm_request(spec: str) -> PackageRequest:
    """`name`, `name@range`, `@scope/name@1.2.3`; anything else is a direct reference."""
    problem = _direct_problem(spec)
    if problem is not None:
        return PackageRequest(spec, Registry.NPM, None, problem=problem)
    body = spec[1:] if spec.startswith("@") else spec
    name_part, at, version = body.partition("@")
    name = ("@" if spec.startswith("@") else "") + name_part
    if not _NPM_NAME.match(name) or (at and not _NPM_RANGE.match(version)):
        if "/" in name and not name.startswith("@"):
            return PackageRequest(spec, Registry.NPM, None, problem=f"{spec!r} is a GitHub repository, not a package")
        return PackageRequest(spec, Registry.NPM, None, problem=f"{spec!r} is not an npm package name")
    exact = version.removeprefix("v") if at and _NPM_EXACT.match(version) else None
    return PackageRequest(spec, Registry.NPM, name, exact)


def pypi_request(spec: str) -> PackageRequest:
    """`name`, `name[extra]`, `name==1.0`, `name>=1,<2`, `name@1.0` (uv); anything else is a direct reference."""
    problem = _direct_problem(spec)
    if problem is not None:
        return PackageRequest(spec, Registry.PYPI, None, problem=problem)
    match = _PYPI_REQUEST.match(spec.strip())
    if match is None:
        return PackageRequest(spec, Registry.PYPI, None, problem=f"{spec!r} is not a PyPI requirement by name")
    exact: str | None = None
    if match["tag"] and match["tag"] != "latest":
        exact = match["tag"]
    elif match["spec"]:
        pins = re.fullmatch(r"\s*===?\s*([\w.+!-]+)\s*,?\s*", match["spec"])
        exact = pins.group(1) if pins else None
    return PackageRequest(spec, Registry.PYPI, match["name"], exact)


def _same_name(entry: AllowedPackage, request: PackageRequest) -> bool:
    assert request.name is not None
    if request.registry is Registry.NPM:
        return entry.name == request.name
    return _PYPI_NAME.match(entry.name) is not None and pypi_normal(entry.name) == pypi_normal(request.name)


def is_allowed(request: PackageRequest, allowed: Collection[AllowedPackage]) -> bool:
    """Whether an entry vouches for `request`: same registry, same name, and the pinned version if any."""
    if request.name is None:
        return False
    for entry in allowed:
        if request.registry not in entry.registries or not _same_name(entry, request):
            continue
        if entry.version is None or (request.exact_version is not None and _same_version(entry, request)):
            return True
    return False


def _same_version(entry: AllowedPackage, request: PackageRequest) -> bool:
    assert entry.version is not None and request.exact_version is not None
    return entry.version.lower().removeprefix("v") == request.exact_version.lower().removeprefix("v")


def module_allowed(module: str, allowed: Collection[AllowedPackage]) -> bool:
    """Whether `python -m module` is vouched for: a PyPI entry naming it (`-` read as `_`), dots exact."""
    if not _MODULE.match(module):
        return False
    for entry in allowed:
        if Registry.PYPI in entry.registries and _PYPI_NAME.match(entry.name):
            if entry.name.replace("-", "_").lower() == module.lower():
                return True
    return False


def is_module_name(module: str) -> bool:
    return _MODULE.match(module) is not None
