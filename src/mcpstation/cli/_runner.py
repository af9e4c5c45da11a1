"""What every CLI command shares: global options, the config and store, a station to talk to, output.

A command that needs a station talks to the one running for the data directory (`up`, or the
HTTP gateway) over its control socket, or, with none running, starts a one-shot station for
itself (`station_verb`). Errors become exit codes here and only here: 0 ok · 2 bad config or
usage · 3 no server reachable · 4 the call failed.

Imports are lazy: `mcpstation --help`, and a command answered by the running station, must not
load the station, the SDK or the store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import typer

from mcpstation.cli._control import Found, data_dir_of, find_station
from mcpstation.errors import StationError, UsageError
from mcpstation.outcomes import Outcome

if TYPE_CHECKING:
    from rich.console import Console

    from mcpstation.cli._remote import RemoteStation, Reply
    from mcpstation.config.models import StationConfig
    from mcpstation.pipeline import Caller
    from mcpstation.station import Station
    from mcpstation.store import Store

    CLI_CALLER: Caller

if TYPE_CHECKING:
    from mcpstation.gateway import GatewayInstrument

logger = logging.getLogger("mcpstation.cli")

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_NO_SERVER = 3
EXIT_CALL_FAILED = 4
REPLICA_ID_ENV_VAR = "MCPSTATION_REPLICA_ID"  # names this process in the change log (else host-pid-random)

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
# `ServerState`s that are known but deliberately not run: `ServerState.is_held` over the JSON shape
# both paths share (tests/cli/test_control.py checks they agree).
HELD_STATES = frozenset({"DISABLED", "SHADOWED", "PENDING", "REFUSED", "REMOVED"})
REACHABLE_STATES = frozenset({"READY", "IDLE"})  # IDLE: a lazy server the next request starts

T = TypeVar("T")


class _LazyConsole:
    """A `rich.console.Console` made on first use (rich is not imported for `--json` output)."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(stderr=self._stderr)
        return getattr(self._console, name)


out = cast("Console", _LazyConsole(stderr=False))
err = cast("Console", _LazyConsole(stderr=True))

_ANSI = {"red": "\x1b[31m", "bold red": "\x1b[1;31m", "green": "\x1b[32m"}
_ANSI_RESET = "\x1b[0m"


def say(text: str, *, style: str | None = None, stderr: bool = False) -> None:
    """One line of plain text (a result, an error), coloured only on a terminal that wants colour.

    Tables go through rich (`out`, `err`); a line does not need it, and importing it costs a
    command about a fifth of its time.
    """
    stream = sys.stderr if stderr else sys.stdout
    if style is not None and _wants_colour(stream):
        text = f"{_ANSI[style]}{text}{_ANSI_RESET}"
    stream.write(text + "\n")
    stream.flush()


def _wants_colour(stream: Any) -> bool:
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]


@dataclass
class _Globals:
    config_path: str | None = None
    json: bool = False
    verbose: int = 0
    data_dir: str | None = None
    db_url: str | None = None
    one_shot: bool = False


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
    for noisy in ("httpx2", "httpcore", "httpcore2", "mcp", "uvicorn"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    # Libraries' warnings (deprecations the SDK raises for the era a server speaks) are for us, not
    # for the person at the terminal: logged, and shown only at -vv.
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.DEBUG if _globals.verbose >= 2 else logging.CRITICAL)


def _load() -> StationConfig:
    from mcpstation.config.loader import default_config, load_config, resolve_config_path

    path = resolve_config_path(_globals.config_path)
    if path is None:
        logger.info("no config file found; using the default config (the demo server)")
        return default_config()
    return load_config(path)


def data_dir() -> Path:
    """The data directory: the store's SQLite file (unless `--db-url`) and the control socket."""
    return data_dir_of(_globals.data_dir)


def station_verb(
    local: Callable[[Station], Awaitable[T]],
    remote: Callable[[RemoteStation], T],
    *,
    require_server: bool = True,
    actor: str | None = None,
) -> T:
    """Run a command on the station running for the data directory (`remote`), or, with none
    running, on a one-shot station started for it (`local`). Both return the same shapes.

    `require_server`: exit 3 when no enabled server is ready. `actor` names who acts, for the
    audit of management actions (`--actor`).
    """

    def ask(station: RemoteStation) -> T:
        if require_server:
            _require_a_ready_server(_remote_servers(station))
        return remote(station)

    return running_or(ask, lambda: _run(local, require_server=require_server), actor=actor)


def running_or(remote: Callable[[RemoteStation], T], otherwise: Callable[[], T], *, actor: str | None = None) -> T:
    """`remote` on the station running for the data directory, else `otherwise()` (`-v` says which)."""
    running = _running_station(actor)
    if running is not None:
        from mcpstation.cli._remote import StationGone

        try:
            with _errors_to_exit_codes():
                return remote(running)
        except StationGone as gone:  # nothing was sent: the command can still run without it
            logger.info("the running station stopped listening (%s); going on without it", gone)
    return otherwise()


def _running_station(actor: str | None) -> RemoteStation | None:
    if _globals.one_shot:
        logger.info("--one-shot: starting a station for this command")
        return None
    directory = data_dir()
    lookup = find_station(directory)
    if lookup.found is Found.RUNNING:
        from mcpstation.cli._remote import RemoteStation

        logger.info("talking to the station running for %s (control socket %s)", directory, lookup.path)
        return RemoteStation(lookup.path, actor=actor)
    if lookup.found is Found.UNUSABLE:
        logger.warning("not using the control socket %s: %s", lookup.path, lookup.reason)
    logger.info("no station runs for %s (%s); starting one for this command", directory, lookup.reason)
    return None


def _remote_servers(station: RemoteStation) -> list[dict[str, Any]]:
    servers: list[dict[str, Any]] = expect(station.get("/api/mcp/servers"))["servers"]
    return servers


def expect(reply: Reply) -> Any:
    """The body of a successful answer; an error answer is printed and becomes the exit code."""
    if reply.is_error:
        fail(reply)
    return reply.body


def fail(reply: Reply, *, plain: bool = False) -> None:
    """Print an error answer as the one-shot path prints the same error, and exit by its kind."""
    say(reply.message if plain else f"{reply.error_type}: {reply.message}", style="red", stderr=True)
    raise _Exit(exit_code_of(reply))


def exit_code_of(reply: Reply) -> int:
    """The exit code for an error answer, from its typed kind (never from its message)."""
    from mcpstation import errors
    from mcpstation.cli._remote import OUTCOME_OF_TYPE

    kind = reply.error_type
    outcome = OUTCOME_OF_TYPE.get(kind)
    if outcome is not None:
        return OUTCOME_EXIT[outcome]
    error_class = getattr(errors, kind, None)
    if isinstance(error_class, type) and issubclass(error_class, StationError):
        return error_class.exit_code
    if reply.status in (400, 413, 422):
        return EXIT_USAGE
    if reply.status == 404:
        return EXIT_CALL_FAILED
    return 1


def _require_a_ready_server(servers: list[dict[str, Any]]) -> None:
    """Exit 3 when some server is enabled and none of them is ready."""
    enabled = [s for s in servers if s["state"] not in HELD_STATES and s["origin"] != "host"]
    if enabled and not any(s["state"] in REACHABLE_STATES for s in enabled):
        for s in enabled:
            say(f"server {s['name']!r}: {s['state']}: {s['error'] or 'not ready'}", style="red", stderr=True)
        say("no server reachable", style="bold red", stderr=True)
        raise _Exit(EXIT_NO_SERVER)


def _run(body: Callable[[Station], Awaitable[T]], *, require_server: bool = True) -> T:
    """Load the config, open the store, start a station, run `body`, stop."""

    async def main() -> T:
        async with open_station() as station:
            if require_server:
                _require_a_ready_server([s.to_dict() for s in station.status().servers])
            return await body(station)

    return _run_main(main)


def open_store(config: StationConfig | None = None) -> Awaitable[Store]:
    """The store named by `--db-url` or `--data-dir` (default: SQLite in the user's data directory)."""
    from mcpstation.store import Store

    directory = Path(_globals.data_dir).expanduser() if _globals.data_dir else None
    keep = config.policy.audit_arguments if config is not None else False
    replica = os.environ.get(REPLICA_ID_ENV_VAR) or None
    return Store.open(_globals.db_url, data_dir=directory, keep_call_arguments=keep, replica_id=replica)


@asynccontextmanager
async def open_station() -> AsyncIterator[Station]:
    """A running station for the CLI: config, store, and a terminal elicitor when a person is there."""
    from mcpstation.host import Host, TerminalElicitor
    from mcpstation.station import Station

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
    import anyio

    with _errors_to_exit_codes():
        return anyio.run(main)


@contextlib.contextmanager
def _errors_to_exit_codes() -> Iterator[None]:
    """Station errors (and `_Exit`) become the command's exit code; anything else goes on."""
    try:
        yield
    except StationError as exc:  # boundary: the CLI turns station errors into exit codes
        say(f"{type(exc).__name__}: {exc}", style="red", stderr=True)
        raise typer.Exit(exc.exit_code) from None
    except _Exit as exc:
        raise typer.Exit(exc.code) from None


def cli_caller(actor: str | None = None) -> Caller:
    """Who a request from this command line runs as: the person at the terminal (`--actor` names them)."""
    from mcpstation.config.models import Role
    from mcpstation.pipeline import Caller, Face

    return Caller.cli() if actor is None else Caller(actor, Role.ADMIN, Face.CLI)


def __getattr__(name: str) -> Any:
    if name == "CLI_CALLER":  # `Caller.cli()`, made on first use: the pipeline is not imported before
        return cli_caller()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
