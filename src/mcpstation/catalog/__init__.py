"""The merged catalog: public names, conflicts, filters, lookups and normalized results."""

from mcpstation.catalog.catalog import (
    Catalog,
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    Conflict,
    ServerListing,
    tool_selected,
)
from mcpstation.catalog.naming import PUBLIC_NAME_PATTERN, public_name, sanitize
from mcpstation.catalog.results import ToolResult, render_block
from mcpstation.catalog.schemas import anthropic_tools, openai_tools

__all__ = [
    "PUBLIC_NAME_PATTERN",
    "Catalog",
    "CatalogPrompt",
    "CatalogResource",
    "CatalogTemplate",
    "CatalogTool",
    "Conflict",
    "ServerListing",
    "ToolResult",
    "anthropic_tools",
    "openai_tools",
    "public_name",
    "render_block",
    "sanitize",
    "tool_selected",
]
