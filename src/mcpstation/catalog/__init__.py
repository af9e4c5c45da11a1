"""The merged catalog: public names, conflicts, filters, lookups and normalized results."""

from mcpstation.catalog.catalog import (
    Catalog,
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    Conflict,
    tool_selected,
)
from mcpstation.catalog.naming import PUBLIC_NAME_PATTERN, public_name, sanitize
from mcpstation.catalog.results import (
    AnyResult,
    CompletionResult,
    ContentBlock,
    PromptResult,
    ResourceResult,
    SubscriptionResult,
    ToolResult,
    content_size,
    render_block,
    resource_contents_size,
)
from mcpstation.catalog.schemas import anthropic_tools, openai_tools
from mcpstation.connection.listing import ServerListing

__all__ = [
    "PUBLIC_NAME_PATTERN",
    "AnyResult",
    "Catalog",
    "CatalogPrompt",
    "CatalogResource",
    "CatalogTemplate",
    "CatalogTool",
    "CompletionResult",
    "Conflict",
    "ContentBlock",
    "PromptResult",
    "ResourceResult",
    "ServerListing",
    "SubscriptionResult",
    "ToolResult",
    "anthropic_tools",
    "content_size",
    "openai_tools",
    "public_name",
    "render_block",
    "resource_contents_size",
    "sanitize",
    "tool_selected",
]
