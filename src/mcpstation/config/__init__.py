"""Configuration: typed, frozen models and the loaders that read every supported file shape."""

from mcpstation.config.environment import NETWORK_VARIABLES
from mcpstation.config.loader import default_config, load_config, parse_config, resolve_config_path
from mcpstation.config.models import (
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

__all__ = [
    "NETWORK_VARIABLES",
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
