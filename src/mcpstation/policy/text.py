"""Text a server hands the LLM (descriptions, instructions), cleaned; and tool fingerprints for pinning."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata

import mcp_types

TRUNCATION_MARKER = "… [truncated]"

# Zero-width and bidirectional-control characters: invisible, and able to hide or reorder text.
INVISIBLE = frozenset(
    "\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u180e\u00ad\u034f\u061c"
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u206a\u206b\u206c\u206d\u206e\u206f"
)
KEPT_CONTROLS = frozenset("\n\t")
_ASCII_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False), built once.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dropped(ch: str) -> bool:
    if ch in KEPT_CONTROLS:
        return False
    if ch in INVISIBLE:
        return True
    category = unicodedata.category(ch)
    # Cc control, Cf format (tags U+E0000 block included), Cs surrogate, Co private use, Cn unassigned.
    return category in {"Cc", "Cf", "Cs"} or 0xE0000 <= ord(ch) <= 0xE007F


def clean_text(text: str, *, max_chars: int) -> str:
    """`text` without control characters (except newline and tab), zero-width or bidi controls, capped.

    `\\r\\n` and lone `\\r` become `\\n`. A result over `max_chars` is cut and ends with
    `TRUNCATION_MARKER`, the whole staying within `max_chars`.

    Raises:
        ValueError: `max_chars` is smaller than the marker.
    """
    if max_chars < len(TRUNCATION_MARKER):
        raise ValueError(f"max_chars must be at least {len(TRUNCATION_MARKER)}, got {max_chars}")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.isascii() and not _ASCII_CONTROLS.search(text):
        cleaned = text  # the common case, without a per-character walk
    else:
        cleaned = "".join(ch for ch in text if not _dropped(ch))
    if len(cleaned) <= max_chars:
        return cleaned
    return cleaned[: max_chars - len(TRUNCATION_MARKER)].rstrip() + TRUNCATION_MARKER


def tool_fingerprint(tool: mcp_types.Tool) -> str:
    """sha256 (hex) of canonical JSON of the tool's name, description and input schema.

    Canonical: sorted keys, no insignificant whitespace, UTF-8. A change to any of the three
    (a "rug pull") changes the fingerprint; titles, annotations and metadata do not.
    """
    payload = {"name": tool.name, "description": tool.description, "inputSchema": tool.input_schema}
    canonical = _CANONICAL.encode(payload)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
