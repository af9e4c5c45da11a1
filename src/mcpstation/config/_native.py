"""The native shape: `[station]`, `[servers.NAME]` (or a `servers` list), `[host]`, `[policy]`, `[presets]`,
`[telemetry]`.

The `{"servers": [...]}` list is the native shape too: an entry with `id` takes it as
its name and its `name` as the title.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted, check_keys, expect_mapping
from mcpstation.config._problem import Problem
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
    check_keys(doc, TOP_LEVEL_KEYS, ())
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
