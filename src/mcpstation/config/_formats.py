"""The native shapes: `[servers.NAME]`, `[station]`, ..., the `mcp` block and the `servers` list.

The top-level keys pick the shape: `mcp` → the `mcp` block, anything else → native (the
`servers` list included). Other clients' files never get here: `_detect.py` sends them to
the lenient reader (`_foreign.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted
from mcpstation.config._mcp_block import convert_mcp_block
from mcpstation.config._native import convert_native
from mcpstation.config._problem import Problem


def to_native(doc: Any, *, lenient_list: bool = False) -> Converted:
    """Convert one of our shapes. Raises `Problem` on unknown keys or misplaced values.

    `lenient_list`: a JSON `{"servers": [...]}` list is often another program's file; its
    unrelated top-level keys are left alone (reported at DEBUG) instead of refused.
    """
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise Problem((), "expected a table (mapping) at the top level.")
    if "mcp" in doc:
        return convert_mcp_block(doc)
    return convert_native(doc, lenient_list=lenient_list)
