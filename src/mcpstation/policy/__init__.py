"""Security policy: the URL guard (SSRF), stdio command classification, text cleaning and tool pinning.

The names below are imported when first used (PEP 562): the URL guard and text cleaning a station
always uses load without the command classifier, which a station loads when it judges a command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.policy.addresses import BLOCKED_NETWORKS, BlockedNetwork, blocked_reason, embedded_ipv4
    from mcpstation.policy.admission import Admission, Gate, admit, admit_command
    from mcpstation.policy.commands import CommandVerdict, Rule, Verdict, classify_command
    from mcpstation.policy.oauth_guard import RequestGuard, oauth_request_guard
    from mcpstation.policy.text import clean_text, tool_fingerprint
    from mcpstation.policy.urls import (
        AsyncResolver,
        Purpose,
        Resolver,
        UrlGuard,
        UrlVerdict,
        check_url,
        check_url_async,
        url_arguments,
    )

__all__ = [
    "BLOCKED_NETWORKS",
    "Admission",
    "AsyncResolver",
    "BlockedNetwork",
    "CommandVerdict",
    "Gate",
    "Purpose",
    "RequestGuard",
    "Resolver",
    "Rule",
    "UrlGuard",
    "UrlVerdict",
    "Verdict",
    "admit",
    "admit_command",
    "blocked_reason",
    "check_url",
    "check_url_async",
    "classify_command",
    "clean_text",
    "embedded_ipv4",
    "oauth_request_guard",
    "tool_fingerprint",
    "url_arguments",
]

_HOMES: dict[str, str] = {
    "BLOCKED_NETWORKS": "mcpstation.policy.addresses",
    "BlockedNetwork": "mcpstation.policy.addresses",
    "blocked_reason": "mcpstation.policy.addresses",
    "embedded_ipv4": "mcpstation.policy.addresses",
    "Admission": "mcpstation.policy.admission",
    "Gate": "mcpstation.policy.admission",
    "admit": "mcpstation.policy.admission",
    "admit_command": "mcpstation.policy.admission",
    "CommandVerdict": "mcpstation.policy.commands",
    "Rule": "mcpstation.policy.commands",
    "Verdict": "mcpstation.policy.commands",
    "classify_command": "mcpstation.policy.commands",
    "RequestGuard": "mcpstation.policy.oauth_guard",
    "oauth_request_guard": "mcpstation.policy.oauth_guard",
    "clean_text": "mcpstation.policy.text",
    "tool_fingerprint": "mcpstation.policy.text",
    "AsyncResolver": "mcpstation.policy.urls",
    "Purpose": "mcpstation.policy.urls",
    "Resolver": "mcpstation.policy.urls",
    "UrlGuard": "mcpstation.policy.urls",
    "UrlVerdict": "mcpstation.policy.urls",
    "check_url": "mcpstation.policy.urls",
    "check_url_async": "mcpstation.policy.urls",
    "url_arguments": "mcpstation.policy.urls",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
