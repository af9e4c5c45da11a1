"""`mcpstation policy`: ask the URL guard and the command classifier, for operators and scripts.

    mcpstation policy url URL [URL ...] [--for fetch|server] [--json]      exit 0 all allowed, 1 otherwise
    mcpstation policy command [--env K=V ...] [--json] -- CMD ARGS...      exit 0 allow, 1 confirm, 2 deny

Neither command runs or fetches anything; `url` asks DNS for host names.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Literal

import typer
from rich.console import Console
from rich.markup import escape

from mcpstation.policy.commands import classify_command
from mcpstation.policy.urls import check_url

EXIT_ALLOWED = 0
EXIT_REFUSED = 1

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


@policy_app.command("command")
def command_command(
    argv: Annotated[list[str], typer.Argument(help="The command and its arguments, after `--`.", show_default=False)],
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V for the server's environment.")] = None,
    allow_package: Annotated[
        list[str] | None, typer.Option("--allow-package", help="A package runners may start (repeatable).")
    ] = None,
    allow_command: Annotated[
        list[str] | None, typer.Option("--allow-command", help="An executable to vouch for (repeatable).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Classify a stdio server command: exit 0 allow, 1 confirm, 2 deny. Nothing is run."""
    environment: dict[str, str] = {}
    for item in env or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected K=V, got {item!r}", param_hint="--env")
        environment[key] = value
    verdict = classify_command(
        argv[0],
        argv[1:],
        environment,
        allowed_packages=tuple(allow_package or ()),
        allowed_commands=tuple(allow_command or ()),
    )
    if json_output:
        _emit_json(verdict.to_dict())
    else:
        style = {"allow": "green", "confirm": "yellow", "deny": "red"}[verdict.verdict]
        Console().print(f"[{style}]{verdict.verdict}[/{style}]: {escape(verdict.reason)}", soft_wrap=True)
    raise typer.Exit(verdict.exit_code)
