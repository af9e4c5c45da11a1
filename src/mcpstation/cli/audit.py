"""`mcpstation audit` and `mcpstation token create`: what the store keeps, read from the CLI."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from mcpstation.cli._runner import (
    JsonOption,
    _configure_logging,
    _emit_json,
    _errors_to_exit_codes,
    _run_main,
    _wants_json,
    open_store,
    out,
)
from mcpstation.cli._station import with_station
from mcpstation.cli._view import AuditQuery, Needs
from mcpstation.errors import UsageError

if TYPE_CHECKING:
    from mcpstation.cli._view import Shape, StationView

token_app = typer.Typer(help="API tokens for the HTTP API (kept hashed in the store).", no_args_is_help=True)
audit_app = typer.Typer(help="Audited tool calls and management actions, newest first.")

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
KINDS = ("calls", "actions", "all")


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


@audit_app.command("audit")
def audit(
    server: Annotated[str | None, typer.Option("--server", help="Only this server.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="30m, 2h, 7d or an ISO 8601 time.")] = None,
    kind: Annotated[str, typer.Option("--kind", help="calls, actions or all.")] = "all",
    limit: Annotated[int, typer.Option("--limit", help="At most this many of each kind.")] = 100,
    json_output: JsonOption = False,
) -> None:
    """Audited tool calls and management actions, newest first."""
    _configure_logging(logging.WARNING)
    with _errors_to_exit_codes():
        moment = parse_since(since)
        if kind not in KINDS:
            raise UsageError(f"--kind must be calls, actions or all, not {kind!r}")
        if limit < 1:
            raise UsageError(f"--limit must be at least 1, not {limit}")

    async def command(view: StationView) -> dict[str, list[Shape]]:
        return await view.audit(AuditQuery(server, moment, kind, limit))

    report = with_station(command, needs=Needs.STORE, require_server=False)
    if _wants_json(json_output):
        _emit_json(report)
        return
    from rich.table import Table

    if kind in ("calls", "all"):
        table = Table(title=f"{len(report['calls'])} calls")
        for column in ("at", "server", "tool", "caller", "outcome", "s", "args bytes", "error"):
            table.add_column(column, overflow="fold")
        for c in report["calls"]:
            table.add_row(
                _seconds(c["at"]), c["server"], c["tool"], c["caller"] or "", c["outcome"],
                f"{c['duration_s']:.3f}", str(c["argument_bytes"]), c["error"] or "",
            )  # fmt: skip
        out.print(table)
    if kind in ("actions", "all"):
        table = Table(title=f"{len(report['actions'])} management actions")
        for column in ("at", "actor", "action", "server", "detail"):
            table.add_column(column, overflow="fold")
        for a in report["actions"]:
            table.add_row(_seconds(a["at"]), a["actor"], a["action"], a["server"] or "", str(a["detail"]))
        out.print(table)


def _seconds(at: str) -> str:
    return datetime.fromisoformat(at).isoformat(timespec="seconds")


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
