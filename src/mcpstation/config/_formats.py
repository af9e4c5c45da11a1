"""The native shapes: ours (`[servers.NAME]`, `[station]`, ...) and the seeds' (`mcp` block, seed 002's list).

The top-level keys pick the shape: `mcp` → seeds 000/001/003, anything else → native (seed
002's `servers` list included). Other clients' files never get here: `_detect.py` sends them to
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
    """Convert a native or seed shape. Raises `Problem` on unknown keys or misplaced values.

    `lenient_list`: seed 002's JSON `{"servers": [...]}` is another program's file; its
    unrelated top-level keys are left alone (reported at DEBUG) instead of refused.
    """
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise Problem((), "expected a table (mapping) at the top level.")
    if "mcp" in doc:
        return convert_mcp_block(doc)
    return convert_native(doc, lenient_list=lenient_list)
