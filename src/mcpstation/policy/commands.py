"""Is this stdio command safe to start? `allow`, `confirm` (a person decides) or `deny`, with a reason.

The classifier is pure: it reads the command, its arguments and its environment, and at most
`stat`s an absolute executable path; it never runs anything. Deny rules come first and no
allowlist overrides them; then the allowlists; then `confirm` for everything it cannot vouch for.

- deny: shells and interpreters running inline code (`sh -c`, `python -c`, `node -e`, ...) or a
  program read from stdin, pipes into a shell, privilege escalation, destructive commands,
  relative or world-writable executable paths, shell syntax in the command, and environment keys
  that hijack loaders or runtimes (`LD_PRELOAD`, `DYLD_*`, `NODE_OPTIONS`, `PYTHONPATH`, `PATH`, ...).
- confirm: package runners fetching a package not on `allowed_packages` (`npx`, `uvx`, `pipx run`,
  ...), containers, scripts and unknown executables.
- allow: commands on `allowed_commands`, runners of allowlisted packages, `python -m` of an
  allowlisted module (and the station's own `mcpstation.*` servers).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Literal

Verdict = Literal["allow", "confirm", "deny"]

# Environment keys that change which code a loader or runtime runs; upper-cased before comparing.
HIJACKING_ENV_KEYS = frozenset({
    "PATH", "NODE_OPTIONS", "NODE_PATH", "NODE_REPL_EXTERNAL_MODULE", "PYTHONPATH", "PYTHONHOME",
    "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONSAFEPATH", "BASH_ENV", "ENV", "ZDOTDIR",
    "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS", "PS4", "PERL5LIB", "PERL5OPT", "PERLLIB", "RUBYLIB",
    "RUBYOPT", "GEM_PATH", "GEM_HOME", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
    "GCONV_PATH", "LOCPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
    "DENO_DIR", "BUN_INSTALL", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL",
    "UV_DEFAULT_INDEX", "UV_INDEX", "NPM_CONFIG_REGISTRY", "NPM_CONFIG_USERCONFIG", "NPM_CONFIG_GLOBALCONFIG",
    "NPM_CONFIG_NODE_OPTIONS", "NPM_CONFIG_SCRIPT_SHELL", "COMSPEC", "PATHEXT",
})  # fmt: skip
HIJACKING_ENV_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")

SHELLS = frozenset({
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox", "rbash", "nu", "xonsh",
    "elvish", "cmd", "powershell", "pwsh",
})  # fmt: skip
# interpreter → flags whose value (or the rest of the argument) is a program
INLINE_CODE_FLAGS: Mapping[str, frozenset[str]] = {
    "python": frozenset({"-c"}),
    "pypy": frozenset({"-c"}),
    "node": frozenset({"-e", "--eval", "-p", "--print", "-pe"}),
    "nodejs": frozenset({"-e", "--eval", "-p", "--print", "-pe"}),
    "bun": frozenset({"-e", "--eval", "-p", "--print"}),
    "deno": frozenset({"eval", "repl"}),
    "ruby": frozenset({"-e"}),
    "perl": frozenset({"-e", "-E"}),
    "php": frozenset({"-r", "-a"}),
    "lua": frozenset({"-e"}),
    "luajit": frozenset({"-e"}),
    "rscript": frozenset({"-e"}),
    "osascript": frozenset({"-e"}),
    "tclsh": frozenset(),
}
ALWAYS_INLINE = frozenset({"awk", "gawk", "mawk", "nawk", "expect", "eval", "exec", "xargs", "find", "source"})
PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "runas", "gosu", "su-exec", "chroot", "nsenter", "unshare"})
DESTRUCTIVE = frozenset({
    "rm", "rmdir", "del", "erase", "rd", "dd", "shred", "wipefs", "fdisk", "sfdisk", "parted", "format", "mkfs",
    "mkswap", "truncate", "shutdown", "reboot", "halt", "poweroff", "init", "kill", "killall", "pkill", "chmod",
    "chown", "chgrp", "chattr", "crontab", "iptables", "nft", "mount", "umount", "systemctl", "launchctl",
    "diskutil", "reg", "bcdedit", "vssadmin", "cipher",
})  # fmt: skip
WRAPPERS = frozenset({"env", "nohup", "nice", "ionice", "timeout", "stdbuf", "setsid", "time", "command", "caffeinate"})
CONTAINERS = frozenset({"docker", "podman", "nerdctl", "ctr", "kubectl", "lxc", "singularity", "apptainer"})
DANGEROUS_CONTAINER_FLAGS = ("--privileged", "--pid=host", "--ipc=host", "--userns=host", "--cap-add", "--device")
NODE_RUNNERS = frozenset({"npx", "pnpx", "bunx"})  # `<runner> [opts] pkg ...`
SUB_RUNNERS: Mapping[str, frozenset[str]] = {  # `<tool> <sub> [opts] pkg ...`
    "pnpm": frozenset({"dlx", "exec"}),
    "yarn": frozenset({"dlx"}),
    "bun": frozenset({"x"}),
    "npm": frozenset({"exec", "x"}),
    "pipx": frozenset({"run"}),
    "uv": frozenset({"tool"}),  # `uv tool run`
}
RUNNER_VALUE_OPTIONS = frozenset({
    "-p", "--package", "--from", "--spec", "--with", "--python", "-w", "--index", "--index-url", "--extra-index-url",
    "--registry", "--cache", "--pip-args", "--node-options",
})  # fmt: skip
RUNNER_PACKAGE_OPTIONS = frozenset({"-p", "--package", "--from", "--spec"})
RUNNER_DENIED_OPTIONS = frozenset({"-c", "--call", "--shell-auto-fallback"})  # run a shell string
SOURCE_OPTIONS = frozenset({"--index", "--index-url", "--extra-index-url", "--registry", "--node-options"})
OWN_MODULE_PREFIX = "mcpstation."

_SHELL_META = re.compile(r"[;&|`$<>\n]")
_PIPE_TO_SHELL = re.compile(r"\|\s*(sudo\s+)?(\S*/)?(ba|z|da|k|fi)?sh\b", re.IGNORECASE)
_VERSIONED = re.compile(r"^(python|pypy|node|ruby|perl|php|lua|pip)[0-9.]*(w)?$")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class CommandVerdict:
    """The classifier's answer: `verdict` and a reason a person can read."""

    verdict: Verdict
    reason: str

    @property
    def exit_code(self) -> int:
        """0 allow · 1 confirm · 2 deny (`mcpstation policy command`)."""
        return {"allow": 0, "confirm": 1, "deny": 2}[self.verdict]

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict, "reason": self.reason}


def _deny(reason: str) -> CommandVerdict:
    return CommandVerdict("deny", reason)


def _confirm(reason: str) -> CommandVerdict:
    return CommandVerdict("confirm", reason)


def _allow(reason: str) -> CommandVerdict:
    return CommandVerdict("allow", reason)


def program_name(command: str) -> str:
    """The executable's base name, lower-cased, without Windows suffix or version (`python3.11` → `python`)."""
    name = PureWindowsPath(command).name if "\\" in command else PurePosixPath(command).name
    name = name.lower()
    for suffix in (".exe", ".cmd", ".bat", ".ps1"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    if name.startswith("mkfs"):
        return "mkfs"
    match = _VERSIONED.match(name)
    return match.group(1) if match else name


def normalise_package(spec: str) -> str:
    """A package spec without its version: `@scope/pkg@1.2` → `@scope/pkg`, `Pkg_Name==1` → `pkg-name`."""
    spec = spec.strip()
    if spec.startswith("@"):
        scope, _, rest = spec[1:].partition("/")
        return "@" + scope.lower() + "/" + rest.split("@", 1)[0].lower()
    name = re.split(r"[@=<>!~\[; ]", spec, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def _has_version(spec: str) -> bool:
    body = spec.strip()[1:] if spec.strip().startswith("@") else spec.strip()
    return any(ch in body for ch in "@=<>!~")


def _package_allowed(spec: str, allowed_packages: Collection[str]) -> bool:
    for entry in allowed_packages:
        if _has_version(entry):
            if entry.strip().lower() == spec.strip().lower():
                return True
        elif normalise_package(entry) == normalise_package(spec):
            return True
    return False


def _command_allowed(command: str, allowed_commands: Collection[str]) -> bool:
    name = program_name(command)
    return any(entry == command or ("/" not in entry and program_name(entry) == name) for entry in allowed_commands)


def _env_problem(env: Mapping[str, str]) -> CommandVerdict | None:
    for key in sorted(env):
        upper = key.upper()
        if upper in HIJACKING_ENV_KEYS or upper.startswith(HIJACKING_ENV_PREFIXES):
            return _deny(f"environment variable {key} can change which code the loader or runtime runs")
    return None


def _path_problem(command: str) -> CommandVerdict | None:
    if _SHELL_META.search(command):
        return _deny(f"command {command!r} contains shell syntax; put arguments in args, never a shell line")
    is_path = "/" in command or "\\" in command
    if not is_path:
        if any(ch.isspace() for ch in command):
            return _deny(f"command {command!r} contains spaces; put arguments in args")
        return None
    if not (os.path.isabs(command) or PureWindowsPath(command).is_absolute()):
        return _deny(f"command {command!r} is a relative path; it runs whatever that path means in the working dir")
    return _world_writable(command)


def _world_writable(command: str) -> CommandVerdict | None:
    path = os.path.abspath(command)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None  # missing: judged as an unknown executable later
    if mode & stat.S_IWOTH:
        return _deny(f"executable {path} is world-writable; anyone on this machine could replace it")
    parent = os.path.dirname(path)
    first = True
    while True:
        try:
            dir_mode = os.stat(parent).st_mode
        except OSError:
            break
        if dir_mode & stat.S_IWOTH and (first or not dir_mode & stat.S_ISVTX):
            return _deny(f"executable {path} lives under world-writable directory {parent}")
        first = False
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    return None


def _pipe_problem(args: Sequence[str]) -> CommandVerdict | None:
    for arg in args:
        if _PIPE_TO_SHELL.search(arg):
            return _deny(f"argument {arg!r} pipes into a shell")
    return None


def _short_flag_has(arg: str, letter: str) -> bool:
    return arg.startswith("-") and not arg.startswith("--") and len(arg) > 1 and letter in arg[1:]


def _shell_verdict(name: str, args: Sequence[str]) -> CommandVerdict:
    for arg in args:
        lowered = arg.lower()
        if name in {"cmd"} and lowered in {"/c", "/k", "/r"}:
            return _deny(f"{name} {arg} runs an inline command line")
        if name in {"powershell", "pwsh"} and lowered.lstrip("-/") in {
            "c", "command", "e", "ec", "enc", "encodedcommand", "commandwithargs", "cwa",
        }:  # fmt: skip
            return _deny(f"{name} {arg} runs inline code")
        if _short_flag_has(arg, "c") or lowered in {"--command", "--init-file", "--rcfile"}:
            return _deny(f"{name} {arg} runs inline shell code")
        if arg == "-s" or _short_flag_has(arg, "s") or arg == "-":
            return _deny(f"{name} {arg} reads its program from stdin")
    if not any(not arg.startswith("-") for arg in args):
        return _deny(f"{name} without a script would run the MCP messages on stdin as commands")
    script = next(arg for arg in args if not arg.startswith("-"))
    return _confirm(f"{name} runs the script {script!r}; nothing vouches for it")


STDIN_READERS = frozenset({"python", "pypy", "node", "nodejs", "ruby", "perl", "php", "lua", "luajit", "tclsh"})
NODE_VALUE_OPTIONS = frozenset({"-r", "--require", "--import", "--loader", "--experimental-loader", "--input-type"})


def _python_verdict(name: str, args: Sequence[str], allowed_packages: Collection[str]) -> CommandVerdict | None:
    """Scan Python's options the way Python does: short flags combine, `-W`/`-X` take a value, `-m` ends them."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "-":
            return _deny(f"{name} - reads its program from stdin")
        if not arg.startswith("-") or arg == "--":
            return None  # a script: judged by the allowlists, else confirmed
        if arg.startswith("--"):
            index += 1
            continue
        flags = arg[1:]
        for position, letter in enumerate(flags):
            if letter == "c":
                return _deny(f"{name} {arg} runs inline code")
            if letter in "WX":
                if position == len(flags) - 1:
                    index += 1
                break
            if letter == "m":
                module = flags[position + 1 :] or (args[index + 1] if index + 1 < len(args) else "")
                return _module_verdict(name, module, allowed_packages)
        index += 1
    return _deny(f"{name} without a script reads its program from stdin (the MCP messages)")


def _module_verdict(name: str, module: str, allowed_packages: Collection[str]) -> CommandVerdict:
    if not module:
        return _deny(f"{name} -m without a module")
    if module.startswith(OWN_MODULE_PREFIX):
        return _allow(f"{name} -m {module} is one of the station's own servers")
    if _package_allowed(module, allowed_packages):
        return _allow(f"module {module!r} is on the allowlist")
    return _confirm(f"{name} runs module {module!r}, which is not on the allowlist")


def _interpreter_verdict(name: str, args: Sequence[str], allowed_packages: Collection[str]) -> CommandVerdict | None:
    """Deny inline code or a program on stdin; None when the interpreter runs a script."""
    if name in {"python", "pypy"}:
        return _python_verdict(name, args, allowed_packages)
    flags = INLINE_CODE_FLAGS[name]
    index = 0
    while index < len(args):
        arg = args[index]
        head, has_value, inline = arg.partition("=")
        if head.lower() in flags:
            return _deny(f"{name} {arg} runs inline code")
        if arg == "-":
            return _deny(f"{name} - reads its program from stdin")
        if head in NODE_VALUE_OPTIONS:
            value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
            if value.lower().startswith("data:"):
                return _deny(f"{name} {head} with a data: URL runs inline code")
            index += 1 if has_value else 2
            continue
        if not arg.startswith("-"):
            if name == "deno" and arg in {"run", "serve", "task", "x"}:
                index += 1
                continue
            return None
        index += 1
    if name in STDIN_READERS:
        return _deny(f"{name} without a script reads its program from stdin (the MCP messages)")
    return _confirm(f"{name} without a script")


def _runner_packages(args: Sequence[str], *, node: bool) -> tuple[list[str], CommandVerdict | None]:
    """Every package a runner would fetch: `--package`/`--from`/`--spec`/`--with` values and the first positional."""
    index = 0
    packages: list[str] = []
    while index < len(args):
        arg = args[index]
        head, has_value, inline = arg.partition("=")
        if node and head in RUNNER_DENIED_OPTIONS:
            return [], _deny(f"{arg} makes the runner execute a shell string")
        if head in SOURCE_OPTIONS:
            return [], _confirm(f"{head} changes where the package comes from or how it runs")
        if head in RUNNER_VALUE_OPTIONS:
            value = inline if has_value else (args[index + 1] if index + 1 < len(args) else "")
            if head in RUNNER_PACKAGE_OPTIONS:
                packages.append(value)
            elif head in {"--with", "-w"}:
                packages.extend(part for part in value.split(",") if part.strip())
            index += 1 if has_value else 2
            continue
        if arg.startswith("-"):
            index += 1
            continue
        if not any(head in RUNNER_PACKAGE_OPTIONS for head in (a.partition("=")[0] for a in args[:index])):
            packages.append(arg)
        break
    return packages, None


def _runner_verdict(
    label: str, args: Sequence[str], allowed_packages: Collection[str], *, node: bool
) -> CommandVerdict:
    packages, problem = _runner_packages(args, node=node)
    if problem is not None:
        return problem
    if not packages:
        return _confirm(f"{label} without a package")
    missing = [p for p in packages if not _package_allowed(p, allowed_packages)]
    if not missing:
        listed = ", ".join(repr(p) for p in packages)
        return _allow(f"{label} runs {listed}, on the allowlist")
    listed = ", ".join(repr(p) for p in missing)
    return _confirm(f"{label} would download and run {listed}, not on the allowlist")


def _container_verdict(name: str, args: Sequence[str]) -> CommandVerdict:
    for index, arg in enumerate(args):
        lowered = arg.lower()
        if lowered.startswith(DANGEROUS_CONTAINER_FLAGS) or lowered in {"--network=host", "--net=host"}:
            return _deny(f"{name} {arg} gives the container the host's privileges")
        if lowered in {"-v", "--volume", "--mount"} and index + 1 < len(args):
            source = args[index + 1].split(":", 1)[0].removeprefix("type=bind,source=").removeprefix("source=")
            if source in {"/", "/etc", "/root", "/var/run/docker.sock", "/run/docker.sock"}:
                return _deny(f"{name} mounts {source} from the host")
    return _confirm(f"{name} runs a container image; a person should check the image and its options")


WRAPPER_VALUE_OPTIONS: Mapping[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
}


def _unwrap(name: str, args: Sequence[str], env: dict[str, str]) -> tuple[str, list[str]] | CommandVerdict:
    """Skip a wrapper's options and `VAR=value` assignments: the command it runs and its args."""
    takes_value = WRAPPER_VALUE_OPTIONS.get(name, frozenset())
    index = 0
    while index < len(args):
        arg = args[index]
        if name == "env" and (arg in {"-S", "--split-string"} or arg.startswith(("-S", "--split-string="))):
            return _deny("env -S splits a string into a command line")
        if name == "env" and _ENV_ASSIGNMENT.match(arg):
            key, _, value = arg.partition("=")
            env[key] = value
        elif arg in takes_value:
            index += 1
        elif arg.startswith("-") or (name == "timeout" and re.fullmatch(r"[0-9.]+[smhd]?", arg)):
            pass
        else:
            return arg, list(args[index + 1 :])
        index += 1
    return _confirm(f"{name} without a command")


def classify_command(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    allowed_packages: Collection[str] = (),
    allowed_commands: Collection[str] = (),
) -> CommandVerdict:
    """Classify a stdio server's command line without running anything.

    `allowed_packages` names packages (npm, PyPI) and Python modules that package runners and
    `python -m` may start; an entry without a version admits any version. `allowed_commands` names
    executables (base names, or exact absolute paths) the deployment vouches for.
    """
    if not command.strip():
        return _deny("the command is empty")
    env_copy = dict(env)
    problem = _env_problem(env_copy) or _path_problem(command) or _pipe_problem(args)
    if problem is not None:
        return problem
    name = program_name(command)
    if name in PRIVILEGE:
        return _deny(f"{name} runs a command with other privileges")
    if name in WRAPPERS:
        inner = _unwrap(name, args, env_copy)
        if isinstance(inner, CommandVerdict):
            return inner
        problem = _env_problem(env_copy)
        if problem is not None:
            return problem
        verdict = classify_command(
            inner[0], inner[1], env_copy, allowed_packages=allowed_packages, allowed_commands=allowed_commands
        )
        return CommandVerdict(verdict.verdict, f"{name} runs {inner[0]!r}: {verdict.reason}")
    if name in DESTRUCTIVE:
        return _deny(f"{name} is a destructive command, not an MCP server")
    if name in ALWAYS_INLINE:
        return _deny(f"{name} runs a program given on its command line")
    if name in SHELLS:
        return _shell_verdict(name, args)
    if name in INLINE_CODE_FLAGS:
        verdict = _interpreter_verdict(name, args, allowed_packages)
        if verdict is not None:
            return verdict
    if name in CONTAINERS:
        return _container_verdict(name, args)
    if _command_allowed(command, allowed_commands):
        return _allow(f"command {name!r} is on the allowlist")
    if name in NODE_RUNNERS:
        return _runner_verdict(name, args, allowed_packages, node=True)
    if name == "uvx":
        return _runner_verdict(name, args, allowed_packages, node=False)
    if name in SUB_RUNNERS and args and args[0] in SUB_RUNNERS[name]:
        rest = list(args[1:])
        if name == "uv":
            if not rest or rest[0] != "run":
                return _confirm(f"uv tool {' '.join(rest[:1])} is not a server launch")
            rest = rest[1:]
        label = "uv tool run" if name == "uv" else f"{name} {args[0]}"
        return _runner_verdict(label, rest, allowed_packages, node=name in {"npm", "pnpm", "yarn", "bun"})
    if name in INLINE_CODE_FLAGS:
        return _confirm(f"{name} runs a script that nothing vouches for")
    return _confirm(f"unknown executable {command!r}; not on the allowlist")
