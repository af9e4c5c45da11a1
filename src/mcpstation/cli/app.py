"""The `mcpstation` command: a thin adapter over `Station`.

Each command that uses a station asks the one running for the data directory (`up`, or the HTTP
gateway), over its control socket, and otherwise starts a one-shot station for itself; `-v` says
which. Both paths render the same shapes the same way.

Exit codes: 0 ok · 2 bad config or usage · 3 no server reachable · 4 the call failed.

Imports are lazy (inside the commands): `mcpstation --help` loads typer and rich, not the station.

Long because it declares every command (options and help) in one place, so `--help` needs one
import; a command's body lives in a sibling module once it is more than a few lines.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mcpstation.cli._lazy import LazyCommand, lazy_group
from mcpstation.cli._runner import (
    EXIT_CALL_FAILED,
    OUTCOME_EXIT,
    JsonOption,
    _configure_logging,
    _emit_json,
    _errors_to_exit_codes,
    _Exit,
    _globals,
    _load,
    _parse_args_json,
    _run_main,
    _wants_json,
    cli_caller,
    data_dir,
    err,
    expect,
    fail,
    instrument,
    logger,
    open_store,
    out,
    say,
    station_verb,
)
from mcpstation.outcomes import Outcome

if TYPE_CHECKING:
    import socket

    import anyio
    from rich.console import Group

    from mcpstation.api import ApiServer
    from mcpstation.catalog import ToolResult
    from mcpstation.cli._control import ControlSocket
    from mcpstation.cli._remote import RemoteStation, Reply
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
    from mcpstation.cli._control import claim_control_socket
    from mcpstation.gateway import GatewayRelay
    from mcpstation.host import Host, TerminalElicitor
    from mcpstation.station import Station

    config = _load()
    elicitor = TerminalElicitor() if sys.stdin.isatty() and not _globals.json else None
    async with await open_store(config) as store:
        relay = GatewayRelay(fallback=Host.from_config(config, elicitation_handler=elicitor, store=store))
        await check_bind(store, host)
        sock = bind_socket(host, port)
        control = claim_control_socket(data_dir())
        try:
            station = Station(config, store=store, hooks=relay)
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
        out.print(_render.status_table(station.status().to_dict()))
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
    """Report every server's state, version and counts (the running station's, or start them all)."""
    _configure_logging(logging.WARNING)

    async def local(station: Station) -> dict[str, Any]:
        return station.status().to_dict()

    def remote(station: RemoteStation) -> dict[str, Any]:
        body: dict[str, Any] = expect(station.get("/api/mcp/servers"))
        return body

    report = station_verb(local, remote, require_server=False)
    if _wants_json(json_output):
        _emit_json(report)
        return
    _print_status(report)


def _print_status(report: dict[str, Any]) -> None:
    from mcpstation.cli import _render

    out.print(_render.status_table(report))
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

    async def local(station: Station) -> dict[str, Any]:
        names = await station.reconnect(name, failed_only=name is None)
        if station.store is not None:
            for reconnected in names:
                await station.store.record_action("reconnect", actor=cli_caller().actor, server=reconnected)
        return {"reconnected": names, **station.status().to_dict()}

    def remote(station: RemoteStation) -> dict[str, Any]:
        body: dict[str, Any] = expect(station.post("/api/mcp/reconnect", params={"server": name} if name else None))
        return body

    report = station_verb(local, remote, require_server=False)
    if _wants_json(json_output):
        _emit_json(report)
        return
    out.print(f"reconnected: {', '.join(report['reconnected']) or 'nothing to do'}")
    from mcpstation.cli import _render

    out.print(_render.status_table(report))


# -- the catalog ---------------------------------------------------------------------------------


@tools_app.command("list")
def tools_list(json_output: JsonOption = False) -> None:
    """List the catalog's tools under their public names."""
    _configure_logging(logging.WARNING)

    async def local(station: Station) -> list[dict[str, Any]]:
        tools = station.visible_tools(cli_caller())
        return [{**t.to_dict(), "tokens": station.tool_tokens(t)} for t in tools]

    def remote(station: RemoteStation) -> list[dict[str, Any]]:
        tools = expect(station.get("/api/mcp/tools"))["tools"]
        return [{k: v for k, v in t.items() if k != "server_name"} for t in tools]

    tools = station_verb(local, remote)
    if _wants_json(json_output):
        _emit_json(tools)
        return
    from mcpstation.cli import _render

    out.print(_render.tools_table(tools))


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

    async def local(station: Station) -> list[dict[str, Any]]:
        hits = await station.requests.search_tools(query, caller=cli_caller(), limit=limit, server=server)
        return [hit.to_dict() for hit in hits]

    def remote(station: RemoteStation) -> list[dict[str, Any]]:
        params = {"q": query, "limit": str(limit), **({"server": server} if server else {})}
        hits: list[dict[str, Any]] = expect(station.get("/api/mcp/tools/search", params=params))["tools"]
        return hits

    hits = station_verb(local, remote)
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
    from mcpstation.cli._remote import path_segment

    _configure_logging(logging.WARNING)
    missing = f"no pinned tool {tool!r} on a running server {server!r}"

    async def local(station: Station) -> str:
        if not await station.approve_tool(server, tool, actor=cli_caller().actor):
            say(missing, style="red", stderr=True)
            raise _Exit(EXIT_CALL_FAILED)
        return f"approved {server}/{tool} as it is now"

    def remote(station: RemoteStation) -> str:
        reply = station.post(f"/api/mcp/servers/{path_segment(server)}/tools/{path_segment(tool)}/approve")
        if reply.is_error:
            fail(reply, plain=reply.status == 404)
        return str(reply.body["message"])

    say(station_verb(local, remote))


@prompts_app.command("list")
def prompts_list(json_output: JsonOption = False) -> None:
    """List the catalog's prompts."""
    _configure_logging(logging.WARNING)

    async def local(station: Station) -> list[dict[str, Any]]:
        return [p.to_dict() for p in station.prompts_for(cli_caller())]

    def remote(station: RemoteStation) -> list[dict[str, Any]]:
        prompts: list[dict[str, Any]] = expect(station.get("/api/mcp/prompts"))["prompts"]
        return prompts

    prompts = station_verb(local, remote)
    if _wants_json(json_output):
        _emit_json(prompts)
        return
    from mcpstation.cli import _render

    out.print(_render.prompts_table(prompts))


@resources_app.command("list")
def resources_list(json_output: JsonOption = False) -> None:
    """List the catalog's resources and resource templates."""
    _configure_logging(logging.WARNING)

    async def local(station: Station) -> dict[str, Any]:
        caller = cli_caller()
        return {
            "resources": [r.to_dict() for r in station.resources_for(caller)],
            "templates": [t.to_dict() for t in station.templates_for(caller)],
        }

    def remote(station: RemoteStation) -> dict[str, Any]:
        listed: dict[str, Any] = expect(station.get("/api/mcp/resources"))
        return listed

    listed = station_verb(local, remote)
    if _wants_json(json_output):
        _emit_json(listed["resources"] + listed["templates"])
        return
    from mcpstation.cli import _render

    out.print(_render.resources_table(listed["resources"], listed["templates"]))


# -- requests ------------------------------------------------------------------------------------


@app.command()
def call(
    tool: Annotated[str, typer.Argument(help="The tool's public name (see `tools list`).")],
    args: Annotated[str | None, typer.Option("--args", "-a", help="Arguments as a JSON object.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds before the call is cancelled.")] = None,
    json_output: JsonOption = False,
) -> None:
    """Call one tool and print its result; exit 4 when the call fails."""
    _configure_logging(logging.WARNING)
    with _errors_to_exit_codes():  # bad --args fail here, before any station is asked or started
        arguments = _parse_args_json(args, what=tool)
        if timeout is not None and timeout <= 0:
            raise _usage(f"--timeout must be more than 0 seconds, not {timeout}")
    as_json = _wants_json(json_output)

    async def local(station: Station) -> dict[str, Any]:
        return (await _call_locally(station, tool, arguments, timeout, show_progress=not as_json)).to_dict()

    def remote(station: RemoteStation) -> dict[str, Any]:
        from mcpstation.cli._remote import path_segment

        params = {"answer": "result"} | ({"timeout_s": repr(timeout)} if timeout is not None else {})
        reply = station.post(f"/api/mcp/tools/{path_segment(tool)}/call", arguments, params)
        if not isinstance(reply.body, dict) or "outcome" not in reply.body:
            fail(reply)
        result: dict[str, Any] = reply.body
        return result

    result = station_verb(local, remote)
    if as_json:
        _emit_json(result)
    else:
        say(result["text"], style=None if result["ok"] else "red")
    outcome = Outcome(result["outcome"])
    if outcome is not Outcome.OK:
        raise typer.Exit(OUTCOME_EXIT[outcome])


async def _call_locally(
    station: Station, tool: str, arguments: dict[str, Any], timeout_s: float | None, *, show_progress: bool
) -> ToolResult:
    if not show_progress or not err.is_terminal:
        return await station.requests.call_tool(tool, arguments, caller=cli_caller(), timeout_s=timeout_s)
    from rich.progress import BarColumn, Progress, TextColumn

    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[note]}"), console=err, transient=True
    ) as bar:
        task = bar.add_task(tool, total=None, note="")

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            bar.update(task, completed=progress, total=total, note=message or "")

        return await station.requests.call_tool(
            tool, arguments, caller=cli_caller(), timeout_s=timeout_s, progress=on_progress
        )


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

    async def local(station: Station) -> dict[str, Any]:
        result = await station.requests.get_prompt(name, arguments, caller=cli_caller())
        if result.raw is None:
            _refuse(result.outcome, result.error)
        assert result.raw is not None
        return result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)

    def remote(station: RemoteStation) -> dict[str, Any]:
        from mcpstation.cli._remote import path_segment

        reply = station.post(f"/api/mcp/prompts/{path_segment(name)}/get", arguments)
        return _answer_or_refuse(reply)

    dumped = station_verb(local, remote)
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

    async def local(station: Station) -> dict[str, Any]:
        result = await station.requests.read_resource(uri, caller=cli_caller())
        if result.raw is None:
            _refuse(result.outcome, result.error)
        assert result.raw is not None
        return result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)

    def remote(station: RemoteStation) -> dict[str, Any]:
        return _answer_or_refuse(station.get("/api/mcp/resources/read", params={"uri": uri}))

    dumped = station_verb(local, remote)
    if _wants_json(json_output):
        _emit_json(dumped)
        return
    from mcpstation.cli import _render

    for line in _render.resource_lines(dumped["contents"]):
        say(line)


def _refuse(outcome: Outcome, error: str | None) -> None:
    """A prompt or resource request that produced no answer: say why, exit by its outcome."""
    say(f"{OUTCOME_TYPE_NAMES[outcome]}: {error}", style="red", stderr=True)
    raise _Exit(OUTCOME_EXIT[outcome])


def _answer_or_refuse(reply: Reply) -> dict[str, Any]:
    """The running station's answer to a prompt or resource request (the protocol's JSON, no nulls,
    as the one-shot path dumps it), or its refusal, printed as the one-shot path prints it."""
    from mcpstation.cli._remote import OUTCOME_OF_TYPE

    if reply.is_error:
        outcome = OUTCOME_OF_TYPE.get(reply.error_type)
        if outcome is None:
            fail(reply)
        assert outcome is not None
        _refuse(outcome, reply.message)
    return {k: v for k, v in reply.body.items() if v is not None}


OUTCOME_TYPE_NAMES: dict[Outcome, str] = {outcome: outcome.name.replace("_", " ").lower() for outcome in Outcome}


def main() -> None:
    """Console-script entry point."""
    app()
