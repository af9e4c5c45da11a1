"""Server log messages (`notifications/message`) into Python logging, one logger per server.

Records go to `mcpstation.server.<name>` at the Python level matching the MCP level. How much a
server sends is set per server (`log_level`): modern sessions carry the level on every request
(`Client(log_level=...)`), handshake-era sessions get `logging/setLevel` once after connecting
(`apply_log_level`). Servers that ignore the level (python-sdk `MCPServer` has no setLevel) are
filtered here as well.
"""

from __future__ import annotations

import json
import logging
import warnings
from typing import Final

import mcp_types as types
from mcp.client import Client
from mcp.client.session import LoggingFnT
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.config.models import AnyServerSpec, LogLevel
from mcpstation.connection.log_levels import PYTHON_LEVELS

logger = logging.getLogger(__name__)

SERVER_LOGGER_PREFIX: Final = "mcpstation.server"

# The Python level each record gets (the MCP level itself rides along as `record.mcp_level`).
_RANK: Final[dict[str, int]] = {level: rank for rank, level in enumerate(PYTHON_LEVELS)}


def server_logger(server: str) -> logging.Logger:
    """The logger a server's messages go to: `mcpstation.server.<name>`."""
    return logging.getLogger(f"{SERVER_LOGGER_PREFIX}.{server}")


def python_level(level: str) -> int:
    """The Python logging level for an MCP level (unknown levels count as INFO)."""
    return PYTHON_LEVELS.get(level, logging.INFO)


def logging_callback_for(server: str, level: LogLevel | None) -> LoggingFnT:
    """The SDK `logging_callback` for `server`: drops messages below `level`, logs the rest."""
    target = server_logger(server)
    floor = _RANK[level] if level is not None else 0

    async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
        if _RANK.get(params.level, _RANK["info"]) < floor:
            return
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, default=str)
        extra = {"mcp_server": server, "mcp_level": params.level, "mcp_logger": params.logger}
        if params.logger:
            target.log(python_level(params.level), "[%s] %s", params.logger, data, extra=extra)
        else:
            target.log(python_level(params.level), "%s", data, extra=extra)

    return logging_callback


def effective_level(spec: AnyServerSpec, default: LogLevel | None = None) -> LogLevel | None:
    """The server's own `log_level`, else the host's default."""
    return spec.log_level if spec.log_level is not None else default


async def apply_log_level(client: Client, spec: AnyServerSpec, default: LogLevel | None = None) -> bool:
    """Ask a handshake-era server to send messages at its level and above (`logging/setLevel`).

    The level is `spec.log_level`, else `default`. Call it once the session is ready.
    Does nothing for modern sessions (the level rides on every request) or when no level is set.
    A server without setLevel (-32601) or without the logging capability is left as is; it will
    send what it sends and `logging_callback_for` filters. Returns whether the server took it.

    Raises:
        MCPError: the server answered setLevel with an error other than method-not-found.
    """
    level = effective_level(spec, default)
    if level is None or client.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = client.server_capabilities
    if capabilities is not None and capabilities.logging is None:
        return False
    # Deprecated as of 2026-07-28; the SDK warns at call time, so the filter never spans an await.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        pending = client.set_logging_level(level)
    try:
        await pending
    except MCPError as exc:
        if exc.code != types.METHOD_NOT_FOUND:
            raise
        logger.debug("server does not implement logging/setLevel; filtering its messages here")
        return False
    return True
