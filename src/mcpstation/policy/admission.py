"""May this server be added at run time? Allowlists first, then command safety or the URL guard.

The rule: what an agent may add is limited by `allowed_dynamic_stdio_commands` and
`allowed_dynamic_url_prefixes`; an empty list forbids that kind. Being on the command list only
means the command may be used: what it runs is judged by the classifier with the packages on
`allowed_packages`, so `npx` on the list does not vouch for `npx -y anything`. Nor does an
allowlisted package vouch for what it is handed: its arguments and environment are judged too
(`_runtime.py`: the station's variables, shell syntax, proxies and TLS trust, sensitive paths). A URL must pass
the SSRF guard; hosts the operator names in an allowlisted URL prefix (say
`http://localhost:3000/`) count as explicitly allowed.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import urlsplit

from mcpstation.config.models import PolicySettings, ServerSpec, StdioServerSpec
from mcpstation.policy._paths import is_absolute
from mcpstation.policy._runtime import runtime_verdicts
from mcpstation.policy._verdicts import CommandVerdict, confirm, worst
from mcpstation.policy.commands import Rule, Verdict, classify_command
from mcpstation.policy.urls import UrlGuard


class Gate(StrEnum):
    """The admission steps before (or instead of) the command classifier."""

    STDIO_OFF = "stdio_off"  # allowed_dynamic_stdio_commands is empty
    COMMAND_NOT_LISTED = "command_not_listed"
    URL_OFF = "url_off"  # allowed_dynamic_url_prefixes is empty
    URL_NOT_LISTED = "url_not_listed"
    URL_REFUSED = "url_refused"  # the SSRF guard said no
    URL_ALLOWED = "url_allowed"
    UNSUPPORTED = "unsupported"  # it needs what the station cannot do yet (`ServerSpec.unsupported`)
    PER_USER_FROM_CONFIG = "per_user_from_config"  # users' tokens go only where the operator's config says


@dataclass(frozen=True, slots=True)
class Admission:
    """The verdict on a server added at run time, the rule or gate that decided it, and the reason in words."""

    decision: Verdict
    reason: str
    rule: Rule | Gate

    @property
    def allowed(self) -> bool:
        return self.decision is Verdict.ALLOW


async def admit(spec: ServerSpec, policy: PolicySettings, *, guard: UrlGuard | None = None) -> Admission:
    """Judge `spec` as a server added at run time. Classifying never runs or connects anything."""
    if spec.unsupported is not None:
        return Admission(Verdict.DENY, spec.unsupported, Gate.UNSUPPORTED)
    if spec.auth.upstream != "shared":
        return Admission(
            Verdict.DENY,
            f"a server reached as each user (auth.upstream {spec.auth.upstream!r}) comes only from the config: "
            "the station would send every user's own token to the authorization server it names",
            Gate.PER_USER_FROM_CONFIG,
        )
    if isinstance(spec, StdioServerSpec):
        return admit_command(spec, policy)
    return await _admit_url(spec.url, policy, guard)


def command_listed(command: str, allowed: tuple[str, ...]) -> bool:
    """Whether `command` is on `allowed_dynamic_stdio_commands`.

    An absolute entry matches that exact path; a bare entry matches the same bare name (looked up
    on the station's PATH), never a path that merely ends in it (`/home/x/python` is not `python`).
    """
    if is_absolute(command):
        normal = posixpath.normpath(command)
        return any(is_absolute(entry) and posixpath.normpath(entry) == normal for entry in allowed)
    return command in allowed


def admit_command(spec: StdioServerSpec, policy: PolicySettings) -> Admission:
    """Judge a stdio server added at run time: on the command list, then classified with `allowed_packages`."""
    allowed = policy.allowed_dynamic_stdio_commands
    if not allowed:
        return Admission(
            Verdict.DENY,
            "servers run as commands may not be added at run time (policy.allowed_dynamic_stdio_commands is empty)",
            Gate.STDIO_OFF,
        )
    if not command_listed(spec.command, allowed):
        listed = ", ".join(repr(c) for c in allowed)
        return Admission(
            Verdict.DENY,
            f"command {spec.command!r} is not in policy.allowed_dynamic_stdio_commands ({listed})",
            Gate.COMMAND_NOT_LISTED,
        )
    env = {key: value.get_secret_value() for key, value in spec.env.items()}
    verdict = classify_command(
        spec.command,
        spec.args,
        env,
        allowed_packages=policy.allowed_packages,
        allowed_commands=allowed,
        cwd=spec.cwd,
    )
    if verdict.verdict is Verdict.DENY:
        return Admission(verdict.verdict, verdict.reason, verdict.rule)
    problems = runtime_verdicts(spec.args, env, cwd=spec.cwd)
    if spec.inherit_env:
        names = ", ".join(spec.inherit_env)
        problems.append(
            confirm(
                Rule.INHERITED_ENV,
                f"it asks for the station's own environment variables ({names}): "
                "a server added at run time inherits none unless a person approves",
            )
        )
    return _combined(verdict, problems)


def _combined(verdict: CommandVerdict, problems: list[CommandVerdict]) -> Admission:
    """The classifier's verdict, made stricter by what a run-time add hands its command.

    The most severe decides the rule; every reason of that severity is said, the classifier's first.
    """
    decisive = worst([verdict, *problems])
    if decisive is verdict:
        reasons = [verdict.reason, *(p.reason for p in problems if p.verdict is verdict.verdict)]
        return Admission(verdict.verdict, "; also ".join(reasons), verdict.rule)
    reasons = [p.reason for p in problems if p.verdict is decisive.verdict]
    if verdict.verdict is Verdict.ALLOW:
        reasons.append(f"the command itself is allowed ({verdict.reason})")
    return Admission(decisive.verdict, "; ".join(reasons), decisive.rule)


async def _admit_url(url: str, policy: PolicySettings, guard: UrlGuard | None) -> Admission:
    prefixes = policy.allowed_dynamic_url_prefixes
    if not prefixes:
        return Admission(
            Verdict.DENY,
            "remote servers may not be added at run time (policy.allowed_dynamic_url_prefixes is empty)",
            Gate.URL_OFF,
        )
    if not any(url.startswith(prefix) for prefix in prefixes):
        listed = ", ".join(repr(p) for p in prefixes)
        return Admission(
            Verdict.DENY, f"URL {url!r} does not start with an allowed prefix ({listed})", Gate.URL_NOT_LISTED
        )
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
        return Admission(Verdict.DENY, f"URL {url!r} refused: {verdict.reason}", Gate.URL_REFUSED)
    return Admission(Verdict.ALLOW, f"URL {url!r} is allowed by prefix and address", Gate.URL_ALLOWED)
