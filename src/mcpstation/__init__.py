"""mcpstation: one runtime that connects an agent to many MCP servers.

The names below are imported when first used (PEP 562), so `import mcpstation.cli` (the command
line, whose `--help` must be quick) does not load the station, the SDK and the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.catalog import (
        Catalog,
        CatalogTool,
        CompletionResult,
        PromptResult,
        ResourceResult,
        SubscriptionResult,
        ToolResult,
        anthropic_tools,
        openai_tools,
    )
    from mcpstation.config.loader import load_config
    from mcpstation.config.models import InProcessServerSpec, Role, ServerSpec, StationConfig, StationSettings
    from mcpstation.connection import ConnectionState
    from mcpstation.errors import CallError, ConfigError, ServerError, StationError, ToolNotFound
    from mcpstation.outcomes import Outcome
    from mcpstation.pipeline import Caller, Face
    from mcpstation.station import Station
    from mcpstation.status import ServerState, ServerStatus, StationStatus

__all__ = [
    "CallError",
    "Caller",
    "Catalog",
    "CatalogTool",
    "CompletionResult",
    "ConfigError",
    "ConnectionState",
    "Face",
    "InProcessServerSpec",
    "Outcome",
    "PromptResult",
    "ResourceResult",
    "Role",
    "ServerError",
    "ServerSpec",
    "ServerState",
    "ServerStatus",
    "Station",
    "StationConfig",
    "StationError",
    "StationSettings",
    "StationStatus",
    "SubscriptionResult",
    "ToolNotFound",
    "ToolResult",
    "anthropic_tools",
    "load_config",
    "openai_tools",
]

_HOMES: dict[str, str] = {
    **dict.fromkeys(
        (
            "Catalog",
            "CatalogTool",
            "CompletionResult",
            "PromptResult",
            "ResourceResult",
            "SubscriptionResult",
            "ToolResult",
            "anthropic_tools",
            "openai_tools",
        ),
        "mcpstation.catalog",
    ),
    "load_config": "mcpstation.config.loader",
    **dict.fromkeys(
        ("InProcessServerSpec", "Role", "ServerSpec", "StationConfig", "StationSettings"), "mcpstation.config.models"
    ),
    "ConnectionState": "mcpstation.connection",
    **dict.fromkeys(("CallError", "ConfigError", "ServerError", "StationError", "ToolNotFound"), "mcpstation.errors"),
    "Outcome": "mcpstation.outcomes",
    **dict.fromkeys(("Caller", "Face"), "mcpstation.pipeline"),
    "Station": "mcpstation.station",
    **dict.fromkeys(("ServerState", "ServerStatus", "StationStatus"), "mcpstation.status"),
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
