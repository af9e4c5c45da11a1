"""A start gone quiet: what a stdio server that writes nothing while it starts probably waits for.

`npx` or `uvx` fetching a package writes nothing while it downloads and, behind a proxy or a
TLS-inspecting middlebox it cannot reach without the right variables, retries in silence until
its start-up budget runs out. A start quiet for `stall_after_s` is reported as stalled: how long
it has been quiet, the package download it is probably waiting for, and the station's network
variables the server did not get.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mcpstation.config.environment import NETWORK_VARIABLES, is_network_variable, withheld_network_variables
from mcpstation.config.models import StdioServerSpec
from mcpstation.connection._launch import child_environment

STALL_AFTER_S = 10.0  # a starting server that wrote nothing this long is reported as stalled...
STALL_BUDGET_FRACTION = 1 / 3  # ...or this part of its start-up budget, when that is sooner

NPM_REGISTRY = "the npm registry"
PYPI = "PyPI"


@dataclass(frozen=True, slots=True)
class _Runner:
    """A package runner: the words that make a command one, and where it downloads from."""

    words: tuple[str, ...]  # the program's name and its sub-commands (`pipx run`)
    source: str
    package_options: frozenset[str]  # options whose value names the package to run
    value_options: frozenset[str]  # other options that take a value


_NODE_VALUES = frozenset({"--registry", "--cache", "--userconfig", "--node-options"})
_PYTHON_VALUES = frozenset({"--python", "-p", "--index-url", "--extra-index-url", "--with", "--index", "--pip-args"})
RUNNERS: tuple[_Runner, ...] = (
    _Runner(("npx",), NPM_REGISTRY, frozenset({"-p", "--package"}), _NODE_VALUES),
    _Runner(("npm", "exec"), NPM_REGISTRY, frozenset({"-p", "--package"}), _NODE_VALUES),
    _Runner(("pnpm", "dlx"), NPM_REGISTRY, frozenset({"--package"}), _NODE_VALUES),
    _Runner(("yarn", "dlx"), NPM_REGISTRY, frozenset({"-p", "--package"}), _NODE_VALUES),
    _Runner(("bunx",), NPM_REGISTRY, frozenset({"-p", "--package"}), _NODE_VALUES),
    _Runner(("bun", "x"), NPM_REGISTRY, frozenset({"-p", "--package"}), _NODE_VALUES),
    _Runner(("uvx",), PYPI, frozenset({"--from"}), _PYTHON_VALUES),
    _Runner(("uv", "tool", "run"), PYPI, frozenset({"--from"}), _PYTHON_VALUES),
    _Runner(("pipx", "run"), PYPI, frozenset({"--spec"}), _PYTHON_VALUES),
)


def stall_after_s(budget_s: float) -> float:
    """How long a server with start-up budget `budget_s` may write nothing before it is stalled."""
    return min(STALL_AFTER_S, budget_s * STALL_BUDGET_FRACTION)


def package_download(command: str, args: Sequence[str]) -> tuple[str, str, str] | None:
    """`(runner, package, source)` when `command args` runs a package a runner fetches first, else None."""
    words = (_program(command), *args)
    for runner in RUNNERS:
        if tuple(words[: len(runner.words)]) == runner.words:
            package = _package(words[len(runner.words) :], runner)
            if package is not None:
                return " ".join(runner.words), package, runner.source
    return None


def stall_note(spec: StdioServerSpec, quiet_s: float, environ: Mapping[str, str] | None = None) -> str:
    """What to say of `spec`'s start, quiet for `quiet_s`; `environ` is the station's environment (default ours).

    `stalled: wrote nothing for 10 s while starting; 'npx' is probably downloading
    '@scope/server' from the npm registry; it did not get HTTPS_PROXY, NODE_EXTRA_CA_CERTS
    (inherit_env or env passes them)`.
    """
    station_env = os.environ if environ is None else environ
    parts = [f"stalled: wrote nothing for {quiet_s:.0f} s while starting"]
    download = package_download(spec.command, spec.args)
    if download is not None:
        runner, package, source = download
        parts.append(f"{runner!r} is probably downloading {package!r} from {source}")
    withheld = withheld_network_variables(station_env, child_environment(spec, station_env))
    if withheld:
        parts.append(f"it did not get {', '.join(withheld)} (inherit_env or env passes them)")
    elif download is not None and not any(is_network_variable(name) for name in station_env):
        shown = ", ".join(name for name in NETWORK_VARIABLES if name.isupper() and "*" not in name)
        parts.append(f"no proxy or CA variable is set ({shown}); a network that needs one fails this way")
    return "; ".join(parts)


def _program(command: str) -> str:
    name = os.path.basename(command)
    return name.removesuffix(".cmd").removesuffix(".exe")


def _package(words: Sequence[str], runner: _Runner) -> str | None:
    """The package `words` (a runner's arguments) name: an option's value, else the first positional."""
    skip = False
    first: str | None = None
    for index, word in enumerate(words):
        if skip:
            skip = False
            continue
        name, has_value, value = word.partition("=")
        if name in runner.package_options:
            if has_value:
                return value
            return words[index + 1] if index + 1 < len(words) else None
        if word.startswith("-"):
            skip = name in runner.value_options and not has_value
            continue
        if first is None:
            first = word
    return first
