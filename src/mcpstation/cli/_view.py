"""`StationView`: a station as the CLI's commands see it, whoever answers.

Every command is written once, over this view. Two implementations stand behind it, as a
transport stands behind an httpx client: `RemoteView` (`cli/_remote.py`) asks the station running
for the data directory over its control socket, and `LocalView` (`cli/_local.py`) runs a station
in this process for the one command. Answers are the JSON shapes of the HTTP API, which are the
library's `to_dict()` shapes, so a command renders either answer alike.

Errors are raised, not returned: a `StationError` (the running station's error answers arrive as
`ErrorAnswer`, with their own type's name and exit code), or `Refusal` for a prompt or resource
request that produced no answer.

Imported by every command that asks a station: the standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from mcpstation.outcomes import Outcome

T = TypeVar("T")

Shape = dict[str, Any]


class ProgressFn(Protocol):
    """A call's progress: done so far, the total when known, the server's message (the SDK's `ProgressFnT`)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class Confirm(Protocol):
    """Asks the person at the terminal the station's `question` about a call (y/N): True runs the call."""

    async def __call__(self, question: str) -> bool: ...


# The fields of an audited call and of a management action, as `audit --json` shows them.
CALL_FIELDS = (
    "id", "server", "tool", "caller", "outcome", "duration_s", "argument_bytes", "argument_sha256", "error", "at",
)  # fmt: skip
ACTION_FIELDS = ("at", "actor", "action", "server", "detail")


class Needs(enum.Enum):
    """What a command needs of a station started for it alone (a running station has it all)."""

    STORE = "store"  # the store only: no station, no server
    LISTINGS = "listings"  # the catalog: servers whose listing is cached stay stopped until a request needs them
    SERVERS = "servers"  # every server started and settled


class ServerVerb(enum.Enum):
    """A change to a server made at run time (`servers add/remove/...`)."""

    ADD = "add"
    REMOVE = "remove"
    ENABLE = "enable"
    DISABLE = "disable"
    RELOAD = "reload"
    APPROVE = "approve"


@dataclass(frozen=True, slots=True)
class AuditQuery:
    """Which audit records to read: `kind` is calls, actions or all; `since` an aware time."""

    server: str | None
    since: datetime | None
    kind: str
    limit: int


@dataclass(frozen=True, slots=True)
class CacheAge:
    """Servers whose listing came from the catalog cache (they did not run), and when the oldest was listed."""

    servers: tuple[str, ...]
    oldest: datetime


class Refusal(Exception):
    """A prompt or resource request that produced no answer: its outcome and why."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


class StationView(Protocol):
    """What a command asks of a station; see the module docstring."""

    @property
    def reports_progress(self) -> bool:
        """Whether `call_tool` reports progress (the control socket carries none)."""
        ...

    async def status(self) -> Shape:
        """`StationStatus.to_dict()`: every server, the conflicts, the LLM surface."""
        ...

    async def reconnect(self, name: str | None) -> Shape:
        """Reconnect `name`, or every failed server: `{reconnected, **status}` once they settled."""
        ...

    async def tools(self) -> list[Shape]:
        """The tools the CLI may see, each with its estimated schema `tokens`."""
        ...

    async def search_tools(self, query: str, *, limit: int, server: str | None) -> list[Shape]: ...

    async def approve_tool(self, server: str, tool: str) -> bool:
        """Approve a pinned tool's changed definition; False when there is no such pinned tool."""
        ...

    async def prompts(self) -> list[Shape]: ...

    async def resources(self) -> Shape:
        """`{"resources": [...], "templates": [...]}`."""
        ...

    async def catalog_age(self) -> CacheAge | None:
        """Which servers' listings answered from the catalog cache, without running; None: all live."""
        ...

    async def refresh(self) -> None:
        """Start the servers whose listing came from the catalog cache, so their lists are live (and cached anew)."""
        ...

    async def call_tool(
        self,
        name: str,
        arguments: Shape,
        *,
        timeout_s: float | None,
        progress: ProgressFn | None,
        confirm: Confirm | None,
    ) -> Shape:
        """`ToolResult.to_dict()`, whatever the outcome; `confirm` asks the person at the terminal
        whether a call of a confirm-tier tool may run (without it, such a call is refused)."""
        ...

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Shape:
        """The protocol's `GetPromptResult` as JSON (no nulls). Raises: Refusal."""
        ...

    async def read_resource(self, uri: str) -> Shape:
        """The protocol's `ReadResourceResult` as JSON (no nulls). Raises: Refusal."""
        ...

    async def change_server(self, verb: ServerVerb, name: str, entry: Shape | None = None) -> Shape:
        """`ServerChange.to_dict()`; `entry` is the new server's config entry (ADD only).

        Raises:
            UsageError: `entry` is not a valid server entry.
        """
        ...

    async def audit(self, query: AuditQuery) -> dict[str, list[Shape]]:
        """`{"calls": [...], "actions": [...]}`, newest first, in `CALL_FIELDS` and `ACTION_FIELDS`."""
        ...


def complete_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends, without an event loop.

    A command over `RemoteView` is such a coroutine: the view blocks on a local socket and awaits
    nothing, so the command runs to its end at the first step. This keeps anyio and asyncio out of
    the running station's path (`cli/_control_client.py` says why).

    Raises:
        RuntimeError: the coroutine suspended (it awaited something that needs an event loop).
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coroutine.close()
    raise RuntimeError("a command on the running station awaited something that needs an event loop")
