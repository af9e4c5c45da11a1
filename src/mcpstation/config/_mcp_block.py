"""The `mcp:` / `[mcp]` block (TOML or YAML), in one converter.

```toml
[mcp]
enable = true                          # or `enabled`
fetch_enabled = true                   # presets
[[mcp.servers]]                        # or a `servers:` mapping keyed by server_key
name = "remote"                        # or `server_key`
url = "https://example.com/mcp"
http_timeout_seconds = 30
[mcp.servers.authorization]
mode = "bearer"
bearer_token = "${TOKEN}"
[mcp.client.roots]                     # plus [mcp.client.sampling], [mcp.client.elicitation]
enable = true
[[mcp.client.roots.items]]
uri = "file:///data"
```
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcpstation.config._converted import Converted, check_keys, expect_list, expect_mapping
from mcpstation.config._problem import Loc, Problem
from mcpstation.config._servers import ServerList

MCP = ("mcp",)
# User key in the block → native place.
_SETTINGS: dict[str, Loc] = {
    "enabled": ("enabled",),
    "enable": ("enabled",),
    "fetch_enabled": ("presets", "fetch_enabled"),
    "fetch_user_agent": ("presets", "fetch_user_agent"),
    "exa_enabled": ("presets", "exa_enabled"),
    "fetch_block_internal": ("policy", "fetch_block_internal"),
    "allowed_dynamic_url_prefixes": ("policy", "allowed_dynamic_url_prefixes"),
    "allowed_dynamic_stdio_commands": ("policy", "allowed_dynamic_stdio_commands"),
}
_SERVER_RENAMES = {"server_key": "name", "http_timeout_seconds": "http_timeout_s", "type": "transport"}
_AUTHORIZATION_KEYS = ("mode", "bearer_token")
_CLIENT_KEYS = ("elicitation", "roots", "sampling")
_ROOTS_KEYS = ("enable", "enabled", "items")
_ROOT_ITEM_KEYS = ("enabled", "name", "uri")
_ENABLE_RENAMES = {"enable": "enabled"}


def convert_mcp_block(doc: Mapping[str, Any]) -> Converted:
    """Convert a document whose only top-level key is `mcp`."""
    check_keys(doc, MCP, ())
    block = expect_mapping(doc["mcp"], MCP)
    check_keys(block, (*_SETTINGS, "client", "servers"), MCP)
    if "enable" in block and "enabled" in block:
        raise Problem((*MCP, "enable"), "set either 'enable' or 'enabled', not both.")
    out = Converted()
    for key, native in _SETTINGS.items():
        if key in block:
            out.put(native, block[key], user=(*MCP, key))
    _servers(out, block.get("servers", []))
    if "client" in block:
        _client(out, expect_mapping(block["client"], (*MCP, "client")))
    return out


def _servers(out: Converted, raw_servers: Any) -> None:
    servers = ServerList(out)
    where: Loc = (*MCP, "servers")
    if isinstance(raw_servers, Mapping):
        for key, raw in raw_servers.items():
            _server(out, servers, expect_mapping(raw, (*where, key)), (*where, key), name=key)
    else:
        for index, raw in enumerate(expect_list(raw_servers, where)):
            _server(out, servers, expect_mapping(raw, (*where, index)), (*where, index), name=None)


def _server(out: Converted, servers: ServerList, raw: Mapping[str, Any], where: Loc, *, name: str | None) -> None:
    fields = {key: value for key, value in raw.items() if key != "authorization"}
    entry, native = servers.add(fields, where, name=name, renames=_SERVER_RENAMES)
    if "authorization" not in raw:
        return
    auth_where: Loc = (*where, "authorization")
    auth = expect_mapping(raw["authorization"], auth_where)
    check_keys(auth, _AUTHORIZATION_KEYS, auth_where)
    mode = auth.get("mode", "bearer")
    if mode == "none":
        return
    if mode != "bearer":
        raise Problem((*auth_where, "mode"), "expected 'bearer' or 'none'.")
    if "bearer_token" not in auth:
        raise Problem(auth_where, "mode 'bearer' needs a bearer_token.")
    entry["bearer_token"] = auth["bearer_token"]
    out.link((*native, "bearer_token"), (*auth_where, "bearer_token"))


def _client(out: Converted, client: Mapping[str, Any]) -> None:
    where: Loc = (*MCP, "client")
    check_keys(client, _CLIENT_KEYS, where)
    for section in ("sampling", "elicitation"):
        if section in client:
            raw = expect_mapping(client[section], (*where, section))
            _renamed(out, ("host", section), raw, (*where, section))
    if "roots" in client:
        _roots(out, expect_mapping(client["roots"], (*where, "roots")), (*where, "roots"))


def _renamed(out: Converted, native: Loc, raw: Mapping[str, Any], where: Loc) -> None:
    table: dict[str, Any] = {}
    out.put(native, table, user=where)
    for key, value in raw.items():
        field = _ENABLE_RENAMES.get(key, key)
        if field in table:
            raise Problem((*where, key), "set either 'enable' or 'enabled', not both.")
        table[field] = value
        out.link((*native, field), (*where, key))


def _roots(out: Converted, roots: Mapping[str, Any], where: Loc) -> None:
    check_keys(roots, _ROOTS_KEYS, where)
    switch_key = "enable" if "enable" in roots else "enabled"
    switched_on = roots.get(switch_key, True)
    if not isinstance(switched_on, bool):
        raise Problem((*where, switch_key), "expected true or false.")
    items: list[dict[str, Any]] = []
    out.put(("host", "roots"), items, user=(*where, "items"))
    for index, raw in enumerate(expect_list(roots.get("items", []), (*where, "items"))):
        item_where: Loc = (*where, "items", index)
        item = dict(expect_mapping(raw, item_where))
        check_keys(item, _ROOT_ITEM_KEYS, item_where)
        if not switched_on:
            item["enabled"] = False  # the section's switch turns every root off
        items.append(item)
