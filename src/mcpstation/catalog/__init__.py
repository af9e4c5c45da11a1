"""The merged catalog: public names, conflicts, filters, lookups, typed results, search and token estimates.

The provider exports (`openai_tools`, `anthropic_tools`, ...) are imported when first used (PEP
562): they bring the provider schema compilers, which a station that never exports does not need.
"""

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports
from mcpstation.catalog._embed import Embedder, EmbeddingCache, default_embedders
from mcpstation.catalog.catalog import (
    Catalog,
    CatalogPrompt,
    CatalogResource,
    CatalogTemplate,
    CatalogTool,
    Conflict,
    tool_selected,
)
from mcpstation.catalog.live_index import LiveIndex
from mcpstation.catalog.naming import PUBLIC_NAME_PATTERN, public_name, sanitize
from mcpstation.catalog.results import (
    AnyResult,
    CompletionResult,
    ContentBlock,
    PromptResult,
    ResourceResult,
    Result,
    SubscriptionResult,
    ToolResult,
    content_size,
    render_block,
    resource_contents_size,
)
from mcpstation.catalog.search import SearchHit, ToolIndex
from mcpstation.catalog.tokens import (
    estimate_text_tokens,
    estimate_tool_tokens,
    estimate_tools_tokens,
    format_tokens,
    surface_line,
    tokens_by_server,
)
from mcpstation.connection.listing import ServerListing

if TYPE_CHECKING:
    from mcpstation.catalog.schemas import (
        anthropic_tools,
        defer_anthropic_tools,
        defer_openai_tools,
        gemini_declarations,
        openai_responses_tools,
        openai_tools,
    )

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
    "Embedder",
    "EmbeddingCache",
    "LiveIndex",
    "PromptResult",
    "ResourceResult",
    "Result",
    "SearchHit",
    "ServerListing",
    "SubscriptionResult",
    "ToolIndex",
    "ToolResult",
    "anthropic_tools",
    "content_size",
    "default_embedders",
    "defer_anthropic_tools",
    "defer_openai_tools",
    "estimate_text_tokens",
    "estimate_tool_tokens",
    "estimate_tools_tokens",
    "format_tokens",
    "gemini_declarations",
    "openai_responses_tools",
    "openai_tools",
    "public_name",
    "render_block",
    "resource_contents_size",
    "sanitize",
    "surface_line",
    "tokens_by_server",
    "tool_selected",
]

_EXPORTS = dict.fromkeys(
    (
        "anthropic_tools",
        "defer_anthropic_tools",
        "defer_openai_tools",
        "gemini_declarations",
        "openai_responses_tools",
        "openai_tools",
    ),
    "mcpstation.catalog.schemas",
)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, __all__)
