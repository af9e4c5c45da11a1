"""What the classifier knows while it judges one command: the allowlists and where the command runs."""

from __future__ import annotations

from dataclasses import dataclass

from mcpstation.policy._packages import AllowedPackage
from mcpstation.policy._paths import reads_stdin, world_writable_reason
from mcpstation.policy._verdicts import CommandVerdict, Rule, confirm, deny


@dataclass(frozen=True, slots=True)
class Context:
    """The allowlists, the server's own working directory, and how deep in wrappers the command sits."""

    allowed_packages: tuple[AllowedPackage, ...]
    allowed_commands: tuple[str, ...]
    cwd: str | None = None
    in_container: bool = False  # host paths mean nothing inside a container: judge by name only
    depth: int = 0


def script_verdict(label: str, script: str, context: Context) -> CommandVerdict:
    """A script run by a shell or interpreter: refused when read from stdin or swappable, else a person's call."""
    if reads_stdin(script):
        return deny(Rule.STDIN_PROGRAM, f"{label} {script} reads its program from stdin (the MCP messages)")
    if not context.in_container and (reason := world_writable_reason(script, base=context.cwd)):
        return deny(Rule.WORLD_WRITABLE, f"{label} runs a script that anyone could swap: {reason}")
    return confirm(Rule.SCRIPT, f"{label} runs the script {script!r}; nothing vouches for it")
