"""Provider payloads as plain JSON: a recorded dict is used as is, an SDK object through `model_dump()`.

The provider SDKs are never imported: anything with a pydantic-style `model_dump()` is read
through it, so `openai` and `anthropic` objects work when installed and are not needed when not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcpstation.errors import UsageError


def plain(value: object) -> object:
    """`value` with every SDK object in it (at any depth) turned into its JSON dict."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain(item) for item in value]
    return value


def as_object(value: object, what: str) -> dict[str, Any]:
    """`value` as a JSON object; a clear `UsageError` naming `what` when it is something else."""
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object, got {type(value).__name__}: {_preview(value)}")
    return value


def as_list(value: object, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise UsageError(f"{what} must be a list, got {type(value).__name__}: {_preview(value)}")
    return value


def _preview(value: object, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
