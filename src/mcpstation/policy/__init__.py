"""Security policy: the URL guard (SSRF), stdio command classification, text cleaning and tool pinning."""

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
