"""The tool-call path as a stack of small layers, each `(handler) -> handler`.

`Station.call_tool` resolves the public name, then hands a `CallRequest` to the composed
handler: policy, audit and result bounds wrap the innermost handler that talks to the server.
The stack is composed in one visible place (`Station._build_call_path`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.client.session import ProgressFnT

from mcpstation.catalog import CatalogTool, ToolResult


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling: shown in audit records and used for visibility by role."""

    identity: str = "library"
    role: str = "admin"


@dataclass(frozen=True, slots=True)
class CallRequest:
    """One resolved tool call on its way to a server."""

    entry: CatalogTool
    arguments: dict[str, Any]
    caller: Caller
    timeout_s: float | None = None
    progress: ProgressFnT | None = None

    @property
    def name(self) -> str:
        return self.entry.name

    def refuse(self, reason: str) -> ToolResult:
        """A result telling the LLM the call was refused, and why (`{"success": false, "error"}` too)."""
        entry = self.entry
        return ToolResult(
            ok=False,
            name=entry.name,
            server=entry.server,
            tool=entry.tool,
            structured={"success": False, "error": reason},
            error=reason,
        )


CallHandler = Callable[[CallRequest], Awaitable[ToolResult]]
CallLayer = Callable[[CallHandler], CallHandler]


def compose(innermost: CallHandler, layers: Sequence[CallLayer]) -> CallHandler:
    """Wrap `innermost` so that `layers[0]` runs first (outermost) and the last runs nearest."""
    handler = innermost
    for layer in reversed(layers):
        handler = layer(handler)
    return handler
