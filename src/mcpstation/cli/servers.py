"""`mcpstation servers ...`: manage servers at run time (the store), or a server file in place.

Without `--config-file`, a change goes through the station: the same allowlists, command policy
and audit as the HTTP API and the LLM's management tools, persisted before it is applied. With
`--config-file FILE`, the verbs edit that JSON or TOML file instead, atomically and
under a lock.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpstation.cli._exits import EXIT_CALL_FAILED
from mcpstation.cli._runner import JsonOption, _configure_logging, _emit_json, _Exit, _wants_json, out
from mcpstation.cli._station import with_station
from mcpstation.cli._view import Needs, ServerVerb
from mcpstation.errors import StationError, UsageError

if TYPE_CHECKING:
    from mcpstation.cli._view import Shape, StationView

servers_app = typer.Typer(
    help="Servers added at run time (or, with --config-file, a server file).", no_args_is_help=True
)

ConfigFileOption = Annotated[
    str | None, typer.Option("--config-file", help="Edit this JSON or TOML server file instead of the store.")
]
ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Who makes the change, for the audit log (cli:NAME; default cli:cli).")
]


def _pairs(values: list[str] | None, what: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values or []:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{what} must look like KEY=VALUE, not {value!r}")
        pairs[key] = rest
    return pairs


def _report(change: dict[str, Any], as_json: bool) -> None:
    if as_json:
        _emit_json(change)
    else:
        out.print(change["message"], style="green" if change["ok"] else "red", markup=False)
    if not change["ok"]:
        raise typer.Exit(EXIT_CALL_FAILED)  # refused by policy, or it did not apply


def _edit(path: str, verb: str, *args: Any) -> None:
    from mcpstation.config.editor import ServerFileEditor

    _configure_logging(logging.WARNING)
    editor = ServerFileEditor(path)
    try:
        getattr(editor, verb)(*args)
    except StationError as exc:  # boundary: the CLI turns errors into exit codes
        out.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None


@servers_app.command("list")
def list_servers(config_file: ConfigFileOption = None, json_output: JsonOption = False) -> None:
    """Every server with its origin (static or dynamic), state, version and counts."""
    if config_file is not None:
        from rich.table import Table

        from mcpstation.config.editor import ServerFileEditor

        entries = ServerFileEditor(config_file).list()
        if _wants_json(json_output):
            _emit_json(
                [{"name": e.name, "enabled": e.enabled, "transport": e.transport, "target": e.target} for e in entries]
            )
            return
        table = Table(title=config_file)
        for column in ("name", "enabled", "transport", "target"):
            table.add_column(column, overflow="fold")
        for e in entries:
            table.add_row(e.name, str(e.enabled), e.transport, e.target)
        out.print(table)
        return
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> list[Shape]:
        servers: list[Shape] = (await view.status())["servers"]
        return servers

    servers = with_station(command, require_server=False)
    if _wants_json(json_output):
        _emit_json(servers)
    else:
        from mcpstation.cli import _render

        out.print(_render.servers_table(servers))


@servers_app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="The server's name.")],
    command: Annotated[list[str] | None, typer.Argument(help="For stdio: -- COMMAND [ARGS...]")] = None,
    url: Annotated[str | None, typer.Option("--url", help="For a remote server: its URL.")] = None,
    transport: Annotated[str | None, typer.Option("--transport", help="streamable_http, sse or websocket.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="KEY=VALUE for the child (repeatable).")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="KEY=VALUE HTTP header (repeatable).")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", help="The namespace for its tools.")] = None,
    config_file: ConfigFileOption = None,
    actor: ActorOption = None,
    json_output: JsonOption = False,
) -> None:
    """Add a server: `NAME -- COMMAND [ARGS...]` for stdio, `NAME --url URL` for a remote one."""
    from mcpstation.config.models import TRANSPORTS

    entry: dict[str, Any] = {"name": name}
    if command and command[0] == "--":
        command = command[1:]
    if url is not None and command:
        raise typer.BadParameter("give either --url or -- COMMAND, not both")
    if url is not None:
        kind = transport or "streamable_http"
        if kind not in TRANSPORTS or kind == "stdio":
            raise typer.BadParameter(f"--transport must be streamable_http, sse or websocket, not {kind!r}")
        entry |= {"transport": kind, "url": url, "headers": _pairs(header, "--header")}
    elif command:
        entry |= {"transport": "stdio", "command": command[0], "args": command[1:], "env": _pairs(env, "--env")}
    else:
        raise typer.BadParameter("give -- COMMAND [ARGS...] for a stdio server or --url URL for a remote one")
    if namespace is not None:
        entry["namespace"] = namespace
    if config_file is not None:
        _edit(config_file, "add", {k: v for k, v in entry.items() if v not in ({}, [])})
        out.print(f"added {name!r} to {config_file}")
        return
    _change(ServerVerb.ADD, name, json_output, actor, entry)


def _change(verb: ServerVerb, name: str, json_output: bool, actor: str | None, entry: Shape | None = None) -> None:
    """Make a change to a server on the station, as `actor`, and report it."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> Shape:
        try:
            return await view.change_server(verb, name, entry)
        except UsageError as exc:  # a bad entry: said plainly
            out.print(str(exc), style="red", markup=False)
            raise _Exit(exc.exit_code) from None

    # The change starts what it changes (an added or enabled server): the rest may stay stopped.
    changed = with_station(command, needs=Needs.LISTINGS, require_server=False, actor=actor)
    _report(changed, _wants_json(json_output))


@servers_app.command("remove")
def remove(
    name: str, config_file: ConfigFileOption = None, actor: ActorOption = None, json_output: JsonOption = False
) -> None:
    """Remove a server added at run time (static servers live in the config file)."""
    if config_file is not None:
        _edit(config_file, "remove", name)
        out.print(f"removed {name!r} from {config_file}")
        return
    _change(ServerVerb.REMOVE, name, json_output, actor)


@servers_app.command("enable")
def enable(
    name: str, config_file: ConfigFileOption = None, actor: ActorOption = None, json_output: JsonOption = False
) -> None:
    """Enable a server and connect it."""
    if config_file is not None:
        _edit(config_file, "set_enabled", name, True)
        out.print(f"enabled {name!r} in {config_file}")
        return
    _change(ServerVerb.ENABLE, name, json_output, actor)


@servers_app.command("disable")
def disable(
    name: str, config_file: ConfigFileOption = None, actor: ActorOption = None, json_output: JsonOption = False
) -> None:
    """Disable a server: disconnected, kept in the store."""
    if config_file is not None:
        _edit(config_file, "set_enabled", name, False)
        out.print(f"disabled {name!r} in {config_file}")
        return
    _change(ServerVerb.DISABLE, name, json_output, actor)


@servers_app.command("reload")
def reload(name: str, actor: ActorOption = None, json_output: JsonOption = False) -> None:
    """Reconnect a server and re-list what it offers."""
    _change(ServerVerb.RELOAD, name, json_output, actor)


@servers_app.command("approve")
def approve(name: str, actor: ActorOption = None, json_output: JsonOption = False) -> None:
    """Approve a server whose command needed an operator's confirmation."""
    _change(ServerVerb.APPROVE, name, json_output, actor)
