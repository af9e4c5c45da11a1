"""`mcpstation gateway`: serve the station's whole catalog as one MCP server.

    mcpstation gateway --stdio                    # an MCP server on stdin/stdout
    mcpstation gateway [--host 127.0.0.1] [--port 8766]   # streamable HTTP at http://HOST:PORT/mcp

Over HTTP every request needs a bearer token (`mcpstation token create`) and runs as its caller,
exactly as under `mcpstation up`; a non-loopback bind without any token is refused, and loopback
without any token is the local-dev mode (a warning says so). Over HTTP the station also serves
the HTTP API to this user's CLI on the control socket in the data directory, so `mcpstation
call`, `servers add` and the rest act on it. Over stdio the client is the local user. With
`--stdio`, stdout carries the protocol only; logs go to stderr. Upstream servers' questions
(sampling, elicitation, roots) go to the downstream client during its calls, else to `[host]`.

Over stdio the gateway answers the four lists at once from those the last gateway on the same
config served (`gateway-lists/` in the data directory), before it has loaded the config, the
store or the station; a list that turns out different is announced as changed. Then, as over
HTTP, servers it has listed before start in the background (a call to one still starting waits
for it), and only a server never listed before is waited for (`StartPlan.BACKGROUND`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from mcpstation.cli._runner import (
    _configure_logging,
    _globals,
    _load,
    _run_main,
    command_input_key,
    data_dir,
    err,
    instrument,
    open_store,
)
from mcpstation.errors import StationError

if TYPE_CHECKING:
    from mcpstation.config.models import StationConfig
    from mcpstation.gateway._sessions import DownstreamSessions
    from mcpstation.gateway._starting import OpenedGateway

logger = logging.getLogger("mcpstation.cli.gateway")

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766
HTTP_STOP_TIMEOUT_S = 5.0  # bound on the HTTP server's graceful stop before it is cancelled

gateway_app = typer.Typer(
    help="Serve the whole catalog as one MCP server (stdio or streamable HTTP).",
    add_completion=False,
    pretty_exceptions_enable=False,
)


@gateway_app.callback(invoke_without_command=True)
def gateway(
    stdio: Annotated[bool, typer.Option("--stdio", help="Serve on stdin/stdout instead of HTTP.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP bind address.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", help="HTTP port (0 picks a free one).")] = DEFAULT_PORT,
    allow_host: Annotated[
        list[str] | None,
        typer.Option("--allow-host", help="Another Host header to accept (name:port or name:*); repeatable."),
    ] = None,
    json_response: Annotated[bool, typer.Option("--json-response", help="Answer POSTs with JSON, not SSE.")] = False,
    stateless: Annotated[bool, typer.Option("--stateless", help="No HTTP sessions (no server push).")] = False,
    config: Annotated[
        str | None, typer.Option("--config", "-c", envvar="MCPSTATION_CONFIG", help="Config file (TOML, JSON, YAML).")
    ] = None,
) -> None:
    """Start the station and serve it as an MCP server until stdin closes (stdio) or Ctrl-C."""
    if config is not None:
        _globals.config_path = config
    _configure_logging(logging.INFO if not stdio else logging.WARNING)
    if stdio:
        with contextlib.suppress(KeyboardInterrupt):
            _run_main(_serve_stdio)
        return
    try:
        station_config = _load()
    except StationError as exc:  # boundary: the CLI turns station errors into exit codes
        err.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None
    with contextlib.suppress(KeyboardInterrupt):
        _run_main(lambda: _serve_http(station_config, host, port, allow_host or (), json_response, stateless))


async def _serve_stdio() -> None:
    """The gateway on stdin/stdout until stdin closes (nothing of the HTTP API is imported).

    The lists the last gateway on this input served are answered at once; the config, the store
    and the station are loaded beside the serving (`gateway._starting`).
    """
    from mcpstation.gateway._snapshot import read_snapshot
    from mcpstation.gateway._starting import ListSnapshot, StartingGateway

    directory = data_dir()
    key = command_input_key()
    snapshot = ListSnapshot(directory, key, read_snapshot(directory, key)) if key is not None else None
    await StartingGateway(_open_stdio_gateway, snapshot).serve_stdio()


@contextlib.asynccontextmanager
async def _open_stdio_gateway(sessions: DownstreamSessions) -> AsyncIterator[OpenedGateway]:
    """The station of a stdio gateway, and its handlers; the downstream sessions are `sessions`."""
    from mcpstation.gateway._starting import OpenedGateway
    from mcpstation.gateway.relay import GatewayRelay
    from mcpstation.gateway.server import Gateway
    from mcpstation.gateway.stdio import LOCAL_CALLER
    from mcpstation.host import Host
    from mcpstation.pool import StartPlan
    from mcpstation.station import Station

    config = _load()
    async with await open_store(config) as store:
        relay = GatewayRelay(fallback=Host.from_config(config, store=store), sessions=sessions)
        station = Station(config, store=store, hooks=relay, start=StartPlan.BACKGROUND)
        hook = instrument(station)
        async with station:
            yield OpenedGateway(Gateway(station, relay, LOCAL_CALLER), hook)


async def _serve_http(
    config: StationConfig, host: str, port: int, allow_host: Sequence[str], json_response: bool, stateless: bool
) -> None:
    """The gateway over streamable HTTP, and the HTTP API on the control socket, until SIGINT or SIGTERM."""
    from mcpstation.api import (
        LOCAL_DEV_WARNING,
        ApiServer,
        bind_socket,
        bound_port,
        build_control_app,
        build_gateway_app,
        check_bind,
    )
    from mcpstation.cli._control import claim_control_socket, config_path_of
    from mcpstation.gateway import GATEWAY_PATH, GatewayRelay
    from mcpstation.host import Host
    from mcpstation.pool import StartPlan
    from mcpstation.station import Station

    async with await open_store(config) as store:
        relay = GatewayRelay(fallback=Host.from_config(config, store=store))
        await check_bind(store, host)
        sock = bind_socket(host, port)
        control = claim_control_socket(data_dir(), config_path_of(_globals.config_path))
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                station = Station(config, store=store, hooks=relay, start=StartPlan.BACKGROUND)
                hook = instrument(station)
                async with station:
                    bound = bound_port(sock)
                    app = build_gateway_app(
                        station,
                        host=host,
                        port=bound,
                        allowed_hosts=allow_host,
                        json_response=json_response,
                        stateless=stateless,
                        relay=relay,
                        instrument=hook,
                    )
                    if not await store.has_tokens():
                        logger.warning("%s", LOCAL_DEV_WARNING)
                    shown = f"[{host}]" if ":" in host else host
                    logger.info(
                        "gateway serving %d tools at http://%s:%d%s", len(station.tools), shown, bound, GATEWAY_PATH
                    )
                    served = [(ApiServer(app), sock)]
                    if control is not None:
                        served.append((ApiServer(build_control_app(station, control.address)), control.sock))
                        logger.info("serving this user's CLI on %s", control.path)

                    async def serve_http(server: ApiServer, listening: socket.socket, done: anyio.Event) -> None:
                        try:
                            await server.serve(sockets=[listening])
                        finally:
                            done.set()

                    async with anyio.create_task_group() as tg:
                        done = [anyio.Event() for _ in served]
                        for (server, listening), stopped in zip(served, done, strict=True):
                            tg.start_soon(serve_http, server, listening, stopped)
                        async for signum in signals:
                            logger.info("received %s; stopping", signal.Signals(signum).name)
                            break
                        for server, _ in served:
                            server.should_exit = True
                        with anyio.move_on_after(HTTP_STOP_TIMEOUT_S):
                            for stopped in done:
                                await stopped.wait()
                        tg.cancel_scope.cancel()
        finally:
            sock.close()
            if control is not None:
                control.close()


if __name__ == "__main__":
    gateway_app()
