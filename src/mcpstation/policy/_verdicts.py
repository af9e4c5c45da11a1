"""The classifier's answer: a verdict, the rule that decided it, and a reason a person can read."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum


class Verdict(StrEnum):
    """`allow` starts at once, `confirm` waits for a person, `deny` never starts."""

    ALLOW = "allow"
    CONFIRM = "confirm"
    DENY = "deny"


class Rule(StrEnum):
    """Which rule decided a verdict; tests and callers read this, never the reason's words."""

    # deny
    EMPTY_COMMAND = "empty_command"
    SHELL_SYNTAX = "shell_syntax"
    HOST_VARIABLE = "host_variable"  # a run-time add refers to the station's own variables
    RELATIVE_PATH = "relative_path"
    WORLD_WRITABLE = "world_writable"
    ENV_HIJACK = "env_hijack"
    INLINE_CODE = "inline_code"
    STDIN_PROGRAM = "stdin_program"
    PIPE_TO_SHELL = "pipe_to_shell"
    PRIVILEGE = "privilege"
    DESTRUCTIVE = "destructive"
    REVERSE_SHELL = "reverse_shell"
    NETWORK_RELAY = "network_relay"
    DOWNLOADER = "downloader"
    REMOTE_DEBUGGER = "remote_debugger"
    PACKAGE_INSTALL = "package_install"
    REMOTE_CODE = "remote_code"
    COMMAND_OPTION = "command_option"
    CONTAINER_SHELL = "container_shell"
    CONTAINER_PRIVILEGE = "container_privilege"
    INTERACTIVE = "interactive"
    TOO_DEEP = "too_deep"
    # confirm
    PACKAGE_NOT_ALLOWED = "package_not_allowed"
    PACKAGE_SOURCE = "package_source"
    MODULE_NOT_ALLOWED = "module_not_allowed"
    SCRIPT = "script"
    CONTAINER = "container"
    UNKNOWN_EXECUTABLE = "unknown_executable"
    LOCAL_DEBUGGER = "local_debugger"
    WORKING_DIRECTORY = "working_directory"
    REMOTE_HOST = "remote_host"
    UNKNOWN_OPTION = "unknown_option"
    INHERITED_ENV = "inherited_env"  # a server added at run time asks for some of the station's variables
    TRANSPORT_ENV = "transport_env"  # a run-time add sets proxies or TLS trust
    SENSITIVE_PATH = "sensitive_path"  # a run-time add hands its server the root, the home folder or a secret store
    # allow
    ALLOWED_PACKAGE = "allowed_package"
    ALLOWED_MODULE = "allowed_module"
    OWN_SERVER = "own_server"
    ALLOWED_COMMAND = "allowed_command"


_SEVERITY = {Verdict.ALLOW: 0, Verdict.CONFIRM: 1, Verdict.DENY: 2}


@dataclass(frozen=True, slots=True)
class CommandVerdict:
    """The classifier's answer: `verdict`, the `rule` behind it and a reason a person can read."""

    verdict: Verdict
    reason: str
    rule: Rule

    @property
    def exit_code(self) -> int:
        """0 allow · 1 confirm · 2 deny (`mcpstation policy command`)."""
        return _SEVERITY[self.verdict]

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict.value, "rule": self.rule.value, "reason": self.reason}

    def within(self, label: str) -> CommandVerdict:
        """The same verdict, its reason prefixed with where it was found (`env runs 'sh': ...`)."""
        return CommandVerdict(self.verdict, f"{label}: {self.reason}", self.rule)


def deny(rule: Rule, reason: str) -> CommandVerdict:
    return CommandVerdict(Verdict.DENY, reason, rule)


def confirm(rule: Rule, reason: str) -> CommandVerdict:
    return CommandVerdict(Verdict.CONFIRM, reason, rule)


def allow(rule: Rule, reason: str) -> CommandVerdict:
    return CommandVerdict(Verdict.ALLOW, reason, rule)


def worst(verdicts: Sequence[CommandVerdict]) -> CommandVerdict:
    """The most severe verdict; the first of equals."""
    return max(verdicts, key=lambda v: _SEVERITY[v.verdict])


# judge(command, args) -> verdict: how rule modules hand an inner command back to the classifier
Judge = Callable[[str, Sequence[str]], CommandVerdict]
