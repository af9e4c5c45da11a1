"""May this server be added at run time? Allowlists first, then command safety or the URL guard.

Seed 003's rule: what an agent may add is limited by `allowed_dynamic_stdio_commands` and
`allowed_dynamic_url_prefixes`; an empty list forbids that kind. On top of that, a stdio command
is classified (deny, confirm, allow) and a URL must pass the SSRF guard. Hosts the operator names
in an allowlisted URL prefix (seed 003's `http://localhost:3000/`) count as explicitly allowed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from mcpstation.config.models import PolicySettings, ServerSpec, StdioServerSpec
from mcpstation.policy.commands import classify_command
from mcpstation.policy.urls import UrlGuard

Decision = Literal["allow", "confirm", "deny"]


@dataclass(frozen=True, slots=True)
class Admission:
    """The verdict on a server added at run time, with the reason in words."""

    decision: Decision
    reason: str

    @property
    def allowed(self) -> bool:
        return self.decision == "allow"


async def admit(spec: ServerSpec, policy: PolicySettings, *, guard: UrlGuard | None = None) -> Admission:
    """Judge `spec` as a server added at run time. Classifying never runs or connects anything."""
    if isinstance(spec, StdioServerSpec):
        return _admit_command(spec, policy)
    return await _admit_url(spec.url, policy, guard)


def _admit_command(spec: StdioServerSpec, policy: PolicySettings) -> Admission:
    allowed = policy.allowed_dynamic_stdio_commands
    if not allowed:
        return Admission(
            "deny",
            "servers run as commands may not be added at run time (policy.allowed_dynamic_stdio_commands is empty)",
        )
    if spec.command not in allowed and os.path.basename(spec.command) not in allowed:
        listed = ", ".join(repr(c) for c in allowed)
        return Admission("deny", f"command {spec.command!r} is not in policy.allowed_dynamic_stdio_commands ({listed})")
    env = {key: value.get_secret_value() for key, value in spec.env.items()}
    verdict = classify_command(spec.command, spec.args, env, allowed_commands=allowed)
    return Admission(verdict.verdict, verdict.reason)


async def _admit_url(url: str, policy: PolicySettings, guard: UrlGuard | None) -> Admission:
    prefixes = policy.allowed_dynamic_url_prefixes
    if not prefixes:
        return Admission(
            "deny", "remote servers may not be added at run time (policy.allowed_dynamic_url_prefixes is empty)"
        )
    if not any(url.startswith(prefix) for prefix in prefixes):
        listed = ", ".join(repr(p) for p in prefixes)
        return Admission("deny", f"URL {url!r} does not start with an allowed prefix ({listed})")
    named_hosts = tuple(host for host in (urlsplit(p).hostname for p in prefixes) if host)
    guard = guard or UrlGuard.from_policy(policy)
    guard = UrlGuard(
        allowed_hosts=(*guard.allowed_hosts, *named_hosts),
        allowed_cidrs=guard.allowed_cidrs,
        block_internal=guard.block_internal,
        resolver=guard.resolver,
    )
    verdict = await guard.check(url, purpose="server")
    if not verdict.allowed:
        return Admission("deny", f"URL {url!r} refused: {verdict.reason}")
    return Admission("allow", f"URL {url!r} is allowed by prefix and address")
