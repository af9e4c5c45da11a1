"""`mcpstation policy`: ask the URL guard and the command classifier, for operators and scripts.

    mcpstation policy url URL [URL ...] [--for fetch|server] [--json]      exit 0 all allowed, 1 otherwise
    mcpstation policy command [--env K=V ...] [--runtime] [--json] -- CMD ARGS...   exit 0 allow, 1 confirm, 2 deny

Neither command runs or fetches anything; `url` asks DNS for host names. `command` reads
`[policy] allowed_packages` from the config (`--config`, `$MCPSTATION_CONFIG` or `./mcpstation.toml`)
and adds the `--allow-package` ones; `--runtime` judges the command as `servers add` and the LLM's
`mcp_add_server` would, `allowed_dynamic_stdio_commands` included.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from mcpstation.cli._runner import _globals
from mcpstation.config.loader import load_config, resolve_config_path
from mcpstation.config.models import PolicySettings, StdioServerSpec
from mcpstation.errors import StationError
from mcpstation.policy.admission import admit_command
from mcpstation.policy.commands import Verdict, classify_command
from mcpstation.policy.urls import check_url

EXIT_ALLOWED = 0
EXIT_REFUSED = 1
EXIT_FOR_VERDICT = {Verdict.ALLOW: 0, Verdict.CONFIRM: 1, Verdict.DENY: 2}  # `policy command`

policy_app = typer.Typer(
    help="Ask the security policy about URLs and stdio commands.", no_args_is_help=True, add_completion=False
)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


@policy_app.command("url")
def url_command(
    urls: Annotated[list[str], typer.Argument(help="URLs to judge.", show_default=False)],
    purpose: Annotated[
        str, typer.Option("--for", help="'fetch' (http, https) or 'server' (also ws, wss).", case_sensitive=False)
    ] = "fetch",
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", help="An internal host to allow (repeatable).")
    ] = None,
    allow_cidr: Annotated[
        list[str] | None, typer.Option("--allow-cidr", help="An internal network to allow (repeatable).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Judge URLs with the SSRF guard; exit 0 when every URL is allowed, 1 otherwise."""
    kind = purpose.lower()
    if kind not in {"fetch", "server"}:
        raise typer.BadParameter("expected 'fetch' or 'server'", param_hint="--for")
    checked_purpose: Literal["fetch", "server"] = "server" if kind == "server" else "fetch"
    try:
        verdicts = [
            check_url(
                url,
                purpose=checked_purpose,
                allowed_hosts=tuple(allow_host or ()),
                allowed_cidrs=tuple(allow_cidr or ()),
            )
            for url in urls
        ]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allow-cidr") from None
    if json_output:
        data = [v.to_dict() for v in verdicts]
        _emit_json(data[0] if len(data) == 1 else data)
    else:
        out = Console()
        for verdict in verdicts:
            style = "green" if verdict.allowed else "red"
            label = "allowed" if verdict.allowed else "refused"
            where = f" [{', '.join(verdict.addresses)}]" if verdict.addresses else ""
            out.print(
                f"[{style}]{label}[/{style}] {escape(verdict.url)}: {escape(verdict.reason)}{escape(where)}",
                soft_wrap=True,
            )
    raise typer.Exit(EXIT_ALLOWED if all(v.allowed for v in verdicts) else EXIT_REFUSED)


def _configured_policy() -> PolicySettings:
    """The `[policy]` table of the config this CLI would load; the defaults when there is none."""
    path = resolve_config_path(_globals.config_path)
    if path is None:
        return PolicySettings()
    try:
        return load_config(path).policy
    except StationError as exc:  # boundary: the CLI turns errors into exit codes
        Console(stderr=True).print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None


@policy_app.command("command")
def command_command(
    argv: Annotated[list[str], typer.Argument(help="The command and its arguments, after `--`.", show_default=False)],
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V for the server's environment.")] = None,
    allow_package: Annotated[
        list[str] | None,
        typer.Option("--allow-package", help="A package runners may start, besides policy.allowed_packages."),
    ] = None,
    allow_command: Annotated[
        list[str] | None,
        typer.Option("--allow-command", help="An executable servers may use; an absolute path vouches for it."),
    ] = None,
    runtime: Annotated[
        bool,
        typer.Option("--runtime", help="Judge it as a server added at run time (allowed_dynamic_stdio_commands)."),
    ] = False,
    json_output: JsonOption = False,
) -> None:
    """Classify a stdio server command: exit 0 allow, 1 confirm, 2 deny. Nothing is run."""
    environment: dict[str, str] = {}
    for item in env or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected K=V, got {item!r}", param_hint="--env")
        environment[key] = value
    configured = _configured_policy()
    try:
        policy = PolicySettings.model_validate({
            **configured.model_dump(),
            "allowed_packages": (*configured.allowed_packages, *(allow_package or ())),
            "allowed_dynamic_stdio_commands": (*configured.allowed_dynamic_stdio_commands, *(allow_command or ())),
        })  # fmt: skip
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--allow-package") from None
    if runtime:
        try:
            spec = StdioServerSpec.model_validate(
                {"name": "candidate", "command": argv[0], "args": argv[1:], "env": environment}
            )
        except ValueError as exc:
            raise typer.BadParameter(str(exc), param_hint="CMD") from None
        admission = admit_command(spec, policy)
        decision, rule, reason = admission.decision, admission.rule.value, admission.reason
    else:
        verdict = classify_command(
            argv[0],
            argv[1:],
            environment,
            allowed_packages=policy.allowed_packages,
            allowed_commands=tuple(allow_command or ()),
        )
        decision, rule, reason = verdict.verdict, verdict.rule.value, verdict.reason
    if json_output:
        _emit_json({"verdict": decision.value, "rule": rule, "reason": reason})
    else:
        style = {Verdict.ALLOW: "green", Verdict.CONFIRM: "yellow", Verdict.DENY: "red"}[decision]
        Console().print(f"[{style}]{decision.value}[/{style}]: {escape(reason)}", soft_wrap=True)
    raise typer.Exit(EXIT_FOR_VERDICT[decision])
