"""mcpstation: one runtime that connects an agent to many MCP servers."""

from mcpstation.catalog import Catalog, CatalogTool, ToolResult, anthropic_tools, openai_tools
from mcpstation.config.loader import load_config
from mcpstation.config.models import ServerSpec, StationConfig, StationSettings
from mcpstation.connection import ConnectionState
from mcpstation.errors import (
    CallError,
    ConfigError,
    ServerError,
    StationError,
    ToolNotFound,
)
from mcpstation.station import ServerStatus, Station, StationStatus

__all__ = [
    "CallError",
    "Catalog",
    "CatalogTool",
    "ConfigError",
    "ConnectionState",
    "ServerError",
    "ServerSpec",
    "ServerStatus",
    "Station",
    "StationConfig",
    "StationError",
    "StationSettings",
    "StationStatus",
    "ToolNotFound",
    "ToolResult",
    "anthropic_tools",
    "load_config",
    "openai_tools",
]
