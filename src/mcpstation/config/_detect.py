"""Which client wrote a file: by its name and place first, then by what it holds.

Native files in any of our shapes (`[servers.NAME]`, the `mcp` block, the `servers`
list) are not foreign: `detect` returns None for them and the strict native reader takes over.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpstation.config import _clients as c
from mcpstation.config._clients import ClientFormat, Layout

# A file's name (and, where the name is shared, its folder) → the client that writes it.
_BY_NAME: dict[str, ClientFormat] = {
    "claude_desktop_config.json": c.CLAUDE_DESKTOP,
    ".claude.json": c.CLAUDE_CODE_USER,
    ".mcp.json": c.CLAUDE_CODE,
    "mcp_config.json": c.WINDSURF,
    "cline_mcp_settings.json": c.CLINE,
    "mcp_settings.json": c.ROO_CODE,
    "librechat.yaml": c.LIBRECHAT,
    "librechat.yml": c.LIBRECHAT,
}
_BY_FOLDER: dict[tuple[str, str], ClientFormat] = {
    (".cursor", "mcp.json"): c.CURSOR,
    (".vscode", "mcp.json"): c.VS_CODE,
    ("User", "mcp.json"): c.VS_CODE,  # the user profile: ~/.config/Code/User/mcp.json
    (".roo", "mcp.json"): c.ROO_CODE,
    (".gemini", "settings.json"): c.GEMINI_CLI,
    ("gemini-cli", "settings.json"): c.GEMINI_CLI,  # /etc/gemini-cli/settings.json
    ("zed", "settings.json"): c.ZED,
    (".zed", "settings.json"): c.ZED,
    (".vscode", "settings.json"): c.VS_CODE_SETTINGS,
    ("User", "settings.json"): c.VS_CODE_SETTINGS,
    (".codex", "config.toml"): c.CODEX,
    (".continue", "config.yaml"): c.CONTINUE,
    ("mcpServers", "*.yaml"): c.CONTINUE,  # .continue/mcpServers/*.yaml blocks
    ("goose", "config.yaml"): c.GOOSE,
}
_ROOT_KEY: dict[Layout, str] = {
    Layout.MCP_SERVERS: "mcpServers",
    Layout.CLAUDE_JSON: "mcpServers",
    Layout.SERVERS: "servers",
    Layout.SETTINGS_MCP: "mcp",
    Layout.CONTEXT_SERVERS: "context_servers",
    Layout.MCP_SERVERS_TOML: "mcp_servers",
    Layout.SERVER_LIST: "mcpServers",
    Layout.EXTENSIONS: "extensions",
}
# Where other clients' files keep their servers (not our own `servers` and `mcp`): a top-level key
# close to one of these is that client's file with a typo, not one of our keys misspelt.
CLIENT_ROOT_KEYS = tuple(sorted(set(_ROOT_KEY.values()) - {"servers", "mcp"}))
_GEMINI_KEYS = ("httpUrl", "includeTools", "excludeTools", "trust")
_VS_CODE_MARKERS = ("type", "disabled")


def allows_comments(path: Path | None) -> bool:
    """Whether the file's name says it is JSON with comments: a `.jsonc` file, or a client's that allows them."""
    if path is not None and path.suffix.lower() == ".jsonc":
        return True
    named = _by_path(path) if path is not None else None
    return named is not None and named.comments


def detect(path: Path | None, data: Any, client_id: str | None = None) -> ClientFormat | None:
    """The client format of `data` (read from `path`); None for our own shapes.

    `client_id` (one of `CLIENT_IDS`) forces the client; the layout still follows the content
    (Claude Code's `.mcp.json` or `~/.claude.json`, VS Code's `mcp.json` or `settings.json`).
    Raises `KeyError` for an unknown `client_id`.
    """
    if not isinstance(data, Mapping):
        return None
    if client_id is not None:
        return _forced(c.client_by_id(client_id), data)
    named = _by_path(path) if path is not None else None
    if named is not None and _holds(named, data):
        return named
    return _by_content(data, path)


def root_key(client: ClientFormat) -> str:
    """The top-level key holding the client's servers."""
    return _ROOT_KEY[client.layout]


def _forced(client: ClientFormat, data: Mapping[str, Any]) -> ClientFormat:
    if client is c.CLAUDE_CODE and "projects" in data:
        return c.CLAUDE_CODE_USER
    if client is c.VS_CODE and "servers" not in data and isinstance(data.get("mcp"), Mapping):
        return c.VS_CODE_SETTINGS
    if client is c.CONTINUE and isinstance(data.get("mcpServers"), Mapping):
        return c.MCP_JSON  # Continue reads Claude-style JSON blocks too
    return client


def _by_path(path: Path) -> ClientFormat | None:
    named = _BY_NAME.get(path.name)
    if named is not None:
        return named
    folder = _BY_FOLDER.get((path.parent.name, path.name))
    if folder is None and path.suffix in (".yaml", ".yml"):
        folder = _BY_FOLDER.get((path.parent.name, "*.yaml"))
    return folder


def _holds(client: ClientFormat, data: Mapping[str, Any]) -> bool:
    """Whether `data` has the client's servers where the client keeps them (or no MCP part at all)."""
    root = data.get(_ROOT_KEY[client.layout])
    if client.layout is Layout.SETTINGS_MCP:
        return root is None or (isinstance(root, Mapping) and not isinstance(root.get("servers"), list))
    if client.layout is Layout.SERVER_LIST:
        return root is None or isinstance(root, list)
    return root is None or isinstance(root, Mapping)


def _by_content(data: Mapping[str, Any], path: Path | None) -> ClientFormat | None:
    if isinstance(data.get("context_servers"), Mapping):
        return c.ZED
    if isinstance(data.get("mcp_servers"), Mapping):
        return c.CODEX
    extensions = data.get("extensions")
    if isinstance(extensions, Mapping) and any(
        isinstance(entry, Mapping) and ("cmd" in entry or "uri" in entry) for entry in extensions.values()
    ):
        return c.GOOSE
    servers = data.get("mcpServers")
    if isinstance(servers, list):
        return c.CONTINUE
    experimental = data.get("experimental")
    if isinstance(experimental, Mapping) and isinstance(experimental.get("modelContextProtocolServers"), list):
        return c.CONTINUE
    if isinstance(servers, Mapping):
        return _mcp_servers_client(data, servers, path)
    if _is_vs_code(data):
        return c.VS_CODE
    return None


def _mcp_servers_client(data: Mapping[str, Any], servers: Mapping[str, Any], path: Path | None) -> ClientFormat:
    if isinstance(data.get("projects"), Mapping):
        return c.CLAUDE_CODE_USER
    if path is not None and path.suffix in (".yaml", ".yml"):
        return c.LIBRECHAT  # Continue's YAML lists its servers; a YAML mapping of them is LibreChat's
    entries = [entry for entry in servers.values() if isinstance(entry, Mapping)]
    if any("serverUrl" in entry for entry in entries):
        return c.WINDSURF
    if any(key in entry for entry in entries for key in _GEMINI_KEYS):
        return c.GEMINI_CLI
    if any("autoApprove" in entry or "transportType" in entry for entry in entries):
        return c.CLINE
    if any("alwaysAllow" in entry or "watchPaths" in entry for entry in entries):
        return c.ROO_CODE
    return c.MCP_JSON


def _is_vs_code(data: Mapping[str, Any]) -> bool:
    servers = data.get("servers")
    if not isinstance(servers, Mapping):
        return False
    if "inputs" in data:
        return True
    if set(data) != {"servers"}:
        return False
    return any(isinstance(entry, Mapping) and any(k in entry for k in _VS_CODE_MARKERS) for entry in servers.values())
