"""Claude Desktop's `{"mcpServers": {...}}` and VS Code's `{"servers": {...}}` (a mapping).

Entries take `command`, `args`, `env`, `cwd`, `url`, `headers`, `type` (or `transport`),
`disabled` and `timeout` (seconds, the per-call timeout).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted, check_keys, expect_mapping
from mcpstation.config._problem import Problem
from mcpstation.config._servers import ServerList

ENTRY_KEYS = ("args", "command", "cwd", "disabled", "env", "headers", "timeout", "transport", "type", "url")
_RENAMES = {"type": "transport", "timeout": "call_timeout_s"}


def convert_desktop(doc: Mapping[str, Any], root: str) -> Converted:
    """Convert a document whose only top-level key is `root` (`mcpServers` or `servers`)."""
    check_keys(doc, (root,), ())
    out = Converted()
    servers = ServerList(out)
    for name, raw in expect_mapping(doc[root], (root,)).items():
        where = (root, name)
        entry = expect_mapping(raw, where)
        check_keys(entry, ENTRY_KEYS, where)
        fields = {key: value for key, value in entry.items() if key != "disabled"}
        added, native = servers.add(fields, where, name=name, renames=_RENAMES)
        if "disabled" in entry:
            disabled = entry["disabled"]
            if not isinstance(disabled, bool):
                raise Problem((*where, "disabled"), "expected true or false.")
            added["enabled"] = not disabled
            out.link((*native, "enabled"), (*where, "disabled"))
    return out
