"""`mcpstation import`: bring the servers of the clients on this machine into a native config.

Finds each client's MCP config in its standard places (or only `--from CLIENT`'s), shows what
it found (server, transport, client, file, what became of it) as a table or `--json`, and
writes the servers as an `mcpstation.toml` (`--into FILE`; an existing file gets the servers it
lacks, everything else in it kept) or prints that TOML. Secrets stay `${VAR}` references.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mcpstation.cli._runner import JsonOption, _configure_logging, _emit_json, _wants_json, err, out
from mcpstation.config.clients import (
    CLIENT_IDS,
    ImportedServer,
    ImportResult,
    ImportStatus,
    find_client_files,
    import_servers,
    render_toml,
)
from mcpstation.config.editor import NEW_FILE_MODE, ServerFileEditor
from mcpstation.errors import StationError

EXIT_NOTHING_FOUND = 3  # no client's config file was found
_STATUS_STYLE = {
    ImportStatus.IMPORTED: "green",
    ImportStatus.DUPLICATE: "dim",
    ImportStatus.CONFLICT: "yellow",
    ImportStatus.SKIPPED: "dim",
    ImportStatus.INVALID: "red",
}


def import_command(
    source: Annotated[
        str,
        typer.Option("--from", help=f"Which client's files: auto (every client) or one of {', '.join(CLIENT_IDS)}."),
    ] = "auto",
    into: Annotated[
        str | None, typer.Option("--into", help="Write the servers to this mcpstation.toml (created or added to).")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="The project directory to look in (default: the current one).")
    ] = None,
    json_output: JsonOption = False,
) -> None:
    """Import the MCP servers other clients (Claude, Cursor, VS Code, ...) are configured with."""
    _configure_logging(logging.WARNING)
    client = None if source == "auto" else source
    try:
        files = find_client_files(client=client, project=project)
        result = import_servers(files, project=project)
        if into is not None:
            _write_into(Path(into), result.imported)
    except StationError as exc:  # boundary: the CLI turns errors into exit codes
        err.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None
    if _wants_json(json_output):
        _emit_json(
            {
                "files": [{"client": f.client, "path": str(f.path), "scope": f.scope} for f in files],
                "servers": [server.to_dict() for server in result.servers],
                "failed": [{"path": str(path), "error": message} for path, message in result.failed],
                "notes": result.notes,
                "written": into,
            }
        )
    else:
        # With the TOML on stdout, the table goes to stderr so the output can be redirected.
        console = out if into is not None else err
        _report(result, console)
        if into is None and result.imported:
            out.print(render_toml(result.imported), end="", markup=False, highlight=False, soft_wrap=True)
        elif into is not None:
            console.print(f"wrote {len(result.imported)} server(s) to {into}", markup=False)
    if not files:
        err.print("no client's MCP config was found.", style="yellow")
        raise typer.Exit(EXIT_NOTHING_FOUND)


def _write_into(path: Path, servers: list[ImportedServer]) -> None:
    if not path.exists():
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(render_toml(servers))
        return
    editor = ServerFileEditor(path)
    present = {entry.name for entry in editor.list()}
    for server in servers:
        if server.name not in present:
            editor.add({"name": server.name, **server.fields})


def _report(result: ImportResult, console: Console) -> None:
    table = Table(title="MCP servers found")
    for column in ("server", "transport", "client", "file", "status"):
        table.add_column(column, overflow="fold")
    for server in result.servers:
        status = server.status.value + ("" if server.enabled else " (disabled)")
        if server.reason:
            status += f": {server.reason}"
        table.add_row(
            server.name,
            server.transport or "?",
            server.client,
            str(server.file),
            Text(status, style=_STATUS_STYLE[server.status]),
        )
    console.print(table)
    for path, message in result.failed:
        console.print(f"could not read {path}: {message}", style="red", markup=False)
    for note in result.notes:
        console.print(f"note: {note}", style="yellow", markup=False)


import_app = typer.Typer(add_completion=False)
import_app.command("import")(import_command)
