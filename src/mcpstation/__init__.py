"""mcpstation: one runtime that connects an agent to many MCP servers."""

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
from mcpstation.errors import (
    CallError,
    ConfigError,
    ServerError,
    StationError,
    ToolNotFound,
)
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
