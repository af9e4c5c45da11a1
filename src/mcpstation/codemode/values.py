"""What a script gets back from a tool call: the result unwrapped, or a typed exception it can catch.

A successful result reaches the script as `structuredContent` when the tool sent it, else its one
text block JSON-decoded when that parses, else its text. Images, audio and other blocks stay
objects (dicts in the MCP shape: `{"type": "image", "mimeType": ..., "data": ...}`); several blocks
come as a list. A failed result raises a builtin exception chosen by its typed `Outcome`, with the
message `"<outcome>: <error>"`, so a script can catch exactly what it expects.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from mcpstation.catalog import ToolResult
from mcpstation.outcomes import Outcome

EXCEPTIONS: dict[Outcome, type[Exception]] = {
    Outcome.NOT_FOUND: LookupError,
    Outcome.REFUSED: PermissionError,
    Outcome.TIMEOUT: TimeoutError,
    Outcome.UNAVAILABLE: OSError,
    Outcome.STORE_DOWN: OSError,  # not sent: the store that records it cannot be reached
    Outcome.CONNECTION_LOST: OSError,
    Outcome.TOO_LARGE: OSError,
    Outcome.TOOL_ERROR: RuntimeError,
    Outcome.REMOTE_ERROR: RuntimeError,
    Outcome.INVALID_RESULT: RuntimeError,
    Outcome.CANCELLED: RuntimeError,
}
"""The exception a script sees for each failed outcome (a test checks that every failure has one)."""


def script_error(result: ToolResult) -> Exception:
    """The exception a failed `result` raises in the script."""
    error = result.error or result.text or "failed"
    return EXCEPTIONS[result.outcome](f"{result.outcome}: {error}")


def script_value(result: ToolResult) -> Any:
    """A successful `result` as the script sees it."""
    if result.structured is not None:
        return result.structured
    blocks = [_block(block) for block in result.content]
    if len(blocks) == 1:
        return blocks[0]
    if all(isinstance(block, str) for block in blocks):
        return "\n".join(blocks)
    return blocks


def _block(block: types.ContentBlock) -> Any:
    if isinstance(block, types.TextContent):
        try:
            return json.loads(block.text)
        except ValueError:
            return block.text
    return block.model_dump(mode="json", by_alias=True, exclude_none=True)


def result_bytes(value: Any) -> int:
    """The size a value costs the run's result budget: its JSON, as the model would read it."""
    return len(json_text(value).encode())


def json_text(value: Any) -> str:
    """`value` as compact JSON; what JSON cannot hold is written as its `repr`."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr)
