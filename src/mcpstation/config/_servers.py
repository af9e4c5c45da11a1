"""Server entries from any shape into native server dicts, with transport inference."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from mcpstation.config._converted import Converted
from mcpstation.config._problem import Loc, Problem, render_path


def infer_transport(entry: Mapping[str, Any]) -> str | None:
    """`stdio` with a command; for a URL `websocket` (ws/wss), `sse` (path ends `/sse`) or HTTP."""
    if "command" in entry:
        return "stdio"
    url = entry.get("url")
    if not isinstance(url, str):
        return None
    parts = urlsplit(url)
    if parts.scheme in ("ws", "wss"):
        return "websocket"
    if parts.path.rstrip("/").endswith("/sse"):
        return "sse"
    return "streamable_http"


class ServerList:
    """Appends native server entries to `converted.data["servers"]`, refusing duplicate names."""

    def __init__(self, converted: Converted) -> None:
        self._converted = converted
        self._entries: list[dict[str, Any]] = converted.data.setdefault("servers", [])
        self._seen: dict[str, Loc] = {}

    def add(
        self,
        raw: Mapping[str, Any],
        where: Loc,
        *,
        name: str | None = None,
        renames: Mapping[str, str] | None = None,
        origins: Mapping[str, Loc] | None = None,
    ) -> tuple[dict[str, Any], Loc]:
        """Add one entry found at `where`; `name` when the name is the entry's key.

        `renames` maps the user's key to the native field; `origins` gives, for entries already in
        native fields, each field's place in the user's file. Returns the entry and its native place.
        """
        native: Loc = ("servers", len(self._entries))
        self._converted.link(native, where)
        renames = renames or {}
        entry: dict[str, Any] = {}
        if name is not None:
            if "name" in raw:
                raise Problem((*where, "name"), "the server's name is its key here; use 'title' for a display name.")
            entry["name"] = name
            self._converted.link((*native, "name"), where)
        for key, value in raw.items():
            field = renames.get(key, key)
            if field in entry:
                raise Problem((*where, key), f"sets {field!r} a second time.")
            entry[field] = value
            if field != key:
                self._converted.link((*native, field), (*where, key))
        for field, place in (origins or {}).items():
            self._converted.link((*native, field), place)
        if "transport" not in entry:
            inferred = infer_transport(entry)
            if inferred is not None:
                entry["transport"] = inferred
        self._check_unique(entry.get("name"), where if name is not None else (*where, _name_key(raw)))
        self._entries.append(entry)
        return entry, native

    def _check_unique(self, name: Any, where: Loc) -> None:
        if not isinstance(name, str):
            return
        first = self._seen.setdefault(name, where)
        if first != where:
            raise Problem(where, f"server name {name!r} is used twice (first at {render_path(first)}).")


def _name_key(raw: Mapping[str, Any]) -> str:
    for key in ("id", "server_key", "name"):
        if key in raw:
            return key
    return "name"
