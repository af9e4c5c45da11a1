"""`mcpstation gateway`: serve the station's whole catalog as one MCP server.

    mcpstation gateway --stdio                    # an MCP server on stdin/stdout
    mcpstation gateway [--host 127.0.0.1] [--port 8766]   # streamable HTTP at http://HOST:PORT/mcp

With `--stdio`, stdout carries the protocol only; logs go to stderr. Upstream servers' questions
(sampling, elicitation, roots) go to the downstream client during its calls, else to `[host]`.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Annotated

import typer
import uvicorn

from mcpstation.cli._runner import _configure_logging, _globals, _load, _run_main, err, open_store
from mcpstation.errors import StationError
from mcpstation.gateway import DEFAULT_HOST, DEFAULT_PORT, GATEWAY_PATH, GatewayRelay, gateway_asgi_app, serve_stdio
from mcpstation.host import Host
from mcpstation.station import Station

logger = logging.getLogger("mcpstation.cli.gateway")

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
    try:
        station_config = _load()
    except StationError as exc:  # boundary: the CLI turns station errors into exit codes
        err.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None

    async def main() -> None:
        async with await open_store(station_config) as store:
            relay = GatewayRelay(fallback=Host.from_config(station_config, store=store))
            async with Station(station_config, store=store, hooks=relay) as station:
                if stdio:
                    await serve_stdio(station, relay=relay)
                    return
                app = gateway_asgi_app(station, json_response=json_response, stateless=stateless, relay=relay)
                config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
                logger.info("gateway serving %d tools at http://%s:%d%s", len(station.tools), host, port, GATEWAY_PATH)
                await uvicorn.Server(config).serve()

    with contextlib.suppress(KeyboardInterrupt):
        _run_main(main)


if __name__ == "__main__":
    gateway_app()
