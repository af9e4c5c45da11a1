"""The host side of each session: what the station answers when a server asks.

Roots, sampling (bridged to the host application's LLM, under policy), elicitation (form and
URL, with schema defaults), and server log messages into Python logging. `Host` puts them
together as the connection layer's `SessionHooks`.
"""

from mcpstation.host.elicitation import (
    ElicitationAnswer,
    ElicitationHandler,
    ElicitationModes,
    ElicitationRequest,
    FormRequest,
    UrlRequest,
    apply_defaults,
)
from mcpstation.host.host import AuthProviderFactory, Host
from mcpstation.host.oauth import FileTokenStorage, OAuthProviders, StoreTokenStorage, oauth_provider_for
from mcpstation.host.openai_sampler import OpenAICompatibleSampler
from mcpstation.host.roots import Roots
from mcpstation.host.sampling import (
    SamplingAnswer,
    SamplingFailed,
    SamplingHandler,
    SamplingMedia,
    SamplingPart,
    SamplingPolicy,
    SamplingRequest,
    SamplingText,
    SamplingTool,
    SamplingToolResult,
    SamplingToolUse,
    SamplingTurn,
)
from mcpstation.host.server_logs import apply_log_level, server_logger
from mcpstation.host.terminal import TerminalElicitor

__all__ = [
    "AuthProviderFactory",
    "ElicitationAnswer",
    "ElicitationHandler",
    "ElicitationModes",
    "ElicitationRequest",
    "FileTokenStorage",
    "FormRequest",
    "Host",
    "OAuthProviders",
    "OpenAICompatibleSampler",
    "Roots",
    "SamplingAnswer",
    "SamplingFailed",
    "SamplingHandler",
    "SamplingMedia",
    "SamplingPart",
    "SamplingPolicy",
    "SamplingRequest",
    "SamplingText",
    "SamplingTool",
    "SamplingToolResult",
    "SamplingToolUse",
    "SamplingTurn",
    "StoreTokenStorage",
    "TerminalElicitor",
    "UrlRequest",
    "apply_defaults",
    "apply_log_level",
    "oauth_provider_for",
    "server_logger",
]
