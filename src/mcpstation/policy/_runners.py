"""Package runners (`npx`, `uvx`, `pipx run`, `npm exec`, `pnpm dlx`, `bunx`, ...) and installers.

A runner is judged by what it would fetch and run: every package it names (`--package`, `--from`,
`--spec`, `--with`, or the command itself) must be on `allowed_packages` by its registry name, or
the launch waits for a person. Options that change where packages come from wait for a person;
options that run a shell string or preload code are refused; options we do not know make the
launch wait for a person and every later word is checked against the deny rules. The command a
runner starts is judged too when it names a known program (`npx -y node -e ...`).

Installing packages (`pip install`, `npm install -g`, `uv add`, `apt-get install`, ...) is not
starting a server: it is refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from mcpstation.policy._packages import (
    AllowedPackage,
    PackageRequest,
    Registry,
    is_allowed,
    npm_request,
    pypi_request,
)
from mcpstation.policy._paths import is_path, world_writable_reason
from mcpstation.policy._programs import ALWAYS_INSTALLS, INSTALL_FLAGS, INSTALL_VERBS, is_known, program_name
from mcpstation.policy._verdicts import CommandVerdict, Judge, Rule, Verdict, allow, confirm, deny, worst

_SHELL_META = re.compile(r"[;&|`$<>\n\r'\"(){}*?!\\\s]")


@dataclass(frozen=True, slots=True)
class RunnerOptions:
    """How one family of runners spells its options."""

    registry: Registry
    flags: frozenset[str]
    package: frozenset[str]  # one package per value
    packages: frozenset[str]  # comma-separated packages per value
    python: frozenset[str]  # an interpreter: a version is fine, a path waits for a person
    source: frozenset[str]  # change where packages come from or how they are resolved
    ignored: frozenset[str]  # take a value that changes nothing we judge
    denied: frozenset[str]  # run a shell string or preload code


NODE_OPTIONS = RunnerOptions(
    registry=Registry.NPM,
    flags=frozenset({
        "-y", "--yes", "--no", "--no-yes", "-q", "--quiet", "--silent", "-s", "--prefer-offline", "--prefer-online",
        "--offline", "--no-install", "--ignore-existing", "--legacy-peer-deps", "--no-audit", "--no-fund",
        "--ignore-scripts", "--bun", "--verbose", "--no-update-notifier", "--include-workspace-root",
        "--workspaces", "--ws", "--no-color", "--prefer-dedupe",
    }),
    package=frozenset({"-p", "--package"}),
    packages=frozenset(),
    python=frozenset(),
    source=frozenset({
        "--registry", "--cache", "--prefix", "--userconfig", "--globalconfig", "-w", "--workspace", "--dir", "-C",
        "--cafile", "--ca", "--strict-ssl",
    }),
    ignored=frozenset({"--loglevel", "--color"}),
    denied=frozenset({
        "-c", "--call", "--shell", "--script-shell", "--node-options", "--onload-script", "--shell-auto-fallback",
        "--shell-mode", "--init-module",
    }),
)  # fmt: skip
UV_OPTIONS = RunnerOptions(
    registry=Registry.PYPI,
    flags=frozenset({
        "--isolated", "--no-cache", "-n", "-q", "--quiet", "-v", "--verbose", "--offline", "--refresh",
        "--no-config", "--native-tls", "--no-progress", "--reinstall", "--upgrade", "-U", "--compile-bytecode",
        "--no-build", "--no-sources", "--managed-python", "--no-managed-python", "--no-python-downloads",
        "--no-build-isolation", "--no-binary", "--only-binary", "--no-env-file",
    }),
    package=frozenset({"--from"}),
    packages=frozenset({"--with", "-w"}),
    python=frozenset({"--python", "-p"}),
    source=frozenset({
        "--index", "--index-url", "-i", "--extra-index-url", "--default-index", "--find-links", "-f",
        "--with-editable", "--with-requirements", "--config-file", "--directory", "--project", "--cache-dir",
        "--env-file", "--constraints", "-c", "--overrides", "--build-constraints", "-b", "--allow-insecure-host",
        "--keyring-provider", "--torch-backend",
    }),
    ignored=frozenset({
        "--prerelease", "--resolution", "--exclude-newer", "--color", "--python-preference", "--index-strategy",
        "--link-mode", "--refresh-package", "--reinstall-package", "--upgrade-package", "-P",
    }),
    denied=frozenset(),
)  # fmt: skip
PIPX_OPTIONS = RunnerOptions(
    registry=Registry.PYPI,
    flags=frozenset({"--no-cache", "--verbose", "-v", "--quiet", "-q", "--path", "--fetch-missing-python"}),
    package=frozenset({"--spec"}),
    packages=frozenset(),
    python=frozenset({"--python"}),
    source=frozenset({"--pip-args", "--index-url", "-i", "--backend", "--editable", "-e"}),
    ignored=frozenset(),
    denied=frozenset(),
)  # fmt: skip
_PYTHON_VERSION = re.compile(r"^(?:(?:c?python|pypy|graalpy)?[@-]?)?\d+(?:\.\d+){0,2}[a-z]?$", re.IGNORECASE)


def _request(spec: str, registry: Registry) -> PackageRequest:
    return npm_request(spec) if registry is Registry.NPM else pypi_request(spec)


def _package_verdict(label: str, spec: str, registry: Registry, allowed: Collection[AllowedPackage]) -> CommandVerdict:
    request = _request(spec, registry)
    if request.problem is not None:
        if is_path(spec) and (reason := world_writable_reason(spec.removeprefix("file:"))):
            return deny(Rule.WORLD_WRITABLE, f"{label} would run {reason}")
        return confirm(Rule.PACKAGE_SOURCE, f"{label}: {request.problem}; nothing vouches for it")
    if is_allowed(request, allowed):
        return allow(Rule.ALLOWED_PACKAGE, f"{label} runs {spec!r}, on the allowlist")
    return confirm(Rule.PACKAGE_NOT_ALLOWED, f"{label} would download and run {spec!r}, not on the allowlist")


def _bin_name(command: str, registry: Registry) -> str:
    if registry is Registry.NPM:
        return command.rsplit("@", 1)[0] if command.count("@") > (1 if command.startswith("@") else 0) else command
    return re.split(r"[@=<>!~\[]", command, maxsplit=1)[0]


def _inner_deny(label: str, words: Sequence[str], judge: Judge) -> CommandVerdict | None:
    """When parsing was unsure: a deny for any word that names a known program, judged as the command."""
    for start, word in enumerate(words):
        if not is_path(word) and is_known(word):
            verdict = judge(word, words[start + 1 :])
            if verdict.verdict is Verdict.DENY:
                return verdict.within(f"{label} may start {word!r}")
    return None


def _started_command(
    label: str, words: Sequence[str], *, named_packages: bool, registry: Registry, judge: Judge
) -> CommandVerdict | None:
    """The command a runner starts, judged as a command when it is a path or a known program; None otherwise.

    With `--package`/`--from`/`--spec`, the first word is a command looked up in the packages'
    environment (npm also searches PATH); without, it is the package, and only its name can
    name a known program (`npx -y node -e ...`).
    """
    command = words[0] if named_packages else _bin_name(words[0], registry)
    if is_path(command) and not named_packages:
        return None  # a local package, judged as a package source
    if not (is_path(command) or is_known(command)):
        return None
    return judge(command, words[1:]).within(f"{label} starts {command!r}")


def runner_verdict(
    label: str, args: Sequence[str], options: RunnerOptions, allowed: Collection[AllowedPackage], judge: Judge
) -> CommandVerdict:
    """Judge `<runner> [options] COMMAND [ARGS]` by the packages it would fetch and the command it starts."""
    named: list[str] = []
    held: list[CommandVerdict] = []
    unsure = False
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            index += 1
            break
        if not arg.startswith("-") or arg == "-":
            break
        head, has_value, inline = arg.partition("=")
        if head in options.denied:
            return deny(Rule.COMMAND_OPTION, f"{label} {arg} runs a shell string or preloads code")
        if head in options.flags:
            index += 1
            continue
        known = options.package | options.packages | options.python | options.source | options.ignored
        if head not in known:
            held.append(confirm(Rule.UNKNOWN_OPTION, f"{label} {arg}: an option this policy does not know"))
            unsure = True
            index += 1
            continue
        value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
        index += 1 if has_value else 2
        if head in options.package:
            named.append(value)
        elif head in options.packages:
            named.extend(part.strip() for part in value.split(",") if part.strip())
        elif head in options.python and not _PYTHON_VERSION.match(value):
            if reason := world_writable_reason(value) if is_path(value) else None:
                return deny(Rule.WORLD_WRITABLE, f"{label} {head} {reason}")
            held.append(confirm(Rule.PACKAGE_SOURCE, f"{label} {head} {value}: an interpreter nothing vouches for"))
        elif head in options.source:
            held.append(confirm(Rule.PACKAGE_SOURCE, f"{label} {head} changes where packages come from or how"))
    words = list(args[index:])
    if unsure and (problem := _inner_deny(label, args, judge)):
        return problem
    if not words and not named:
        return confirm(Rule.PACKAGE_NOT_ALLOWED, f"{label} without a package")
    if words and options.registry is Registry.NPM and _SHELL_META.search(words[0]):
        return deny(Rule.SHELL_SYNTAX, f"{label} command {words[0]!r} contains shell syntax (npm runs it in a shell)")
    if words:
        inner = _started_command(label, words, named_packages=bool(named), registry=options.registry, judge=judge)
        if inner is not None and inner.verdict is Verdict.DENY:
            return inner
        if inner is not None and inner.verdict is Verdict.CONFIRM:
            held.append(inner)
    if not named:
        script = _script_verdict(label, words[0]) if options.registry is Registry.PYPI else None
        if script is not None:
            return script
        named.append(words[0])
    verdicts = [_package_verdict(label, spec, options.registry, allowed) for spec in named]
    objections = held + [v for v in verdicts if v.verdict is not Verdict.ALLOW]
    if objections:
        return worst(objections)
    listed = ", ".join(repr(spec) for spec in named)
    return allow(Rule.ALLOWED_PACKAGE, f"{label} runs {listed}, on the allowlist")


def _script_verdict(label: str, app: str) -> CommandVerdict | None:
    """`pipx run https://.../x.py` or `pipx run ./x.py`: a script, not a package."""
    lowered = app.lower()
    if lowered.startswith(("http://", "https://")):
        return confirm(Rule.PACKAGE_SOURCE, f"{label} would fetch and run the script {app!r}; nothing vouches for it")
    if lowered.endswith(".py") or is_path(app):
        if reason := world_writable_reason(app):
            return deny(Rule.WORLD_WRITABLE, f"{label} would run {reason}")
        return confirm(Rule.SCRIPT, f"{label} runs the script {app!r}; nothing vouches for it")
    return None


def install_verdict(name: str, args: Sequence[str]) -> CommandVerdict | None:
    """A deny when `name ARGS` installs packages; None otherwise."""
    before_separator = list(args[: args.index("--")]) if "--" in args else list(args)
    if name in ALWAYS_INSTALLS and name not in INSTALL_FLAGS:
        return deny(Rule.PACKAGE_INSTALL, f"{name} installs packages; that is not starting a server")
    flags = INSTALL_FLAGS.get(name, frozenset())
    for arg in before_separator:
        short_cluster = arg.startswith("-") and not arg.startswith("--")
        if arg in flags or (short_cluster and any(f"-{letter}" in flags for letter in arg[1:2])):
            return deny(Rule.PACKAGE_INSTALL, f"{name} {arg} installs packages; that is not starting a server")
    verbs = INSTALL_VERBS.get(name, frozenset())
    positionals = [arg for arg in before_separator if not arg.startswith("-")][:3]
    for word in positionals:
        if word.lower() in verbs:
            return deny(Rule.PACKAGE_INSTALL, f"{name} {word} installs packages; that is not starting a server")
    return None


def python_module_cli(module: str) -> str | None:
    """`python -m pip` is pip: the program a module's command line stands for, when we judge that program."""
    top = module.split(".", 1)[0].lower()
    name = program_name(top)
    return name if module.lower() == top and name in {"pip", "uv", "pipx", "debugpy", "ptvsd"} else None
