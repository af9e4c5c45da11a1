"""Security policy: the URL guard (SSRF), stdio command classification, text cleaning and tool pinning."""

from mcpstation.policy.addresses import BLOCKED_NETWORKS, BlockedNetwork, blocked_reason, embedded_ipv4
from mcpstation.policy.commands import CommandVerdict, Verdict, classify_command
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
    "AsyncResolver",
    "BlockedNetwork",
    "CommandVerdict",
    "Purpose",
    "Resolver",
    "UrlGuard",
    "UrlVerdict",
    "Verdict",
    "blocked_reason",
    "check_url",
    "check_url_async",
    "classify_command",
    "clean_text",
    "embedded_ipv4",
    "tool_fingerprint",
    "url_arguments",
]
