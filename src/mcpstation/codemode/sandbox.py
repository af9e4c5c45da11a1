"""What a sandbox run is given and how it ends, apart from the sandbox library (which `_monty.py` alone imports)."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from mcpstation.codemode.limits import Limit

HostFunction = Callable[[tuple[Any, ...], dict[str, Any]], Awaitable[Any]]
"""A function the script may call: answers with its value, or raises the exception the script sees."""

Pauses = Callable[[str, tuple[Any, ...], dict[str, Any]], bool]
"""Whether the run waits, suspended at this call, until it is answered: `(function, args, kwargs)`."""


class Ending(enum.StrEnum):
    """How a run ended."""

    COMPLETED = "completed"
    RAISED = "raised"  # an exception the script did not catch
    REJECTED = "rejected"  # syntax or type check: nothing ran
    LIMIT = "limit"
    CRASHED = "crashed"  # the worker died (the pool replaces it)


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    cpu_s: float
    memory_bytes: int
    recursion_depth: int
    tool_calls: int
    sleep_s: float


@dataclass(frozen=True, slots=True)
class SandboxEnd:
    ending: Ending
    value: Any = None
    error: str | None = None
    limit: Limit | None = None
