"""Tool schemas exported for function calling in the OpenAI and Anthropic shapes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcpstation.catalog.catalog import CatalogTool


def openai_tools(tools: Iterable[CatalogTool]) -> list[dict[str, Any]]:
    """Chat-completions `tools=[{"type": "function", "function": {...}}]`."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": _object_schema(t)},
        }
        for t in tools
    ]


def anthropic_tools(tools: Iterable[CatalogTool]) -> list[dict[str, Any]]:
    """Messages API `tools=[{"name", "description", "input_schema"}]`."""
    return [{"name": t.name, "description": t.description, "input_schema": _object_schema(t)} for t in tools]


def _object_schema(tool: CatalogTool) -> dict[str, Any]:
    schema = dict(tool.input_schema)
    schema.setdefault("type", "object")
    if schema["type"] == "object":
        schema.setdefault("properties", {})
    return schema
