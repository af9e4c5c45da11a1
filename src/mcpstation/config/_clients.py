"""The MCP config of each client, as that client writes it: where its servers sit and what their keys mean.

One `ClientFormat` per client. `keys` maps each server key the client documents to a rule
(`_entry_rules.py`); any other key is accepted and reported at DEBUG. `layout` says where the
servers live in the file; `syntax` which variables the client expands; the `write_*` fields are
the client's own vocabulary, for the editor to add servers in it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from mcpstation.config import _entry_rules as r
from mcpstation.config._variables import NO_VARIABLES, Syntax


class Layout(Enum):
    """Where a client keeps its servers in its file."""

    MCP_SERVERS = "mcpServers mapping"  # {"mcpServers": {NAME: {...}}}
    CLAUDE_JSON = "~/.claude.json"  # mcpServers, plus projects.<path>.mcpServers
    SERVERS = "servers mapping"  # VS Code mcp.json: {"servers": {...}, "inputs": [...]}
    SETTINGS_MCP = "settings mcp"  # VS Code settings.json: {"mcp": {"servers": ..., "inputs": ...}}
    CONTEXT_SERVERS = "context_servers"  # Zed settings.json
    MCP_SERVERS_TOML = "mcp_servers tables"  # Codex config.toml: [mcp_servers.NAME]
    SERVER_LIST = "mcpServers list"  # Continue config.yaml: mcpServers: [{name: ...}]
    EXTENSIONS = "extensions"  # goose config.yaml


@dataclass(frozen=True)
class ClientFormat:
    """How one client writes its MCP configuration."""

    id: str
    title: str
    layout: Layout
    keys: Mapping[str, r.Rule]
    syntax: Syntax = field(default_factory=Syntax)
    comments: bool = False  # the client reads JSON with comments and trailing commas
    url_transport: str | None = None  # the transport of a URL entry without a type; None infers it
    write_keys: Mapping[str, str] = field(default_factory=dict)  # native field → the client's key
    write_types: Mapping[str, str] | None = None  # native transport → the client's type; None: no type key
    typed: bool = False  # every new server gets a type, stdio too (VS Code, goose)
    write_fixed: Mapping[str, object] = field(default_factory=dict)  # keys every new server gets (goose's)
    name_key: str | None = None  # the key inside an entry holding the server's name (goose's display name)
    off: tuple[str, bool] | None = None  # how a server is switched off: ("disabled", True) or ("enabled", False)

    def __repr__(self) -> str:
        return f"<ClientFormat {self.id}>"


_STDIO: dict[str, r.Rule] = {"command": r.to("command"), "args": r.to("args"), "env": r.to("env"), "cwd": r.path("cwd")}
_REMOTE: dict[str, r.Rule] = {"url": r.url(), "headers": r.to("headers")}
_TYPED: dict[str, r.Rule] = {"type": r.transport, "transport": r.transport}
_SWITCH: dict[str, r.Rule] = {"disabled": r.flag("enabled", invert=True), "enabled": r.flag("enabled")}
_COMMON = {**_STDIO, **_REMOTE, **_TYPED, **_SWITCH, "name": r.unused, "description": r.unused}
_CLAUDE_TIMEOUT = r.number("call_timeout_s", per=1000, unit="milliseconds", ignore_below=1000)
_JSON_WRITE = {"command": "command", "args": "args", "env": "env", "url": "url", "headers": "headers"}
_TYPES_HTTP = {"stdio": "stdio", "streamable_http": "http", "sse": "sse"}
_DISABLED = ("disabled", True)
_ENABLED = ("enabled", False)
_VS_CODE_SYNTAX = Syntax()  # ${env:X}, ${input:x}, ${workspaceFolder}, ${userHome}, ... (and ${X})

CLAUDE_DESKTOP = ClientFormat(
    id="claude-desktop",
    title="Claude Desktop",
    layout=Layout.MCP_SERVERS,
    keys=_COMMON,
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    off=_DISABLED,
)
CLAUDE_CODE = ClientFormat(
    id="claude-code",
    title="Claude Code",
    layout=Layout.MCP_SERVERS,
    keys={**_COMMON, "timeout": _CLAUDE_TIMEOUT, "oauth": r.unused, "headersHelper": r.unused},
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    off=_DISABLED,
)
CLAUDE_CODE_USER = ClientFormat(
    id="claude-code",
    title="Claude Code",
    layout=Layout.CLAUDE_JSON,
    keys=CLAUDE_CODE.keys,
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    off=_DISABLED,
)
CURSOR = ClientFormat(
    id="cursor",
    title="Cursor",
    layout=Layout.MCP_SERVERS,
    keys={**_COMMON, "envFile": r.env_file, "auth": r.unused},
    syntax=_VS_CODE_SYNTAX,
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    off=_DISABLED,
)
_VS_CODE_KEYS = {
    **_COMMON,
    "envFile": r.env_file,
    "dev": r.unused,
    "sandbox": r.unused,
    "sandboxEnabled": r.unused,
    "gallery": r.unused,
    "version": r.unused,
}
VS_CODE = ClientFormat(
    id="vscode",
    title="VS Code",
    layout=Layout.SERVERS,
    keys=_VS_CODE_KEYS,
    syntax=_VS_CODE_SYNTAX,
    comments=True,
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    typed=True,
)
VS_CODE_SETTINGS = ClientFormat(
    id="vscode",
    title="VS Code",
    layout=Layout.SETTINGS_MCP,
    keys=_VS_CODE_KEYS,
    syntax=_VS_CODE_SYNTAX,
    comments=True,
)
WINDSURF = ClientFormat(
    id="windsurf",
    title="Windsurf",
    layout=Layout.MCP_SERVERS,
    keys={**_COMMON, "serverUrl": r.url(), "disabledTools": r.tools("exclude_tools"), "alwaysAllow": r.unused},
    write_keys={**_JSON_WRITE, "url": "serverUrl"},
    off=_DISABLED,
)
CLINE = ClientFormat(
    id="cline",
    title="Cline",
    layout=Layout.MCP_SERVERS,
    keys={
        **_COMMON,
        "transportType": r.transport,
        "timeout": r.number("call_timeout_s"),
        "autoApprove": r.unused,
    },
    url_transport="sse",  # Cline reads a URL without a type as SSE
    write_keys=_JSON_WRITE,
    write_types={"stdio": "stdio", "streamable_http": "streamableHttp", "sse": "sse"},
    off=_DISABLED,
)
ROO_CODE = ClientFormat(
    id="roo-code",
    title="Roo Code",
    layout=Layout.MCP_SERVERS,
    keys={
        **_COMMON,
        "timeout": r.number("call_timeout_s"),
        "alwaysAllow": r.unused,
        "disabledTools": r.tools("exclude_tools"),
        "watchPaths": r.unused,
    },
    write_keys=_JSON_WRITE,
    write_types={"stdio": "stdio", "streamable_http": "streamable-http", "sse": "sse"},
    off=_DISABLED,
)
GEMINI_CLI = ClientFormat(
    id="gemini-cli",
    title="Gemini CLI",
    layout=Layout.MCP_SERVERS,
    keys={
        **_COMMON,
        "httpUrl": r.url(implies="streamable_http"),
        "timeout": r.number("call_timeout_s", per=1000, unit="milliseconds"),
        "includeTools": r.tools("include_tools"),
        "excludeTools": r.tools("exclude_tools"),
        "trust": r.unused,
        "authProviderType": r.unused,
        "oauth": r.unused,
        "targetAudience": r.unused,
        "targetServiceAccount": r.unused,
        "extensionName": r.unused,
    },
    syntax=Syntax(bare=True),
    comments=True,
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
)
ZED = ClientFormat(
    id="zed",
    title="Zed",
    layout=Layout.CONTEXT_SERVERS,
    keys={
        "source": r.skip_unless({"custom": ""}, "a Zed extension's server ({value}); Zed starts it itself"),
        "command": r.zed_command,
        "args": r.to("args"),
        "env": r.to("env"),
        **_REMOTE,
        "enabled": r.flag("enabled"),
        "timeout": r.number("call_timeout_s"),
        "remote": r.unused,
        "settings": r.unused,
    },
    syntax=NO_VARIABLES,
    comments=True,
    write_keys={"command": "command", "args": "args", "env": "env", "url": "url", "headers": "headers"},
    off=_ENABLED,
)
CODEX = ClientFormat(
    id="codex",
    title="OpenAI Codex CLI",
    layout=Layout.MCP_SERVERS_TOML,
    keys={
        **_STDIO,
        "env_vars": r.env_names(optional=True),
        "url": r.url(implies="streamable_http"),
        "bearer_token_env_var": r.bearer_from_env,
        "bearer_token": r.to("bearer_token"),
        "http_headers": r.to("headers"),
        "env_http_headers": r.headers_from_env,
        "startup_timeout_sec": r.number("startup_timeout_s"),
        "startup_timeout_ms": r.number("startup_timeout_s", per=1000, unit="milliseconds"),
        "tool_timeout_sec": r.number("call_timeout_s"),
        "enabled": r.flag("enabled"),
        "enabled_tools": r.tools("include_tools"),
        "disabled_tools": r.tools("exclude_tools"),
        "required": r.unused,
        "default_tools_approval_mode": r.unused,
        "tools": r.unused,
        "oauth_resource": r.unused,
        "scopes": r.unused,
    },
    syntax=NO_VARIABLES,
    write_keys={"command": "command", "args": "args", "env": "env", "url": "url", "headers": "http_headers"},
    off=_ENABLED,
)
CONTINUE = ClientFormat(
    id="continue",
    title="Continue",
    layout=Layout.SERVER_LIST,
    keys={
        **_STDIO,
        "url": r.url(),
        "type": r.transport,
        "requestOptions": r.headers_in("headers"),
        "connectionTimeout": r.number("startup_timeout_s", per=1000, unit="milliseconds"),
        "faviconUrl": r.unused,
        "serverName": r.unused,
        "sourceFile": r.unused,
    },
    syntax=Syntax(continue_secrets=True),
    write_keys={"command": "command", "args": "args", "env": "env", "url": "url", "headers": "requestOptions.headers"},
    write_types={"stdio": "stdio", "streamable_http": "streamable-http", "sse": "sse"},
)
GOOSE = ClientFormat(
    id="goose",
    title="goose",
    layout=Layout.EXTENSIONS,
    keys={
        "type": r.skip_unless(
            {"stdio": "stdio", "sse": "sse", "streamable_http": "streamable_http"},
            "a goose {value} extension; it runs inside goose",
        ),
        "cmd": r.to("command"),
        "args": r.to("args"),
        "envs": r.to("env"),
        "env_keys": r.env_names(optional=False),
        "uri": r.url(),
        "headers": r.to("headers"),
        "timeout": r.number("call_timeout_s"),
        "enabled": r.flag("enabled"),
        "name": r.title,
        "available_tools": r.tools("include_tools"),
        "description": r.unused,
        "display_name": r.unused,
        "bundled": r.unused,
        "socket": r.unused,
    },
    syntax=NO_VARIABLES,
    write_keys={"command": "cmd", "args": "args", "env": "envs", "url": "uri", "headers": "headers", "title": "name"},
    write_types={"stdio": "stdio", "streamable_http": "streamable_http", "sse": "sse"},
    typed=True,
    write_fixed={"enabled": True, "args": [], "envs": {}, "timeout": 300},  # goose refuses an entry without them
    name_key="name",
    off=_ENABLED,
)
LIBRECHAT = ClientFormat(
    id="librechat",
    title="LibreChat",
    layout=Layout.MCP_SERVERS,
    keys={
        **_COMMON,
        "title": r.title,
        "timeout": r.number("call_timeout_s", per=1000, unit="milliseconds"),
        "initTimeout": r.number("startup_timeout_s", per=1000, unit="milliseconds"),
        **{
            key: r.unused
            for key in (
                "iconPath",
                "chatMenu",
                "serverInstructions",
                "customUserVars",
                "startup",
                "requiresOAuth",
                "oauth",
                "apiKey",
                "proxy",
                "stderr",
            )
        },
    },
    write_keys={**_JSON_WRITE, "title": "title"},
    write_types={"stdio": "stdio", "streamable_http": "streamable-http", "sse": "sse", "websocket": "websocket"},
)
MCP_JSON = ClientFormat(
    id="mcp-json",
    title="mcpServers JSON",
    layout=Layout.MCP_SERVERS,
    keys={**_COMMON, "timeout": _CLAUDE_TIMEOUT},
    write_keys=_JSON_WRITE,
    write_types=_TYPES_HTTP,
    off=_DISABLED,
)

CLIENTS: tuple[ClientFormat, ...] = (
    CLAUDE_DESKTOP,
    CLAUDE_CODE,
    CURSOR,
    VS_CODE,
    WINDSURF,
    CLINE,
    ROO_CODE,
    ZED,
    CODEX,
    GEMINI_CLI,
    CONTINUE,
    GOOSE,
    LIBRECHAT,
)
CLIENT_IDS: tuple[str, ...] = tuple(client.id for client in CLIENTS)
# Every key any client knows: a key one client uses is no typo in another client's file.
KNOWN_KEYS: frozenset[str] = frozenset(key for client in (*CLIENTS, CLAUDE_CODE_USER, MCP_JSON) for key in client.keys)


def client_by_id(client_id: str) -> ClientFormat:
    """The client `client_id` (as in `CLIENT_IDS`). Raises `KeyError`."""
    for client in CLIENTS:
        if client.id == client_id:
            return client
    raise KeyError(client_id)
