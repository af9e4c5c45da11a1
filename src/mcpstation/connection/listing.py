"""What one server offered at its last discovery: the connection's product, the catalog's input."""

from __future__ import annotations

from dataclasses import dataclass

import mcp_types as types

from mcpstation.config.models import AnyServerSpec, NamingMode, StartMode, StationSettings


@dataclass(frozen=True, slots=True)
class ServerListing:
    """Everything one server offered at its last discovery."""

    server: str
    namespace: str | None = None
    naming: NamingMode | None = None  # this server's own naming mode, else the station's
    include_tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    tools: tuple[types.Tool, ...] = ()
    prompts: tuple[types.Prompt, ...] = ()
    resources: tuple[types.Resource, ...] = ()
    templates: tuple[types.ResourceTemplate, ...] = ()


def start_mode(spec: AnyServerSpec, settings: StationSettings) -> StartMode:
    """The server's own start mode, else the station's default."""
    return spec.start or settings.default_start
