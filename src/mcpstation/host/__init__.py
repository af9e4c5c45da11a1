"""The host side of each session: what the station answers when a server asks.

Roots, sampling (bridged to the host application's LLM, under policy), elicitation (form and
URL, with schema defaults), and server log messages into Python logging. `Host` puts them
together as the connection layer's `SessionHooks`.

The names below are imported when first used (PEP 562): a station loads `Host` and what a host
it builds uses, not the sampler, the terminal prompt or every request type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.host._allowances import ElicitationModes, SamplingPolicy
    from mcpstation.host.elicitation import (
        ElicitationAnswer,
        ElicitationHandler,
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

_HOMES: dict[str, str] = {
    **dict.fromkeys(("ElicitationModes", "SamplingPolicy"), "mcpstation.host._allowances"),
    **dict.fromkeys(
        (
            "ElicitationAnswer",
            "ElicitationHandler",
            "ElicitationRequest",
            "FormRequest",
            "UrlRequest",
            "apply_defaults",
        ),
        "mcpstation.host.elicitation",
    ),
    **dict.fromkeys(("AuthProviderFactory", "Host"), "mcpstation.host.host"),
    **dict.fromkeys(
        ("FileTokenStorage", "OAuthProviders", "StoreTokenStorage", "oauth_provider_for"), "mcpstation.host.oauth"
    ),
    "OpenAICompatibleSampler": "mcpstation.host.openai_sampler",
    "Roots": "mcpstation.host.roots",
    **dict.fromkeys(
        (
            "SamplingAnswer",
            "SamplingFailed",
            "SamplingHandler",
            "SamplingMedia",
            "SamplingPart",
            "SamplingRequest",
            "SamplingText",
            "SamplingTool",
            "SamplingToolResult",
            "SamplingToolUse",
            "SamplingTurn",
        ),
        "mcpstation.host.sampling",
    ),
    **dict.fromkeys(("apply_log_level", "server_logger"), "mcpstation.host.server_logs"),
    "TerminalElicitor": "mcpstation.host.terminal",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
