"""The native shape: `[station]`, `[servers.NAME]` (or a `servers` list), `[host]`, `[policy]`, `[presets]`,
`[telemetry]`.

The `{"servers": [...]}` list is the native shape too: an entry with `id` takes it as
its name and its `name` as the title.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted, expect_mapping
from mcpstation.config._detect import CLIENT_ROOT_KEYS
from mcpstation.config._problem import Problem, unknown_key
from mcpstation.config._servers import ServerList

logger = logging.getLogger(__name__)

TOP_LEVEL_KEYS = ("enabled", "host", "policy", "presets", "servers", "station", "telemetry")
_ID_RENAMES = {"id": "name", "name": "title"}


def convert_native(doc: Mapping[str, Any], *, lenient_list: bool = False) -> Converted:
    """Convert a native document; unknown top-level keys are problems, nested ones pydantic's.

    With `lenient_list`, a document whose `servers` is a list (an `mcp_servers.json`
    written by another program) keeps its other top-level keys to itself: they are reported at
    DEBUG and left out.
    """
    if lenient_list and isinstance(doc.get("servers"), list):
        others = [key for key in doc if key not in TOP_LEVEL_KEYS]
        if others:
            logger.debug("keys beside the servers list left alone: %s", ", ".join(map(str, others)))
        doc = {key: value for key, value in doc.items() if key in TOP_LEVEL_KEYS}
    _check_top_level(doc)
    out = Converted({key: value for key, value in doc.items() if key != "servers"})
    servers = ServerList(out)
    raw_servers = doc.get("servers", [])
    if isinstance(raw_servers, Mapping):
        for name, raw in raw_servers.items():
            servers.add(expect_mapping(raw, ("servers", name)), ("servers", name), name=name)
    elif isinstance(raw_servers, list):
        for index, raw in enumerate(raw_servers):
            entry = expect_mapping(raw, ("servers", index))
            servers.add(entry, ("servers", index), renames=_ID_RENAMES if "id" in entry else None)
    else:
        raise Problem(("servers",), "expected a table of servers ([servers.NAME]) or a list.")
    return out


def _check_top_level(doc: Mapping[str, Any]) -> None:
    """Raise on the first unknown top-level key; a near miss of another client's root key is named as such."""
    for key in doc:
        if key in TOP_LEVEL_KEYS:
            continue
        close = difflib.get_close_matches(str(key), [*TOP_LEVEL_KEYS, *CLIENT_ROOT_KEYS], n=1)
        if close and close[0] in CLIENT_ROOT_KEYS:
            raise Problem(
                (key,),
                f"unknown key. Did you mean {close[0]!r}? Other clients keep their servers there, "
                "and mcpstation reads their files as they write them.",
            )
        raise Problem((key,), unknown_key(str(key), TOP_LEVEL_KEYS))
