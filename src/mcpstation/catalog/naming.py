"""Public names: how a server's tool becomes a name an LLM provider accepts.

Every public name matches `^[A-Za-z0-9_-]{1,64}$` (OpenAI, Anthropic and others reject more).
Names longer than that keep a readable head and end in a short hash of the full name, so the
same tool always gets the same name and two long names never collide by truncation.
"""

from __future__ import annotations

import hashlib
import re

from mcpstation.config.models import NamingMode

MAX_NAME_LENGTH = 64
HASH_LENGTH = 8  # hex digits of sha256 kept when a name must be shortened
PUBLIC_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(name: str) -> str:
    """Map `name` into the provider-safe alphabet and length, stably.

    Characters outside `[A-Za-z0-9_-]` become `_`; a name over 64 characters is cut and ends
    in `_` plus a hash of the original, so distinct long names stay distinct.
    """
    safe = _UNSAFE.sub("_", name) or "_"
    if len(safe) <= MAX_NAME_LENGTH:
        return safe
    digest = hashlib.sha256(name.encode()).hexdigest()[:HASH_LENGTH]
    return f"{safe[: MAX_NAME_LENGTH - HASH_LENGTH - 1]}_{digest}"


def public_name(mode: NamingMode, *, server: str, namespace: str | None, name: str) -> str:
    """The name a tool or prompt is published under.

    `prefix`: `mcp_{server}_{name}`; `namespace`: `{namespace or server}__{name}`; `bare`: the
    server's own name.
    """
    if mode == "prefix":
        raw = f"mcp_{server}_{name}"
    elif mode == "namespace":
        raw = f"{namespace or server}__{name}"
    else:
        raw = name
    return sanitize(raw)


def name_prefix(mode: NamingMode, *, server: str, namespace: str | None) -> str | None:
    """What every public name of `server`'s entries starts with; None in `bare` mode (nothing does)."""
    if mode == "prefix":
        return _UNSAFE.sub("_", f"mcp_{server}_")
    if mode == "namespace":
        return _UNSAFE.sub("_", f"{namespace or server}__")
    return None
