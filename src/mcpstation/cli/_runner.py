"""What every CLI command shares: global options, the config and store, running a station, output.

Errors become exit codes here and only here: 0 ok · 2 bad config or usage · 3 no server reachable ·
4 the call failed.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
import typer
from rich.console import Console

from mcpstation.config.loader import default_config, load_config, resolve_config_path
from mcpstation.config.models import StationConfig
from mcpstation.errors import StationError, UsageError
from mcpstation.host import Host, TerminalElicitor
from mcpstation.outcomes import Outcome
from mcpstation.pipeline import Caller
from mcpstation.roster import Origin
from mcpstation.station import Station
from mcpstation.status import ServerState
from mcpstation.store import Store

if TYPE_CHECKING:
    from mcpstation.gateway import GatewayInstrument

logger = logging.getLogger("mcpstation.cli")

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_SERVER = 3
EXIT_CALL_FAILED = 4

# The exit code of a request's outcome: 3 when its server is not there to answer, 4 when it answered no.
OUTCOME_EXIT: dict[Outcome, int] = {
    Outcome.OK: EXIT_OK,
    Outcome.TOOL_ERROR: EXIT_CALL_FAILED,
    Outcome.REFUSED: EXIT_CALL_FAILED,
    Outcome.NOT_FOUND: EXIT_CALL_FAILED,
    Outcome.UNAVAILABLE: EXIT_NO_SERVER,
    Outcome.TIMEOUT: EXIT_CALL_FAILED,
    Outcome.CONNECTION_LOST: EXIT_NO_SERVER,
    Outcome.REMOTE_ERROR: EXIT_CALL_FAILED,
    Outcome.TOO_LARGE: EXIT_CALL_FAILED,
    Outcome.INVALID_RESULT: EXIT_CALL_FAILED,
    Outcome.CANCELLED: EXIT_CALL_FAILED,
}
LIVE_REFRESH_S = 0.5  # how often `up` redraws its table
WATCH_POLL_S = 1.0  # how often `up --watch` looks at the config file's modification time

T = TypeVar("T")

out = Console()
err = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]


@dataclass
class _Globals:
    config_path: str | None = None
    json: bool = False
    verbose: int = 0
    data_dir: str | None = None
    db_url: str | None = None


_globals = _Globals()


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _configure_logging(default_level: int) -> None:
    level = {0: default_level, 1: logging.INFO}.get(_globals.verbose, logging.DEBUG)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s", "%H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx2", "httpcore", "mcp", "uvicorn"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    # Libraries' warnings (deprecations the SDK raises for the era a server speaks) are for us, not
    # for the person at the terminal: logged, and shown only at -vv.
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.DEBUG if _globals.verbose >= 2 else logging.CRITICAL)


def _load() -> StationConfig:
    path = resolve_config_path(_globals.config_path)
    if path is None:
        logger.info("no config file found; using the default config (the demo server)")
        return default_config()
    return load_config(path)


def _run(body: Callable[[Station], Awaitable[T]], *, require_server: bool = True) -> T:
    """Load the config, open the store, start a station, run `body`, stop."""

    async def main() -> T:
        async with open_station() as station:
            status = station.status()
            enabled = [s for s in status.servers if not s.state.is_held and s.origin is not Origin.HOST]
            if require_server and enabled and not any(s.state is ServerState.READY for s in enabled):
                for s in enabled:
                    err.print(f"server {s.name!r}: {s.state}: {s.error or 'not ready'}", style="red", markup=False)
                err.print("no server reachable", style="bold red")
                raise _Exit(EXIT_NO_SERVER)
            return await body(station)

    return _run_main(main)


def open_store(config: StationConfig | None = None) -> Awaitable[Store]:
    """The store named by `--db-url` or `--data-dir` (default: SQLite in the user's data directory)."""
    data_dir = Path(_globals.data_dir).expanduser() if _globals.data_dir else None
    keep = config.policy.audit_arguments if config is not None else False
    return Store.open(_globals.db_url, data_dir=data_dir, keep_call_arguments=keep)


@asynccontextmanager
async def open_station() -> AsyncIterator[Station]:
    """A running station for the CLI: config, store, and a terminal elicitor when a person is there."""
    config = _load()
    elicitor = TerminalElicitor() if sys.stdin.isatty() and not _globals.json else None
    async with await open_store(config) as store:
        station = Station(
            config, store=store, hooks=Host.from_config(config, elicitation_handler=elicitor, store=store)
        )
        instrument(station)
        async with station:
            yield station


def instrument(station: Station) -> GatewayInstrument | None:
    """Telemetry for `station` when its config turns it on (`[telemetry] enabled`); returns the
    gateway's hook to pass to the gateway it serves, if any."""
    if not station.config.telemetry.enabled:
        return None
    from mcpstation.integrations import otel

    otel.instrument(station)
    return otel.instrument_gateway


def _run_main(main: Callable[[], Awaitable[T]]) -> T:
    """Run `main` on the event loop; station errors become exit codes here and only here."""
    try:
        return anyio.run(main)
    except StationError as exc:  # boundary: the CLI turns station errors into exit codes
        err.print(f"{type(exc).__name__}: {exc}", style="red", markup=False)
        raise typer.Exit(exc.exit_code) from None
    except _Exit as exc:
        raise typer.Exit(exc.code) from None


CLI_CALLER = Caller.cli()
"""Who every request from this command line runs as: the person at the terminal."""


def _emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def _wants_json(local: bool) -> bool:
    return local or _globals.json


def _parse_args_json(raw: str | None, *, what: str) -> dict[str, Any]:
    if raw is None or raw.strip() == "":
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--args for {what} is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(value, dict):
        raise UsageError(f"--args for {what} must be a JSON object, got {type(value).__name__}")
    return value
