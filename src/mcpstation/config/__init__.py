"""Configuration: typed, frozen models and the loaders that read every supported file shape.

The loaders (and every client format they read) are imported when first used (PEP 562): a
program that builds its `StationConfig` in code never loads them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from mcpstation.config.environment import NETWORK_VARIABLES
from mcpstation.config.models import (
    CodeModeSettings,
    ElicitationSettings,
    HostSettings,
    OAuthSettings,
    PolicySettings,
    PresetSettings,
    RootSpec,
    SamplingSettings,
    ServerSpec,
    SseServerSpec,
    StationConfig,
    StationSettings,
    StdioServerSpec,
    StreamableHttpServerSpec,
    TelemetrySettings,
    WebSocketServerSpec,
)

if TYPE_CHECKING:
    from mcpstation.config.loader import default_config, load_config, parse_config, resolve_config_path

__all__ = [
    "NETWORK_VARIABLES",
    "CodeModeSettings",
    "ElicitationSettings",
    "HostSettings",
    "OAuthSettings",
    "PolicySettings",
    "PresetSettings",
    "RootSpec",
    "SamplingSettings",
    "ServerSpec",
    "SseServerSpec",
    "StationConfig",
    "StationSettings",
    "StdioServerSpec",
    "StreamableHttpServerSpec",
    "TelemetrySettings",
    "WebSocketServerSpec",
    "default_config",
    "load_config",
    "parse_config",
    "resolve_config_path",
]

_LOADERS = frozenset({"default_config", "load_config", "parse_config", "resolve_config_path"})


def __getattr__(name: str) -> Any:
    if name not in _LOADERS:
        raise AttributeError(f"module 'mcpstation.config' has no attribute {name!r}")
    value = getattr(importlib.import_module("mcpstation.config.loader"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
