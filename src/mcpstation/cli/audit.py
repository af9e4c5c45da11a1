"""`mcpstation audit` and `mcpstation token create`: what the store keeps, read from the CLI."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from mcpstation.cli._runner import (
    JsonOption,
    _configure_logging,
    _emit_json,
    _errors_to_exit_codes,
    _run_main,
    _wants_json,
    expect,
    open_store,
    out,
    running_or,
)
from mcpstation.errors import UsageError

if TYPE_CHECKING:
    from mcpstation.cli._remote import RemoteStation
    from mcpstation.store import ActionRecord, CallRecord

token_app = typer.Typer(help="API tokens for the HTTP API (kept hashed in the store).", no_args_is_help=True)
audit_app = typer.Typer(help="Audited tool calls and management actions, newest first.")

_DURATION = re.compile(r"^(\d+)([smhd])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
KINDS = ("calls", "actions", "all")
CALL_FIELDS = (
    "id", "server", "tool", "caller", "outcome", "duration_s", "argument_bytes", "argument_sha256", "error", "at",
)  # fmt: skip
ACTION_FIELDS = ("at", "actor", "action", "server", "detail")


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

    async def from_store() -> dict[str, list[dict[str, Any]]]:
        async with await open_store() as store:
            calls = await store.list_calls(server, moment, limit) if kind in ("calls", "all") else ()
            actions = await store.list_actions(server, moment, limit) if kind in ("actions", "all") else ()
        return {"calls": [_call_dict(c) for c in calls], "actions": [_action_dict(a) for a in actions]}

    def remote(station: RemoteStation) -> dict[str, list[dict[str, Any]]]:
        params = {"kind": kind, "limit": str(limit)}
        if server is not None:
            params["server"] = server
        if moment is not None:
            params["since"] = moment.isoformat()
        body = expect(station.get("/api/mcp/audit", params=params))
        return {
            "calls": [{name: c[name] for name in CALL_FIELDS} for c in body["calls"]],
            "actions": [{name: a[name] for name in ACTION_FIELDS} for a in body["actions"]],
        }

    report = running_or(remote, lambda: _run_main(from_store))
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


def _action_dict(action: ActionRecord) -> dict[str, Any]:
    return {
        "at": action.at.isoformat(),
        "actor": action.actor,
        "action": action.action,
        "server": action.server,
        "detail": dict(action.detail),
    }


def _call_dict(call: CallRecord) -> dict[str, Any]:
    data: dict[str, Any] = {name: getattr(call, name) for name in CALL_FIELDS if name != "at"}
    data["at"] = call.at.isoformat()
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
