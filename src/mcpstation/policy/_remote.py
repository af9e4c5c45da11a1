"""Commands that reach or open the network: relays, reverse shells, ssh, git and debuggers.

- A relay between stdio and a socket (`nc`, `socat`, `openssl s_client`, ...) is refused: it is how
  a reverse shell is built, and it would carry MCP traffic past the URL guard.
- ssh and git options that run a local command (`ProxyCommand`, `core.sshCommand`, `--upload-pack`,
  `ext::` URLs, ...) or open tunnels are refused; an ssh server command otherwise waits for a person.
- A debugger listening beyond loopback is refused (anyone who reaches the port runs code); one on
  loopback waits for a person.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from mcpstation.policy._paths import world_writable_reason
from mcpstation.policy._verdicts import CommandVerdict, Rule, confirm, deny

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback", "localhost.localdomain"})


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or literal, brackets allowed) is this machine only; empty is not."""
    host = host.strip().strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str | None, str]:
    """`host:port`, `[v6]:port`, `:port`, `port`, `host` → (host or None when only a port, port)."""
    value = value.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        return host, rest.lstrip(":")
    if value.isdigit():
        return None, value
    if value.count(":") > 1:
        return value, ""  # a bare IPv6 literal
    host, _, port = value.rpartition(":")
    if not _:
        return value, ""
    return host, port


# -- relays -------------------------------------------------------------------------------------------


def relay_verdict(name: str, args: Sequence[str]) -> CommandVerdict:
    """Every relay is refused; one that runs a program for the far end is named a reverse shell."""
    for arg in args:
        lowered = arg.lower()
        head = lowered.partition("=")[0]
        if name in {"nc", "ncat", "netcat", "nc64", "pwncat", "cryptcat", "sbd", "gs-netcat", "rcat", "dbd"}:
            if head in {"--exec", "--sh-exec", "--lua-exec", "--cmd-exec"} or (
                arg.startswith("-") and not arg.startswith("--") and any(ch in arg[1:] for ch in "ec")
            ):
                return deny(Rule.REVERSE_SHELL, f"{name} {arg} runs a program for whoever is at the other end")
        if name in {"socat", "websocat"} and re.match(r"^(exec|system|shell|sh-c|cmd)[:,]", lowered):
            return deny(Rule.REVERSE_SHELL, f"{name} {arg} runs a program for whoever is at the other end")
    return deny(
        Rule.NETWORK_RELAY,
        f"{name} relays stdio to the network: the shape of a reverse shell, and a way around the URL guard; "
        "add the server by its URL instead",
    )


# -- ssh ----------------------------------------------------------------------------------------------

SSH_VALUE_LETTERS = "BbcDEeFIiJLlmOoPpQRSWw"
SSH_OPTIONS_RUNNING_COMMANDS = frozenset({
    "proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand", "pkcs11provider",
    "securitykeyprovider", "match", "include", "proxyusefdpass",
})  # fmt: skip
SSH_OPTIONS_FORWARDING = frozenset({
    "localforward", "remoteforward", "dynamicforward", "tunnel", "tunneldevice", "gatewayports", "forwardagent",
    "forwardx11", "forwardx11trusted", "stdioforward", "permitremoteopen",
})  # fmt: skip


def _ssh_option(name: str, value: str) -> CommandVerdict | None:
    parts = re.split(r"[=\s]+", value.strip(), maxsplit=1)
    key, setting = parts[0].lower(), (parts[1] if len(parts) > 1 else "").strip().lower()
    if key == "proxycommand" and setting == "none":
        return None
    if key in SSH_OPTIONS_RUNNING_COMMANDS:
        return deny(Rule.COMMAND_OPTION, f"{name} -o {value} runs a local command or loads code")
    if key in SSH_OPTIONS_FORWARDING:
        return deny(Rule.NETWORK_RELAY, f"{name} -o {value} opens a tunnel or forwards access to this machine")
    return None


def ssh_verdict(name: str, args: Sequence[str]) -> CommandVerdict:
    """Refuse command-running options, tunnels and forwarding; a remote command waits for a person.

    Like OpenSSH, options are read before and after the host; the remote command starts at the
    first word after the host that is not an option.
    """
    host: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--" or not arg.startswith("-") or arg == "-":
            if host is not None:
                break
            if arg == "--":
                index += 1
                if index >= len(args):
                    break
                arg = args[index]
            host = arg
            index += 1
            continue
        flags = arg[1:]
        for position, letter in enumerate(flags):
            if letter in "AXYg":
                return deny(Rule.NETWORK_RELAY, f"{name} -{letter} forwards access to this machine to the remote side")
            if letter not in SSH_VALUE_LETTERS:
                continue
            value = flags[position + 1 :]
            if not value:
                index += 1
                value = args[index] if index < len(args) else ""
            if letter in "LRDWw":
                return deny(Rule.NETWORK_RELAY, f"{name} -{letter} {value} opens a tunnel")
            if letter == "o" and (problem := _ssh_option(name, value)):
                return problem
            if letter == "F" and value not in {"/dev/null", "none"}:
                return deny(Rule.COMMAND_OPTION, f"{name} -F {value} reads options (ProxyCommand, ...) from a file")
            if letter == "I":
                return deny(Rule.COMMAND_OPTION, f"{name} -I {value} loads a PKCS#11 library into ssh")
            break
        index += 1
    if host is None or index >= len(args):
        return deny(
            Rule.STDIN_PROGRAM, f"{name} without a remote command runs a login shell there, fed the MCP messages"
        )
    return confirm(Rule.REMOTE_HOST, f"{name} runs {args[index]!r} on {host}; nothing vouches for it")


# -- git ----------------------------------------------------------------------------------------------

GIT_COMMAND_OPTIONS = ("upload-pack", "receive-pack", "exec", "exec-path", "config", "config-env", "template",
                       "extcmd")  # fmt: skip
GIT_UPLOAD_PACK_SUBCOMMANDS = frozenset({"clone", "fetch", "pull", "ls-remote", "archive", "remote"})
GIT_COMMAND_SUBCOMMANDS = frozenset({"daemon", "instaweb", "shell", "filter-branch", "bisect", "submodule", "difftool",
                                     "mergetool", "rebase", "web--browse", "credential", "upload-pack",
                                     "receive-pack", "http-backend"})  # fmt: skip


def git_verdict(args: Sequence[str]) -> CommandVerdict | None:
    """Refuse git options and URLs that run commands; None when nothing here objects."""
    subcommand: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        lowered = arg.lower()
        if lowered.startswith(("ext::", "fd::")) or "::" in lowered.split("/", 1)[0]:
            return deny(Rule.COMMAND_OPTION, f"git URL {arg!r} runs a command (remote helper transport)")
        if arg.startswith("-c"):
            value = arg[2:] or (args[index + 1] if index + 1 < len(args) else "")
            return deny(
                Rule.COMMAND_OPTION,
                f"git -c {value} sets configuration, and keys such as core.sshCommand, core.fsmonitor or alias.* "
                "run commands",
            )
        if arg.startswith("--") and len(arg) > 4:
            option = arg[2:].partition("=")[0].lower()
            if any(full.startswith(option) for full in GIT_COMMAND_OPTIONS):
                return deny(Rule.COMMAND_OPTION, f"git {arg} names a program for git to run, or its configuration")
            if option in {"git-dir", "work-tree"}:
                value = arg.partition("=")[2] or (args[index + 1] if index + 1 < len(args) else "")
                if reason := world_writable_reason(value):
                    return deny(Rule.WORLD_WRITABLE, f"git {option} {reason}; its config could run commands")
        if subcommand in GIT_UPLOAD_PACK_SUBCOMMANDS and (arg == "-u" or arg.startswith("-u")):
            return deny(Rule.COMMAND_OPTION, f"git {subcommand} {arg} names a program to run as upload-pack")
        if subcommand in {"rebase", "difftool"} and (arg == "-x" or arg.startswith("-x")):
            return deny(Rule.COMMAND_OPTION, f"git {subcommand} {arg} runs a command")
        if arg == "-C" and subcommand is None and index + 1 < len(args):
            if reason := world_writable_reason(args[index + 1]):
                return deny(Rule.WORLD_WRITABLE, f"git -C {reason}; its config could run commands")
            index += 1
        elif subcommand is None and not arg.startswith("-"):
            subcommand = lowered
            if subcommand in GIT_COMMAND_SUBCOMMANDS:
                return deny(Rule.COMMAND_OPTION, f"git {subcommand} runs commands or serves the repository")
        index += 1
    return None


# -- debuggers ----------------------------------------------------------------------------------------

INSPECT_OPTIONS = ("--inspect", "--inspect-brk", "--inspect-wait", "--inspect-port", "--debug", "--debug-brk",
                   "--debug-port", "--inspect-publish-uid")  # fmt: skip


def _listen_verdict(label: str, host: str | None, *, default_all: bool = False) -> CommandVerdict:
    if host is None:
        host = "" if default_all else "127.0.0.1"
    if is_loopback(host):
        return confirm(Rule.LOCAL_DEBUGGER, f"{label} opens a debugger on loopback: any local process can run code")
    shown = host or "every interface"
    return deny(Rule.REMOTE_DEBUGGER, f"{label} opens a debugger on {shown}: whoever reaches it runs code")


def inspect_verdict(name: str, args: Sequence[str]) -> CommandVerdict | None:
    """Node, Bun and Deno `--inspect[=host:port]` flags before the script; None without one."""
    for index, arg in enumerate(args):
        if not arg.startswith("-"):
            return None
        head, has_value, value = arg.partition("=")
        if head.lower() not in INSPECT_OPTIONS:
            continue
        if not has_value and head.lower() in {"--inspect-port", "--debug-port"} and index + 1 < len(args):
            value, has_value = args[index + 1], "="
        host, _ = split_host(value) if has_value else (None, "")
        return _listen_verdict(f"{name} {arg}", host)
    return None


def debugger_program_verdict(name: str, args: Sequence[str]) -> CommandVerdict:
    """gdbserver, dlv, debugpy, ptvsd, rdbg and friends as the command."""
    if name == "gdbserver":
        target = next((a for a in args if not a.startswith("-")), "")
        host, _ = split_host(target)
        verdict = _listen_verdict(f"{name} {target}", host, default_all=True)
        if verdict.rule is Rule.LOCAL_DEBUGGER:
            return verdict
        return deny(Rule.REMOTE_DEBUGGER, f"{name} is a remote debugger: whoever reaches it runs code")
    listen_options = {"--listen", "--host", "--connect", "--addr", "--address"}
    for index, arg in enumerate(args):
        head, has_value, value = arg.partition("=")
        if head in listen_options:
            value = value if has_value else (args[index + 1] if index + 1 < len(args) else "")
            host, _ = split_host(value)
            return _listen_verdict(f"{name} {head} {value}", host)
    return confirm(Rule.LOCAL_DEBUGGER, f"{name} runs a program under a debugger; nothing vouches for it")


def jdwp_verdict(args: Sequence[str]) -> CommandVerdict | None:
    """`java -agentlib:jdwp=...address=*:5005`, `-Xrunjdwp:`, unauthenticated JMX; None without one."""
    for arg in args:
        lowered = arg.lower()
        if lowered.startswith(("-agentlib:jdwp", "-xrunjdwp", "-agentpath:")) and "jdwp" in lowered:
            address = re.search(r"address=([^,]+)", lowered)
            host, _ = split_host(address.group(1)) if address else (None, "")
            host = "" if host == "*" else host
            return _listen_verdict(f"java {arg}", host)
        if lowered.startswith("-dcom.sun.management.jmxremote.authenticate=false"):
            return deny(Rule.REMOTE_DEBUGGER, f"java {arg} opens JMX without a password: whoever reaches it runs code")
    return None
