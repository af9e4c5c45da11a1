"""Which shape a parsed document has, and its conversion to the native shape.

The file extension picked the parser; the top-level keys pick the shape:
`mcp` → seeds 000/001/003, `mcpServers` → Claude Desktop, a `servers` mapping whose entries use
`type` or `disabled` → VS Code, anything else → native (seed 002's `servers` list included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted
from mcpstation.config._desktop import convert_desktop
from mcpstation.config._mcp_block import convert_mcp_block
from mcpstation.config._native import convert_native
from mcpstation.config._problem import Problem

_VS_CODE_MARKERS = ("type", "disabled")


def to_native(doc: Any) -> Converted:
    """Convert any supported shape. Raises `Problem` on unknown keys or misplaced values."""
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise Problem((), "expected a table (mapping) at the top level.")
    if "mcp" in doc:
        return convert_mcp_block(doc)
    if "mcpServers" in doc:
        return convert_desktop(doc, "mcpServers")
    if _is_vs_code(doc):
        return convert_desktop(doc, "servers")
    return convert_native(doc)


def _is_vs_code(doc: Mapping[str, Any]) -> bool:
    servers = doc.get("servers")
    if set(doc) != {"servers"} or not isinstance(servers, Mapping):
        return False
    return any(isinstance(entry, Mapping) and any(k in entry for k in _VS_CODE_MARKERS) for entry in servers.values())
