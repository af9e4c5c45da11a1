"""The `mcpstation` command: a thin adapter over `Station`.

Exit codes: 0 ok · 2 bad config or usage · 3 no server reachable · 4 the call failed.
"""

from __future__ import annotations

import logging
import signal
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn

from mcpstation.api import (
    DEFAULT_API_HOST,
    DEFAULT_API_PORT,
    LOCAL_DEV_WARNING,
    ApiServer,
    bind_socket,
    bound_port,
    build_app,
    check_bind,
)
from mcpstation.api.serve import SHUTDOWN_GRACE_S
from mcpstation.catalog import PromptResult, ResourceResult, ToolResult, render_block
from mcpstation.catalog.search import DEFAULT_LIMIT as SEARCH_DEFAULT_LIMIT
from mcpstation.catalog.search import MAX_LIMIT as SEARCH_MAX_LIMIT
from mcpstation.cli import _render
from mcpstation.cli._runner import (
    CLI_CALLER,
    EXIT_CALL_FAILED,
    OUTCOME_EXIT,
    JsonOption,
    _configure_logging,
    _emit_json,
    _Exit,
    _globals,
    _load,
    _parse_args_json,
    _run,
    _run_main,
    _wants_json,
    err,
    instrument,
    logger,
    open_store,
    out,
)
from mcpstation.cli.audit import audit, token_app
from mcpstation.cli.gateway import gateway_app
from mcpstation.cli.importer import import_command
from mcpstation.cli.policy import policy_app
from mcpstation.cli.servers import servers_app
from mcpstation.config.loader import load_config, resolve_config_path
from mcpstation.errors import StationError
from mcpstation.gateway import GatewayInstrument, GatewayRelay
from mcpstation.host import Host, TerminalElicitor
from mcpstation.outcomes import Outcome
from mcpstation.station import Station

LIVE_REFRESH_S = 0.5  # how often `up` redraws its table
WATCH_POLL_S = 1.0  # how often `up --watch` looks at the config file's modification time


app = typer.Typer(
    name="mcpstation",
    help="Connect to many MCP servers and use them as one well-named tool surface.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tools_app = typer.Typer(help="The catalog's tools.", no_args_is_help=True)
prompts_app = typer.Typer(help="The catalog's prompts.", no_args_is_help=True)
resources_app = typer.Typer(help="The catalog's resources and templates.", no_args_is_help=True)
prompt_app = typer.Typer(help="Use one prompt.", no_args_is_help=True)
resource_app = typer.Typer(help="Use one resource.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
app.add_typer(prompts_app, name="prompts")
app.add_typer(resources_app, name="resources")
app.add_typer(prompt_app, name="prompt")
app.add_typer(resource_app, name="resource")
app.add_typer(policy_app, name="policy", help="Ask the security policy about a URL or a command.")
app.add_typer(servers_app, name="servers")
app.add_typer(token_app, name="token")
app.add_typer(gateway_app, name="gateway")
app.command("audit")(audit)
app.command("import")(import_command)


@app.callback()
def _main(
    config: Annotated[
        str | None, typer.Option("--config", "-c", envvar="MCPSTATION_CONFIG", help="Config file (TOML, JSON, YAML).")
    ] = None,
    json_output: JsonOption = False,
    verbose: Annotated[int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv: debug).")] = 0,
    data_dir: Annotated[
        str | None,
        typer.Option("--data-dir", envvar="MCPSTATION_DATA_DIR", help="Where the store (SQLite) and tokens live."),
    ] = None,
    db_url: Annotated[
        str | None,
        typer.Option("--db-url", envvar="MCPSTATION_DB_URL", help="A database URL (postgresql+asyncpg://...)."),
    ] = None,
) -> None:
    _globals.config_path = config
    _globals.json = json_output
    _globals.verbose = verbose
    _globals.data_dir = data_dir
    _globals.db_url = db_url


# -- commands ------------------------------------------------------------------------------------------


@app.command()
def up(
    host: Annotated[str, typer.Option("--host", help="HTTP bind address (API, console, gateway).")] = DEFAULT_API_HOST,
    port: Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one).")] = DEFAULT_API_PORT,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another Host header to accept (name:port or name:*); repeatable."),
    ] = None,
    public_health: Annotated[bool, typer.Option("--public-health", help="Serve /api/health without a token.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Reload when the config file changes.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Start the station and serve the HTTP API, console and gateway until Ctrl-C or SIGTERM."""
    _configure_logging(logging.INFO)
    as_json = _wants_json(json_output)
    watched = resolve_config_path(_globals.config_path) if watch else None
    if watch and watched is None:
        raise typer.BadParameter("--watch needs a config file (--config, MCPSTATION_CONFIG or ./mcpstation.toml)")

    async def main() -> None:
        # Signals are caught from the start: a SIGTERM during start-up stops the station cleanly too.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with _served_station(host, port) as (station, sock, hook):
                port_bound = bound_port(sock)
                app = build_app(
                    station,
                    host=host,
                    port=port_bound,
                    allowed_hosts=allow_host or (),
                    public_health=public_health,
                    instrument=hook,
                )
                server = ApiServer(app)
                http_done = anyio.Event()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_serve_http, server, sock, http_done, name="mcpstation http")
                    await _announce_http(station, host, port_bound)
                    tg.start_soon(_show_live, station, as_json)
                    if watched is not None:
                        tg.start_soon(_watch_config, station, watched)
                    async for signum in signals:
                        logger.info("received %s; stopping", signal.Signals(signum).name)
                        break
                    server.should_exit = True
                    with anyio.move_on_after(HTTP_STOP_TIMEOUT_S):
                        await http_done.wait()
                    tg.cancel_scope.cancel()

    _run_main(main)


HTTP_STOP_TIMEOUT_S = SHUTDOWN_GRACE_S + 2.0  # bound on the HTTP server's graceful stop before it is cancelled


@asynccontextmanager
async def _served_station(
    host: str, port: int
) -> AsyncIterator[tuple[Station, socket.socket, GatewayInstrument | None]]:
    """Like `open_station`, with a gateway relay as the hooks; refuses an unsafe bind and binds
    the HTTP socket before any server starts, so a busy port fails fast."""
    config = _load()
    elicitor = TerminalElicitor() if sys.stdin.isatty() and not _globals.json else None
    async with await open_store(config) as store:
        relay = GatewayRelay(fallback=Host.from_config(config, elicitation_handler=elicitor, store=store))
        await check_bind(store, host)
        sock = bind_socket(host, port)
        try:
            station = Station(config, store=store, hooks=relay)
            hook = instrument(station)
            async with station:
                yield station, sock, hook
        finally:
            sock.close()


async def _serve_http(server: ApiServer, sock: socket.socket, done: anyio.Event) -> None:
    try:
        await server.serve(sockets=[sock])
    finally:
        done.set()


async def _announce_http(station: Station, host: str, port: int) -> None:
    if station.store is not None and not await station.store.list_tokens():
        logger.warning("%s", LOCAL_DEV_WARNING)
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    logger.info("serving the console at %s/ , the API at %s/api/ and the gateway at %s/mcp", base, base, base)


async def _watch_config(station: Station, path: Path) -> None:
    """Poll the file's modification time; on a change, load it and reload what changed."""
    last = _mtime(path)
    while True:
        await anyio.sleep(WATCH_POLL_S)
        current = _mtime(path)
        if current == last:
            continue
        last = current
        try:
            config = load_config(path)
        except StationError as exc:  # boundary: a bad edit keeps the running config
            logger.error("config change ignored: %s", exc)
            continue
        report = await station.reload(config)
        logger.info("config reloaded from %s: %s", path, report)


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


async def _show_live(station: Station, as_json: bool) -> None:
    if as_json:
        _emit_json(station.status().to_dict())
        await anyio.sleep_forever()
    if not out.is_terminal:
        out.print(_render.status_table(station.status()))
        await anyio.sleep_forever()

    def view() -> Group:
        status = station.status()
        parts: list[Any] = [_render.status_table(status)]
        conflicts = _render.conflicts_table(status)
        if conflicts is not None:
            parts.append(conflicts)
        parts.append(f"{len(station.tools)} tools in the catalog · Ctrl-C to stop")
        return Group(*parts)

    with Live(view(), console=out, refresh_per_second=4, transient=False) as live:
        while True:
            await anyio.sleep(LIVE_REFRESH_S)
            live.update(view())


@app.command()
def status(json_output: JsonOption = False) -> None:
    """Start every server, report its state, version and counts, and stop."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        report = station.status()
        if _wants_json(json_output):
            _emit_json(report.to_dict())
            return
        out.print(_render.status_table(report))
        conflicts = _render.conflicts_table(report)
        if conflicts is not None:
            out.print(conflicts)
        if report.surface is not None:
            out.print(report.surface.line(), markup=False)

    _run(body, require_server=False)


@app.command()
def reconnect(
    name: Annotated[str | None, typer.Argument(help="Server to reconnect; all failed ones when omitted.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Reconnect a server (or every failed one) and report the result."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        names = await station.reconnect(name, failed_only=name is None)
        report = station.status()
        if _wants_json(json_output):
            _emit_json({"reconnected": names, **report.to_dict()})
        else:
            out.print(f"reconnected: {', '.join(names) or 'nothing to do'}")
            out.print(_render.status_table(report))

    _run(body, require_server=False)


@tools_app.command("list")
def tools_list(json_output: JsonOption = False) -> None:
    """List the catalog's tools under their public names, with their estimated schema tokens."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        tools = station.visible_tools(CLI_CALLER)
        if _wants_json(json_output):
            _emit_json([{**t.to_dict(), "tokens": station.tool_tokens(t)} for t in tools])
        else:
            out.print(_render.tools_table(tools, tokens=[station.tool_tokens(t) for t in tools]))

    _run(body)


@tools_app.command("search")
def tools_search(
    query: Annotated[str, typer.Argument(help="What you want to do, in words (any language).")],
    limit: Annotated[
        int, typer.Option("--limit", "-n", min=1, max=SEARCH_MAX_LIMIT, help="At most this many matches.")
    ] = SEARCH_DEFAULT_LIMIT,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server's tools.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Find the catalog's best tools for a request, best first."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        hits = await station.requests.search_tools(query, caller=CLI_CALLER, limit=limit, server=server)
        if _wants_json(json_output):
            _emit_json([hit.to_dict() for hit in hits])
        else:
            out.print(_render.search_table(query, hits))

    _run(body)


@tools_app.command("approve")
def tools_approve(
    server: Annotated[str, typer.Argument(help="The server's name.")],
    tool: Annotated[str, typer.Argument(help="The tool's own name on that server.")],
) -> None:
    """Approve a tool whose definition changed since it was pinned (policy.tool_pinning)."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        if not await station.approve_tool(server, tool, actor="cli"):
            err.print(f"no pinned tool {tool!r} on a running server {server!r}", style="red", markup=False)
            raise _Exit(EXIT_CALL_FAILED)
        out.print(f"approved {server}/{tool} as it is now")

    _run(body)


@prompts_app.command("list")
def prompts_list(json_output: JsonOption = False) -> None:
    """List the catalog's prompts."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        if _wants_json(json_output):
            _emit_json([p.to_dict() for p in station.prompts])
        else:
            out.print(_render.prompts_table(station.prompts))

    _run(body)


@resources_app.command("list")
def resources_list(json_output: JsonOption = False) -> None:
    """List the catalog's resources and resource templates."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> None:
        if _wants_json(json_output):
            _emit_json([r.to_dict() for r in station.resources] + [t.to_dict() for t in station.templates])
        else:
            out.print(_render.resources_table(station.resources, station.templates))

    _run(body)


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="The tool's public name (see `tools list`).")],
    args: Annotated[str | None, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds before the call is cancelled.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Call one tool and print its result; exit 4 when the call fails."""
    _configure_logging(logging.WARNING)

    arguments = _parse_args_json(args, what=tool)

    async def body(station: Station) -> ToolResult:
        if _wants_json(json_output) or not err.is_terminal:
            return await station.requests.call_tool(tool, arguments, caller=CLI_CALLER, timeout_s=timeout)
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[note]}"),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task(tool, total=None, note="")

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                bar.update(task, completed=progress, total=total, note=message or "")

            return await station.requests.call_tool(
                tool, arguments, caller=CLI_CALLER, timeout_s=timeout, progress=on_progress
            )

    result = _run(body)
    if _wants_json(json_output):
        _emit_json(result.to_dict())
    else:
        out.print(_render.result_text(result))
    if not result.ok:
        raise typer.Exit(OUTCOME_EXIT[result.outcome])


@prompt_app.command("get")
def prompt_get(
    name: Annotated[str, typer.Argument(help="The prompt's public name (see `prompts list`).")],
    args: Annotated[str | None, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Get one prompt, filled with its arguments."""
    _configure_logging(logging.WARNING)

    arguments = {k: str(v) for k, v in _parse_args_json(args, what=name).items()}

    async def body(station: Station) -> PromptResult:
        return await station.requests.get_prompt(name, arguments, caller=CLI_CALLER)

    result = _run(body)
    _exit_unless_ok(result)
    if _wants_json(json_output) and result.raw is not None:
        _emit_json(result.raw.model_dump(mode="json", by_alias=True, exclude_none=True))
        return
    for message in result.messages:
        out.print(f"[bold]{message.role}[/bold]:")
        out.print(render_block(message.content), markup=False)


@resource_app.command("read")
def resource_read(
    uri: Annotated[str, typer.Argument(help="The resource URI (see `resources list`).")],
    json_output: JsonOption = False,
) -> None:
    """Read one resource, routed to the server that offers it."""
    _configure_logging(logging.WARNING)

    async def body(station: Station) -> ResourceResult:
        return await station.requests.read_resource(uri, caller=CLI_CALLER)

    result = _run(body)
    _exit_unless_ok(result)
    if _wants_json(json_output) and result.raw is not None:
        _emit_json(result.raw.model_dump(mode="json", by_alias=True, exclude_none=True))
        return
    for contents in result.contents:
        text = getattr(contents, "text", None)
        if text is not None:
            out.print(text, markup=False)
        else:
            out.print(
                f"[{contents.mime_type or 'binary'}, {len(getattr(contents, 'blob', ''))} base64 chars]", markup=False
            )


def _exit_unless_ok(result: PromptResult | ResourceResult) -> None:
    """A prompt or resource request that produced no answer: say why, exit by its outcome."""
    if not result.ok:
        err.print(f"{OUTCOME_TYPE_NAMES[result.outcome]}: {result.error}", style="red", markup=False)
        raise typer.Exit(OUTCOME_EXIT[result.outcome])


OUTCOME_TYPE_NAMES: dict[Outcome, str] = {outcome: outcome.name.replace("_", " ").lower() for outcome in Outcome}


def main() -> None:
    """Console-script entry point."""
    app()
