"""`mcpstation audit` and `mcpstation token create`: what the store keeps, read from the CLI."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

import typer
from rich.table import Table

from mcpstation.cli._runner import JsonOption, _configure_logging, _emit_json, _run_main, _wants_json, open_store, out
from mcpstation.errors import UsageError
from mcpstation.store import ActionRecord

token_app = typer.Typer(help="API tokens for the HTTP API (kept hashed in the store).", no_args_is_help=True)

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}


def parse_since(value: str | None) -> datetime | None:
    """`30m`, `2h`, `7d`, or an ISO 8601 time; None for no bound."""
    if value is None:
        return None
    if match := _DURATION.match(value):
        return datetime.now(UTC) - timedelta(**{_UNITS[match[2]]: int(match[1])})
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(f"--since must be like 30m, 2h, 7d or an ISO 8601 time, not {value!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def audit(
    server: Annotated[str | None, typer.Option("--server", help="Only this server.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="30m, 2h, 7d or an ISO 8601 time.")] = None,
    kind: Annotated[str, typer.Option("--kind", help="calls, actions or all.")] = "all",
    limit: Annotated[int, typer.Option("--limit", help="At most this many of each kind.")] = 100,
    json_output: JsonOption = False,
) -> None:
    """Audited tool calls and management actions, newest first."""
    _configure_logging(logging.WARNING)

    async def main() -> None:
        moment = parse_since(since)
        async with await open_store() as store:
            calls = await store.list_calls(server, moment, limit) if kind in ("calls", "all") else ()
            actions = await store.list_actions(server, moment, limit) if kind in ("actions", "all") else ()
        if _wants_json(json_output):
            _emit_json(
                {
                    "calls": [_call_dict(c) for c in calls],
                    "actions": [
                        {
                            "at": a.at.isoformat(),
                            "actor": a.actor,
                            "action": a.action,
                            "server": a.server,
                            "detail": a.detail,
                        }
                        for a in actions
                    ],
                }
            )
            return
        if kind in ("calls", "all"):
            table = Table(title=f"{len(calls)} calls")
            for column in ("at", "server", "tool", "caller", "outcome", "s", "args bytes", "error"):
                table.add_column(column, overflow="fold")
            for c in calls:
                table.add_row(
                    c.at.isoformat(timespec="seconds"), c.server, c.tool, c.caller or "", c.outcome,
                    f"{c.duration_s:.3f}", str(c.argument_bytes), c.error or "",
                )  # fmt: skip
            out.print(table)
        if kind in ("actions", "all"):
            table = Table(title=f"{len(actions)} management actions")
            for column in ("at", "actor", "action", "server", "detail"):
                table.add_column(column, overflow="fold")
            for a in actions:
                table.add_row(a.at.isoformat(timespec="seconds"), a.actor, a.action, a.server or "", str(a.detail))
            out.print(table)

    _run_main(main)


def _action_dict(action: ActionRecord) -> dict[str, object]:
    return {
        "at": action.at.isoformat(),
        "actor": action.actor,
        "action": action.action,
        "server": action.server,
        "detail": action.detail,
    }


def _call_dict(call: object) -> dict[str, object]:
    fields = ("id", "server", "tool", "caller", "outcome", "duration_s", "argument_bytes", "argument_sha256", "error")
    data: dict[str, object] = {name: getattr(call, name) for name in fields}
    data["at"] = call.at.isoformat()  # type: ignore[attr-defined]
    return data


@token_app.command("create")
def token_create(
    role: Annotated[Literal["admin", "user"], typer.Option("--role", help="admin manages servers; user calls tools.")],
    name: Annotated[str | None, typer.Option("--name", help="What the token is for.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Create an API token and print it, once: only its hash is kept."""
    _configure_logging(logging.WARNING)
    label = name or f"{role}-{datetime.now(UTC).strftime('%Y%m%d%H%M%S')}"

    async def main() -> None:
        async with await open_store() as store:
            token, record = await store.create_token(label, role, actor="cli")
        if _wants_json(json_output):
            _emit_json({"token": token, "name": record.name, "role": record.role})
        else:
            out.print(f"token for {record.name!r} ({record.role}); it is shown only this once:")
            out.print(token, markup=False)

    _run_main(main)
