"""The `mcpstation` command: a thin adapter over `Station`.

Each command that uses a station is written once, over a `StationView` (`cli/_view.py`): the
one running for the data directory (`up`, or the HTTP gateway) answers over its control socket,
and otherwise a station started for the command alone does; `-v` says which.

Exit codes: 0 ok · 2 bad config or usage · 3 no server reachable · 4 the call failed.

Imports are lazy (inside the commands): `mcpstation --help` loads typer, not the station. The
commands and their options are declared here, so `--help` needs this one module; a command's
body lives in a sibling module once it is more than a few lines.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpstation.cli._exits import EXIT_CALL_FAILED, EXIT_NO_SERVER, OUTCOME_EXIT
from mcpstation.cli._lazy import LazyCommand, lazy_group
from mcpstation.cli._runner import (
    JsonOption,
    _configure_logging,
    _emit_json,
    _errors_to_exit_codes,
    _globals,
    _load,
    _parse_args_json,
    _run_main,
    _wants_json,
    data_dir,
    err,
    instrument,
    logger,
    open_store,
    out,
    say,
    terminal_confirm,
)
from mcpstation.cli._station import any_reachable, with_station
from mcpstation.cli._view import Needs
from mcpstation.outcomes import Outcome

if TYPE_CHECKING:
    import socket

    import anyio
    from rich.console import Group

    from mcpstation.api import ApiServer
    from mcpstation.cli._control import ControlSocket
    from mcpstation.cli._view import CacheAge, Confirm, ProgressFn, Shape, StationView
    from mcpstation.gateway import GatewayInstrument
    from mcpstation.station import Station

LIVE_REFRESH_S = 0.5  # how often `up` redraws its table
WATCH_POLL_S = 1.0  # how often `up --watch` looks at the config file's modification time
HTTP_STOP_MARGIN_S = (
    2.0  # beyond uvicorn's graceful stop (serve.SHUTDOWN_GRACE_S), before the HTTP servers are cancelled
)
# `up`'s defaults, as `mcpstation.api.DEFAULT_API_HOST` and `DEFAULT_API_PORT` (not imported for `--help`).
UP_HOST = "127.0.0.1"
UP_PORT = 8765

# Help is click's plain text: typer's rich help imports rich's markdown and tables first, about
# 150 ms of a command's 500 ms budget (docs/cli.md). Tables for people still use rich.
HELP_MARKUP = None

# Sub-commands defined in other modules, imported when one of them runs.
SUB_COMMANDS: dict[str, LazyCommand] = {
    "policy": LazyCommand("mcpstation.cli.policy", "policy_app", "Ask the security policy about a URL or a command."),
    "servers": LazyCommand(
        "mcpstation.cli.servers", "servers_app", "Servers added at run time (or, with --config-file, a server file)."
    ),
    "token": LazyCommand(
        "mcpstation.cli.audit", "token_app", "API tokens for the HTTP API (kept hashed in the store)."
    ),
    "gateway": LazyCommand(
        "mcpstation.cli.gateway", "gateway_app", "Serve the whole catalog as one MCP server (stdio or streamable HTTP)."
    ),
    "audit": LazyCommand(
        "mcpstation.cli.audit", "audit_app", "Audited tool calls and management actions, newest first.", group=False
    ),
    "import": LazyCommand(
        "mcpstation.cli.importer",
        "import_app",
        "Find other clients' MCP config files and write a native config from them.",
        group=False,
    ),
}

app = typer.Typer(
    name="mcpstation",
    help="Connect to many MCP servers and use them as one well-named tool surface.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=HELP_MARKUP,
    cls=lazy_group(SUB_COMMANDS, markup=HELP_MARKUP),
)
tools_app = typer.Typer(help="The catalog's tools.", no_args_is_help=True, rich_markup_mode=HELP_MARKUP)
prompts_app = typer.Typer(help="The catalog's prompts.", no_args_is_help=True, rich_markup_mode=HELP_MARKUP)
resources_app = typer.Typer(
    help="The catalog's resources and templates.", no_args_is_help=True, rich_markup_mode=HELP_MARKUP
)
prompt_app = typer.Typer(help="Use one prompt.", no_args_is_help=True, rich_markup_mode=HELP_MARKUP)
resource_app = typer.Typer(help="Use one resource.", no_args_is_help=True, rich_markup_mode=HELP_MARKUP)
app.add_typer(tools_app, name="tools")
app.add_typer(prompts_app, name="prompts")
app.add_typer(resources_app, name="resources")
app.add_typer(prompt_app, name="prompt")
app.add_typer(resource_app, name="resource")


@app.callback()
def _main(
    config: Annotated[
        str | None, typer.Option("--config", "-c", envvar="MCPSTATION_CONFIG", help="Config file (TOML, JSON, YAML).")
    ] = None,
    json_output: JsonOption = False,
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="More log output (-vv: debug); -v says which station.")
    ] = 0,
    data_dir: Annotated[
        str | None,
        typer.Option(
            "--data-dir", envvar="MCPSTATION_DATA_DIR", help="Where the store (SQLite), tokens and control socket live."
        ),
    ] = None,
    db_url: Annotated[
        str | None,
        typer.Option("--db-url", envvar="MCPSTATION_DB_URL", help="A database URL (postgresql+asyncpg://...)."),
    ] = None,
    one_shot: Annotated[
        bool,
        typer.Option("--one-shot", help="Start a station for this command even when one runs for the data directory."),
    ] = False,
) -> None:
    _globals.config_path = config
    _globals.json = json_output
    _globals.verbose = verbose
    _globals.data_dir = data_dir
    _globals.db_url = db_url
    _globals.one_shot = one_shot


# -- up ------------------------------------------------------------------------------------------


@app.command()
def up(
    host: Annotated[str, typer.Option("--host", help="HTTP bind address (API, console, gateway).")] = UP_HOST,
    port: Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one).")] = UP_PORT,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another Host header to accept (name:port or name:*); repeatable."),
    ] = None,
    public_health: Annotated[bool, typer.Option("--public-health", help="Serve /api/health without a token.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Reload when the config file changes.")] = False,
    json_output: JsonOption = False,
) -> None:
    """Start the station and serve the HTTP API, console and gateway until Ctrl-C or SIGTERM.

    The API is also served to this user's CLI on the control socket in the data directory, so
    `mcpstation call`, `servers add` and the rest act on this station while it runs.
    """
    import signal

    import anyio

    from mcpstation.api import ApiServer, bound_port, build_app, build_control_app
    from mcpstation.api.serve import SHUTDOWN_GRACE_S
    from mcpstation.config.loader import resolve_config_path

    _configure_logging(logging.INFO)
    as_json = _wants_json(json_output)
    watched = resolve_config_path(_globals.config_path) if watch else None
    if watch and watched is None:
        raise typer.BadParameter("--watch needs a config file (--config, MCPSTATION_CONFIG or ./mcpstation.toml)")
    watched_mtime = _mtime(watched) if watched is not None else None  # an edit during the start-up counts too

    async def main() -> None:
        # Signals are caught from the start: a SIGTERM during start-up stops the station cleanly too.
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with _served_station(host, port) as (station, sock, control, hook):
                port_bound = bound_port(sock)
                app = build_app(
                    station,
                    host=host,
                    port=port_bound,
                    allowed_hosts=allow_host or (),
                    public_health=public_health,
                    instrument=hook,
                )
                served: list[tuple[ApiServer, socket.socket]] = [(ApiServer(app), sock)]
                if control is not None:
                    control_app = build_control_app(station, control.address, metrics=app.state.metrics)
                    served.append((ApiServer(control_app), control.sock))
                async with anyio.create_task_group() as tg:
                    done = [anyio.Event() for _ in served]
                    for (server, listening), stopped in zip(served, done, strict=True):
                        tg.start_soon(_serve_http, server, listening, stopped, name="mcpstation http")
                    await _announce_http(station, host, port_bound, control)
                    tg.start_soon(_show_live, station, as_json)
                    if watched is not None:
                        tg.start_soon(_watch_config, station, watched, watched_mtime)
                    async for signum in signals:
                        logger.info("received %s; stopping", signal.Signals(signum).name)
                        break
                    for server, _ in served:
                        server.should_exit = True
                    with anyio.move_on_after(SHUTDOWN_GRACE_S + HTTP_STOP_MARGIN_S):
                        for stopped in done:
                            await stopped.wait()
                    tg.cancel_scope.cancel()

    _run_main(main)


@asynccontextmanager
async def _served_station(
    host: str, port: int
) -> AsyncIterator[tuple[Station, socket.socket, ControlSocket | None, GatewayInstrument | None]]:
    """Like `open_station`, with a gateway relay as the hooks; refuses an unsafe bind and binds the
    HTTP socket and the control socket before any server starts, so a busy port fails fast and
    commands run meanwhile wait for this station instead of starting their own."""
    from mcpstation.api import bind_socket, check_bind
    from mcpstation.cli._control import claim_control_socket, config_path_of
    from mcpstation.gateway import GatewayRelay
    from mcpstation.host import Host, TerminalElicitor
    from mcpstation.pool import StartPlan
    from mcpstation.station import Station

    config = _load()
    elicitor = TerminalElicitor() if sys.stdin.isatty() and not _globals.json else None
    async with await open_store(config) as store:
        relay = GatewayRelay(fallback=Host.from_config(config, elicitation_handler=elicitor, store=store))
        await check_bind(store, host)
        sock = bind_socket(host, port)
        control = claim_control_socket(data_dir(), config_path_of(_globals.config_path))
        try:
            station = Station(config, store=store, hooks=relay, start=StartPlan.BACKGROUND)
            hook = instrument(station)
            async with station:
                yield station, sock, control, hook
        finally:
            sock.close()
            if control is not None:
                control.close()


async def _serve_http(server: ApiServer, sock: socket.socket, done: anyio.Event) -> None:
    try:
        await server.serve(sockets=[sock])
    finally:
        done.set()


async def _announce_http(station: Station, host: str, port: int, control: ControlSocket | None) -> None:
    from mcpstation.api import LOCAL_DEV_WARNING

    if station.store is not None and not await station.store.has_tokens():
        logger.warning("%s", LOCAL_DEV_WARNING)
    shown = f"[{host}]" if ":" in host else host
    base = f"http://{shown}:{port}"
    logger.info("serving the console at %s/ , the API at %s/api/ and the gateway at %s/mcp", base, base, base)
    if control is not None:
        logger.info("serving this user's CLI on %s", control.path)


async def _watch_config(station: Station, path: Path, last: float | None) -> None:
    """Poll the file's modification time (`last`: as it was when the station loaded it); on a change,
    load it and reload what changed."""
    import anyio

    from mcpstation.config.loader import load_config
    from mcpstation.errors import StationError

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
    import anyio
    from rich.console import Group
    from rich.live import Live

    from mcpstation.cli import _render

    if as_json:
        _emit_json(station.status().to_dict())
        await anyio.sleep_forever()
    if not out.is_terminal:
        for part in _render.status_view(station.status().to_dict(), out.width):
            out.print(part)
        await anyio.sleep_forever()

    def view() -> Group:
        status = station.status().to_dict()
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


# -- the station's state -------------------------------------------------------------------------


@app.command()
def status(json_output: JsonOption = False) -> None:
    """Report every server's state, version and counts (the running station's, or start them all);
    exit 3 when no server is reachable."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> Shape:
        return await view.status()

    report = with_station(command, require_server=False)
    if _wants_json(json_output):
        _emit_json(report)
    else:
        _print_status(report)
    if not any_reachable(report["servers"]):
        say("no server reachable", style="bold red", stderr=True)
        raise typer.Exit(EXIT_NO_SERVER)


def _print_status(report: Shape) -> None:
    from mcpstation.cli import _render

    for part in _render.status_view(report, out.width):
        out.print(part)
    conflicts = _render.conflicts_table(report)
    if conflicts is not None:
        out.print(conflicts)
    surface = report.get("surface")
    if surface:
        out.print(_render.surface_line(surface), markup=False)


@app.command()
def reconnect(
    name: Annotated[str | None, typer.Argument(help="Server to reconnect; all failed ones when omitted.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Reconnect a server (or every failed one) and report the result."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> Shape:
        return await view.reconnect(name)

    report = with_station(command, require_server=False)
    if _wants_json(json_output):
        _emit_json(report)
        return
    out.print(f"reconnected: {', '.join(report['reconnected']) or 'nothing to do'}")
    from mcpstation.cli import _render

    for part in _render.status_view(report, out.width):
        out.print(part)


# -- the catalog ---------------------------------------------------------------------------------

RefreshOption = Annotated[
    bool,
    typer.Option(
        "--refresh", help="Start the servers the catalog cache answers for, so the list is live (and cached anew)."
    ),
]


async def _listed(view: StationView, refresh: bool) -> CacheAge | None:
    """Before a list: start what `--refresh` asks for; then which servers the catalog cache answers for."""
    if refresh:
        await view.refresh()
    return await view.catalog_age()


def _say_cache_age(age: CacheAge | None) -> None:
    """One line on stderr: which servers answered from the catalog cache, and how old it is."""
    if age is None:
        return
    from datetime import UTC, datetime

    names = ", ".join(age.servers)
    elapsed = _elapsed((datetime.now(UTC) - age.oldest).total_seconds())
    say(f"from the catalog cache for {names} (listed {elapsed} ago; --refresh starts them)", stderr=True)


def _elapsed(seconds: float) -> str:
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit}"
    return f"{max(seconds, 0):.0f} s"


@tools_app.command("list")
def tools_list(refresh: RefreshOption = False, json_output: JsonOption = False) -> None:
    """List the catalog's tools under their public names (from the catalog cache when no station runs)."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> tuple[list[Shape], CacheAge | None]:
        age = await _listed(view, refresh)
        return await view.tools(), age

    tools, age = with_station(command, needs=Needs.LISTINGS)
    if _wants_json(json_output):
        _emit_json(tools)
    else:
        from mcpstation.cli import _render

        out.print(_render.tools_table(tools))
    _say_cache_age(age)


# Bounds of `tools search --limit`, as `mcpstation.catalog.search` has them (not imported for `--help`).
SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 100


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

    async def command(view: StationView) -> list[Shape]:
        return await view.search_tools(query, limit=limit, server=server)

    hits = with_station(command)
    if _wants_json(json_output):
        _emit_json(hits)
        return
    from mcpstation.cli import _render

    out.print(_render.search_table(query, hits))


@tools_app.command("export")
def tools_export(
    format: Annotated[
        str,
        typer.Option("--format", "-f", help="openai, openai-responses, anthropic, gemini (parameters) or gemini-json."),
    ] = "openai",
    strict: Annotated[
        bool, typer.Option("--strict", help="OpenAI Structured Outputs / Anthropic strict tool use, where possible.")
    ] = False,
) -> None:
    """Print the tools as a model provider's `tools=` (JSON), each schema compiled for it."""
    from mcpstation.cli import exports

    exports.export(format, strict=strict)


@tools_app.command("check")
def tools_check(
    target: Annotated[
        str,
        typer.Option(
            "--target",
            "-t",
            help="json, openai, openai-strict, anthropic, anthropic-strict, gemini or gemini-json.",
        ),
    ] = "openai-strict",
    json_output: JsonOption = False,
) -> None:
    """What compiling each tool for a provider changes; exit 1 when a tool cannot be offered at all."""
    from mcpstation.cli import exports

    exports.check(target, json_output=json_output)


@tools_app.command("approve")
def tools_approve(
    server: Annotated[str, typer.Argument(help="The server's name.")],
    tool: Annotated[str, typer.Argument(help="The tool's own name on that server.")],
) -> None:
    """Approve a tool whose definition changed since it was pinned (policy.tool_pinning)."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> bool:
        return await view.approve_tool(server, tool)

    if not with_station(command):
        say(f"no pinned tool {tool!r} on a running server {server!r}", style="red", stderr=True)
        raise typer.Exit(EXIT_CALL_FAILED)
    say(f"approved {server}/{tool} as it is now")


@prompts_app.command("list")
def prompts_list(refresh: RefreshOption = False, json_output: JsonOption = False) -> None:
    """List the catalog's prompts (from the catalog cache when no station runs)."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> tuple[list[Shape], CacheAge | None]:
        age = await _listed(view, refresh)
        return await view.prompts(), age

    prompts, age = with_station(command, needs=Needs.LISTINGS)
    if _wants_json(json_output):
        _emit_json(prompts)
    else:
        from mcpstation.cli import _render

        out.print(_render.prompts_table(prompts))
    _say_cache_age(age)


@resources_app.command("list")
def resources_list(refresh: RefreshOption = False, json_output: JsonOption = False) -> None:
    """List the catalog's resources and resource templates (from the catalog cache when no station runs)."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> tuple[Shape, CacheAge | None]:
        age = await _listed(view, refresh)
        return await view.resources(), age

    listed, age = with_station(command, needs=Needs.LISTINGS)
    if _wants_json(json_output):
        _emit_json(listed["resources"] + listed["templates"])
    else:
        from mcpstation.cli import _render

        out.print(_render.resources_table(listed["resources"], listed["templates"]))
    _say_cache_age(age)


# -- requests ------------------------------------------------------------------------------------


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="The tool's public name (see `tools list`).")],
    args: Annotated[str | None, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds before the call is cancelled.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Call one tool and print its result; exit 4 when the call fails.

    With no station running, only the server that owns the tool starts (the catalog cache says which).
    A tool in `[policy] confirm_tools` is asked about on the terminal (y/N), by this command or through
    the running station; with no terminal it is refused.
    """
    _configure_logging(logging.WARNING)
    with _errors_to_exit_codes():  # bad --args fail here, before any station is asked or started
        arguments = _parse_args_json(args, what=tool)
        if timeout is not None and timeout <= 0:
            raise _usage(f"--timeout must be more than 0 seconds, not {timeout}")
    as_json = _wants_json(json_output)
    confirm = terminal_confirm()

    async def command(view: StationView) -> Shape:
        if as_json or not view.reports_progress or not sys.stderr.isatty():  # rich only for a bar to draw
            return await view.call_tool(tool, arguments, timeout_s=timeout, progress=None, confirm=confirm)
        with _progress_bar(tool) as (on_progress, asking):
            return await view.call_tool(
                tool, arguments, timeout_s=timeout, progress=on_progress, confirm=asking(confirm)
            )

    result = with_station(command, needs=Needs.LISTINGS, calls=tool)
    if as_json:
        _emit_json(result)
    else:
        say(result["text"], style=None if result["ok"] else "red")
    outcome = Outcome(result["outcome"])
    if outcome is not Outcome.OK:
        raise typer.Exit(OUTCOME_EXIT[outcome])


@contextmanager
def _progress_bar(label: str) -> Iterator[tuple[ProgressFn, Callable[[Confirm | None], Confirm | None]]]:
    """A progress bar on stderr while a call runs; yields the call's progress callback, and what
    wraps a `confirm` so the bar stands aside while the person is asked."""
    from rich.progress import BarColumn, Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[note]}"), console=err, transient=True
    ) as bar:
        task = bar.add_task(label, total=None, note="")

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, note=message or "")

        def asking(confirm: Confirm | None) -> Confirm | None:
            if confirm is None:
                return None
            person = confirm

            async def aside(question: str) -> bool:
                bar.stop()  # the live display holds stderr's lines back: the question must show now
                try:
                    return await person(question)
                finally:
                    bar.start()

            return aside

        yield on_progress, asking


def _usage(message: str) -> Exception:
    from mcpstation.errors import UsageError

    return UsageError(message)


@prompt_app.command("get")
def prompt_get(
    name: Annotated[str, typer.Argument(help="The prompt's public name (see `prompts list`).")],
    args: Annotated[str | None, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Get one prompt, filled with its arguments."""
    _configure_logging(logging.WARNING)
    with _errors_to_exit_codes():
        arguments = {k: str(v) for k, v in _parse_args_json(args, what=name).items()}

    async def command(view: StationView) -> Shape:
        return await view.get_prompt(name, arguments)

    dumped = with_station(command, needs=Needs.LISTINGS)
    if _wants_json(json_output):
        _emit_json(dumped)
        return
    import mcp_types

    from mcpstation.catalog import render_block

    for message in dumped["messages"]:
        typed = mcp_types.PromptMessage.model_validate(message)
        out.print(f"[bold]{typed.role}[/bold]:")
        out.print(render_block(typed.content), markup=False)


@resource_app.command("read")
def resource_read(
    uri: Annotated[str, typer.Argument(help="The resource URI (see `resources list`).")],
    json_output: JsonOption = False,
) -> None:
    """Read one resource, routed to the server that offers it."""
    _configure_logging(logging.WARNING)

    async def command(view: StationView) -> Shape:
        return await view.read_resource(uri)

    dumped = with_station(command, needs=Needs.LISTINGS)
    if _wants_json(json_output):
        _emit_json(dumped)
        return
    from mcpstation.cli import _render

    for line in _render.resource_lines(dumped["contents"]):
        say(line)


def main() -> None:
    """Console-script entry point."""
    app()
