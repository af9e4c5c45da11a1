"""Is this stdio command safe to start? `allow`, `confirm` (a person decides) or `deny`, with a rule and a reason.

The classifier is pure: it reads the command, its arguments, its environment and working
directory, and at most `stat`s paths; it never runs anything. A runner or interpreter is never
vouched for by name: what it runs is judged on its own. Deny rules come first and no allowlist
overrides them; then the allowlists; then `confirm` for everything nothing vouches for.

- deny: inline code (`sh -c`, `python -c`, `node -e`, ...) or a program read from stdin (the MCP
  messages), pipes into a shell, reverse shells and network relays (`nc -e`, `socat EXEC:`,
  `/dev/tcp`), downloaders (`curl`, `wget`, ...), package installs (`pip install`, `npm install -g`,
  ...), debuggers listening beyond loopback, remote code with every permission (`deno run -A URL`),
  ssh and git options that run commands (`ProxyCommand`, `core.sshCommand`, `--upload-pack`, ...),
  containers given the host or a shell, privilege escalation, destructive commands, interactive
  programs, relative paths and paths anyone could swap (world-writable, `/tmp/...`, existing or
  not), shell syntax in the command, and environment keys that change which code runs
  (`LD_PRELOAD`, `NODE_OPTIONS`, `PYTHONPATH`, `PATH`, `NPM_CONFIG_*`, ...).
- confirm: runners fetching a package not on `allowed_packages` (or by URL, git, path), `python -m`
  of a module not on it, scripts, containers, debuggers on loopback, a remote command over ssh,
  unknown executables, and anything started in a working directory of its own.
- allow: runners of allowlisted packages, `python -m` of an allowlisted module (and the station's
  own `mcpstation.*` servers), and executables named by absolute path on `allowed_commands`
  that are servers themselves (not a runner, interpreter or shell).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from mcpstation.policy._containers import container_verdict
from mcpstation.policy._context import Context
from mcpstation.policy._interpreters import (
    bun_verdict,
    deno_verdict,
    interpreter_verdict,
    java_verdict,
    node_verdict,
    python_verdict,
)
from mcpstation.policy._packages import parse_allowed
from mcpstation.policy._paths import is_absolute, is_path, world_writable_reason
from mcpstation.policy._programs import (
    CONTAINERS,
    DEBUG_SERVERS,
    DESTRUCTIVE,
    DOWNLOADERS,
    INLINE_RUNNERS,
    INSTALL_FLAGS,
    INSTALL_VERBS,
    INTERACTIVE,
    LOOSE_WRAPPERS,
    NODE_RUNNERS,
    NODES,
    OTHER_INTERPRETERS,
    PRIVILEGE,
    PYTHONS,
    RELAYS,
    SHELL_HOSTS,
    SHELLS,
    SSH_CLIENTS,
    SUB_RUNNERS,
    WRAPPERS,
    program_name,
)
from mcpstation.policy._remote import debugger_program_verdict, git_verdict, jdwp_verdict, relay_verdict, ssh_verdict
from mcpstation.policy._runners import NODE_OPTIONS, PIPX_OPTIONS, UV_OPTIONS, install_verdict, runner_verdict
from mcpstation.policy._shells import shell_verdict
from mcpstation.policy._verdicts import CommandVerdict, Rule, Verdict, allow, confirm, deny

__all__ = ["CommandVerdict", "Rule", "Verdict", "classify_command", "program_name"]

# Environment keys that change which code a loader, runtime or package manager runs; upper-cased first.
# (Proxies and CA bundles change whom a server talks to and trusts, not its code: a run-time add
# setting them needs a person, `_runtime.TRANSPORT_ENV_KEYS`.)
HIJACKING_ENV_KEYS = frozenset({
    "PATH", "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "PYTHONPATH",
    "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONSAFEPATH", "PYTHONINSPECT",
    "PYTHONBREAKPOINT", "PYTHONPYCACHEPREFIX", "BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS",
    "BASHOPTS", "IFS", "PS4", "SHELL", "PERL5LIB", "PERL5OPT", "PERLLIB", "PERL5DB", "RUBYLIB", "RUBYOPT", "GEM_PATH",
    "GEM_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH", "LOCPATH",
    "HOSTALIASES", "RESOLV_HOST_CONF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH", "GIT_ASKPASS", "SSH_ASKPASS",
    "SUDO_ASKPASS", "GIT_EDITOR", "GIT_PAGER", "GIT_PROXY_COMMAND", "GIT_EXTERNAL_DIFF", "GIT_TEMPLATE_DIR",
    "GIT_SEQUENCE_EDITOR", "GIT_DIR", "GIT_WORK_TREE", "EDITOR", "VISUAL", "PAGER", "BROWSER", "LESSOPEN",
    "LESSCLOSE", "OPENSSL_CONF", "OPENSSL_ENGINES", "ELECTRON_RUN_AS_NODE", "DOTNET_STARTUP_HOOKS",
    "DOTNET_ADDITIONAL_DEPS", "PHPRC",
    "PHP_INI_SCAN_DIR", "TCLLIBPATH", "R_PROFILE", "R_PROFILE_USER", "R_ENVIRON", "R_ENVIRON_USER", "HOME",
    "XDG_CONFIG_HOME", "XDG_CONFIG_DIRS", "APPDATA", "USERPROFILE", "COMSPEC", "PATHEXT",
})  # fmt: skip
HIJACKING_ENV_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_", "NPM_CONFIG_", "YARN_", "PNPM_", "BUN_", "UV_", "PIP_",
                          "PIPX_", "DENO_", "GIT_CONFIG", "LUA_", "COR_", "CORECLR_", "RUBY_DEBUG_")  # fmt: skip
MAX_NESTING = 8  # wrappers within wrappers: deeper than any real launch line

WRAPPER_VALUE_OPTIONS: Mapping[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "caffeinate": frozenset({"-t", "-w"}),
}

_SHELL_META = re.compile(r"[;&|`$<>\n\r\x00'\"]")
_PIPE_TO_SHELL = re.compile(r"\|\s*(sudo\s+)?(\S*/)?(ba|z|da|k|fi|c|tc|a)?sh\b", re.IGNORECASE)
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_DURATION = re.compile(r"^[0-9.]+[smhd]?$")


def classify_command(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    allowed_packages: Collection[str] = (),
    allowed_commands: Collection[str] = (),
    cwd: str | None = None,
) -> CommandVerdict:
    """Classify a stdio server's command line without running anything.

    `allowed_packages` names npm and PyPI packages (and, read as PyPI names, Python modules) that
    runners and `python -m` may start: `name`, `name@1.2.3`, `name==1.2.3`, `npm:name`,
    `pypi:name`, `@scope/name`; an entry without a version admits any version. `allowed_commands`
    names executables the deployment lets servers use; only an absolute path to a server itself
    (not a runner, interpreter or shell) is allowed outright. `cwd` is the server's working
    directory when it has its own.

    Raises:
        ValueError: an `allowed_packages` entry is malformed.
    """
    context = Context(parse_allowed(allowed_packages), tuple(allowed_commands), cwd)
    verdict = _judge(command, list(args), dict(env), context)
    if cwd is not None:
        if reason := world_writable_reason(cwd):
            return deny(Rule.WORLD_WRITABLE, f"working directory {reason}; code and config are read from it")
        if verdict.verdict is Verdict.ALLOW:
            return confirm(
                Rule.WORKING_DIRECTORY,
                f"{verdict.reason}, but it starts in {cwd}, whose files (modules, .npmrc, uv.toml) it may load",
            )
    return verdict


def _judge(command: str, args: list[str], env: dict[str, str], context: Context) -> CommandVerdict:
    if context.depth > MAX_NESTING:
        return deny(Rule.TOO_DEEP, f"commands nested more than {MAX_NESTING} deep")
    if not command.strip():
        return deny(Rule.EMPTY_COMMAND, "the command is empty")
    problem = _env_problem(env) or _syntax_problem(command) or _reverse_shell_problem(args)
    if problem is None and not context.in_container:
        problem = _path_problem(command)
    if problem is not None:
        return problem
    verdict = _dispatch(program_name(command), command, args, env, context)
    if verdict.verdict is Verdict.DENY:
        return verdict
    return _argument_problem(args) or verdict


def _inner(command: str, args: Sequence[str], context: Context, env: Mapping[str, str] | None = None) -> CommandVerdict:
    return _judge(command, list(args), dict(env or {}), replace(context, depth=context.depth + 1))


def _env_problem(env: Mapping[str, str]) -> CommandVerdict | None:
    for key in sorted(env):
        upper = key.upper()
        if upper in HIJACKING_ENV_KEYS or upper.startswith(HIJACKING_ENV_PREFIXES):
            return deny(Rule.ENV_HIJACK, f"environment variable {key} can change which code the program runs")
    return None


def _syntax_problem(command: str) -> CommandVerdict | None:
    if _SHELL_META.search(command):
        return deny(Rule.SHELL_SYNTAX, f"command {command!r} contains shell syntax; put arguments in args")
    if not is_path(command) and any(ch.isspace() for ch in command):
        return deny(Rule.SHELL_SYNTAX, f"command {command!r} contains spaces; put arguments in args")
    return None


def _path_problem(command: str) -> CommandVerdict | None:
    if not is_path(command):
        return None
    if not is_absolute(command):
        return deny(Rule.RELATIVE_PATH, f"command {command!r} is a relative path: it runs whatever it means there")
    if reason := world_writable_reason(command):
        return deny(Rule.WORLD_WRITABLE, f"executable {reason}")
    return None


def _reverse_shell_problem(args: Sequence[str]) -> CommandVerdict | None:
    for arg in args:
        if "/dev/tcp/" in arg.lower() or "/dev/udp/" in arg.lower():
            return deny(Rule.REVERSE_SHELL, f"argument {arg!r} opens a socket as a file: a reverse shell")
    return None


def _argument_problem(args: Sequence[str]) -> CommandVerdict | None:
    """Whatever the program, a shell line in its arguments, or a shell given inline code among them."""
    for index, arg in enumerate(args):
        if _PIPE_TO_SHELL.search(arg):
            return deny(Rule.PIPE_TO_SHELL, f"argument {arg!r} pipes into a shell")
        shell = program_name(arg)
        if index + 1 < len(args) and shell in SHELLS and _is_inline_shell_flag(shell, args[index + 1]):
            return deny(Rule.INLINE_CODE, f"arguments {arg!r} {args[index + 1]!r} run inline shell code")
    return None


def _is_inline_shell_flag(shell: str, arg: str) -> bool:
    lowered = arg.lower()
    if shell == "cmd":
        return lowered.startswith(("/c", "/k", "/r"))
    if shell in {"powershell", "pwsh"}:
        parameter = lowered.lstrip("-/\u2013\u2014\u2015")
        return bool(parameter) and any(full.startswith(parameter) for full in ("command", "encodedcommand", "ec"))
    single = arg.startswith("-") and not arg.startswith("--") and len(arg) > 1
    return (single and "c" in arg[1:]) or lowered.startswith("--command")


# -- dispatch by kind of program -----------------------------------------------------------------------


def _dispatch(name: str, command: str, args: list[str], env: dict[str, str], context: Context) -> CommandVerdict:
    if name in PRIVILEGE:
        return deny(Rule.PRIVILEGE, f"{name} runs a command with other privileges")
    if name in WRAPPERS:
        return _wrapper_verdict(name, args, env, context)
    if name in LOOSE_WRAPPERS:
        return _loose_wrapper_verdict(name, args, context)
    if name in SHELL_HOSTS:
        if not args or args[0].startswith("-"):
            return confirm(Rule.UNKNOWN_EXECUTABLE, f"{name} without an applet")
        return _inner(args[0], args[1:], context, env).within(f"{name} {args[0]}")
    if name in DESTRUCTIVE:
        return deny(Rule.DESTRUCTIVE, f"{name} is a destructive command, not an MCP server")
    if name in RELAYS:
        return relay_verdict(name, args)
    if name in DOWNLOADERS:
        return deny(Rule.DOWNLOADER, f"{name} downloads or copies files from the network; it is not an MCP server")
    if name in INLINE_RUNNERS:
        return deny(Rule.INLINE_CODE, f"{name} runs a program or a shell line given on its command line")
    if name in INTERACTIVE:
        return deny(
            Rule.INTERACTIVE, f"{name} is interactive and can run shell commands: the MCP messages would drive it"
        )
    if name in SHELLS:
        return shell_verdict(name, args, context)
    if name in SSH_CLIENTS:
        return ssh_verdict(name, args)
    if name == "git":
        return git_verdict(args) or confirm(Rule.UNKNOWN_EXECUTABLE, "git is not an MCP server; nothing vouches for it")
    if name in DEBUG_SERVERS:
        return debugger_program_verdict(name, args)
    if name in CONTAINERS:
        return container_verdict(name, args, lambda cmd, rest: _inner(cmd, rest, replace(context, in_container=True)))
    runner = _runner_dispatch(name, args, context)
    if runner is not None:
        return runner
    if name == "bun":
        return bun_verdict(args, context)
    if name in INSTALL_VERBS or name in INSTALL_FLAGS:
        return install_verdict(name, args) or confirm(
            Rule.SCRIPT, f"{name} runs what its project files say (package scripts run through a shell)"
        )
    if name in PYTHONS:
        return python_verdict(name, args, context, lambda cmd, more: _inner(cmd, more, context))
    if name in NODES:
        return node_verdict(name, args, context)
    if name == "java":
        return jdwp_verdict(args) or java_verdict(args, context)
    if name in OTHER_INTERPRETERS:
        return interpreter_verdict(name, args, context)
    return _executable_verdict(command, context)


def _runner_dispatch(name: str, args: list[str], context: Context) -> CommandVerdict | None:
    allowed = context.allowed_packages

    def judge(cmd: str, rest: Sequence[str]) -> CommandVerdict:
        return _inner(cmd, rest, context)

    if name in NODE_RUNNERS:
        return runner_verdict(name, args, NODE_OPTIONS, allowed, judge)
    if name == "uvx":
        return runner_verdict(name, args, UV_OPTIONS, allowed, judge)
    if name in SUB_RUNNERS and args and args[0] in SUB_RUNNERS[name]:
        return runner_verdict(f"{name} {args[0]}", args[1:], NODE_OPTIONS, allowed, judge)
    if name == "pipx" and args[:1] == ["run"]:
        return runner_verdict("pipx run", args[1:], PIPX_OPTIONS, allowed, judge)
    if name == "uv" and args[:2] == ["tool", "run"]:
        return runner_verdict("uv tool run", args[2:], UV_OPTIONS, allowed, judge)
    if name == "uv" and args[:1] == ["run"]:
        return _loose_wrapper_verdict("uv run", args[1:], context)
    if name == "deno":
        return deno_verdict(args, context)
    return None


def _executable_verdict(command: str, context: Context) -> CommandVerdict:
    if context.in_container:
        return confirm(Rule.CONTAINER, f"{command!r} in the container")
    if is_absolute(command):
        normal = posixpath.normpath(command)
        if any(is_absolute(entry) and posixpath.normpath(entry) == normal for entry in context.allowed_commands):
            return allow(Rule.ALLOWED_COMMAND, f"executable {command} is on the allowlist")
    elif command in context.allowed_commands:
        return confirm(
            Rule.UNKNOWN_EXECUTABLE,
            f"{command!r} is allowed by bare name, which only lets it be used; list its absolute path to vouch for it",
        )
    return confirm(Rule.UNKNOWN_EXECUTABLE, f"unknown executable {command!r}; nothing vouches for it")


# -- wrappers ------------------------------------------------------------------------------------------


def _wrapper_verdict(name: str, args: list[str], env: dict[str, str], context: Context) -> CommandVerdict:
    takes_value = WRAPPER_VALUE_OPTIONS.get(name, frozenset())
    cwd = context.cwd
    index = 0
    seen_duration = False
    while index < len(args):
        arg = args[index]
        head, has_value, inline = arg.partition("=")
        if name == "env" and (arg.startswith("--split-string") or (arg[:1] == "-" and arg[1:2] != "-" and "S" in arg)):
            return deny(Rule.INLINE_CODE, "env -S splits a string into a command line")
        if name == "env" and (arg.startswith("-P") or arg.startswith("--path")):
            return deny(Rule.ENV_HIJACK, f"env {arg} changes where the command is looked up")
        if arg == "--":
            index += 1
            break
        if name == "env" and _ENV_ASSIGNMENT.match(arg):
            env[head] = inline
        elif head in takes_value:
            value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
            if name == "env" and head in {"-C", "--chdir"}:
                cwd = value
            index += 0 if has_value else 1
        elif arg.startswith("-"):
            pass
        elif name == "timeout" and not seen_duration and _DURATION.match(arg):
            seen_duration = True
        else:
            break
        index += 1
    if index >= len(args):
        return confirm(Rule.UNKNOWN_EXECUTABLE, f"{name} without a command")
    inner = _judge(args[index], args[index + 1 :], env, replace(context, cwd=cwd, depth=context.depth + 1))
    if cwd != context.cwd and cwd is not None:
        if reason := world_writable_reason(cwd, base=context.cwd):
            return deny(Rule.WORLD_WRITABLE, f"{name} starts {args[index]!r} in a directory {reason}")
        if inner.verdict is Verdict.ALLOW:
            return confirm(Rule.WORKING_DIRECTORY, f"{name} starts {args[index]!r} in {cwd}, whose files it may load")
    return inner.within(f"{name} runs {args[index]!r}")


def _loose_wrapper_verdict(label: str, args: Sequence[str], context: Context) -> CommandVerdict:
    """A wrapper whose options we do not parse: every word is judged as if the command started there."""
    verdicts = [
        _inner(word, args[index + 1 :], context).within(f"{label} may run {word!r}")
        for index, word in enumerate(args)
        if not word.startswith("-")
    ]
    denied = [v for v in verdicts if v.verdict is Verdict.DENY]
    if denied:
        return denied[0]
    return confirm(
        Rule.UNKNOWN_EXECUTABLE, f"{label} runs a command this policy cannot pick out; nothing vouches for it"
    )
