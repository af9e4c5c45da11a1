"""What every CLI command shares: global options, the config, the store, a station of its own, output.

Errors become exit codes here and only here (`_errors_to_exit_codes`, with `cli/_exits.py`).

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

from mcpstation.cli._control import config_path_of, data_dir_of
from mcpstation.cli._exits import OUTCOME_EXIT
from mcpstation.cli._view import Confirm, Refusal
from mcpstation.errors import StationError, UsageError
from mcpstation.outcomes import Outcome

if TYPE_CHECKING:
    from rich.console import Console

    from mcpstation.config.models import StationConfig
    from mcpstation.connection.early import EarlyStarts
    from mcpstation.gateway import GatewayInstrument
    from mcpstation.pipeline import Caller
    from mcpstation.pool import StartPlan
    from mcpstation.station import Station
    from mcpstation.store import Store


logger = logging.getLogger("mcpstation.cli")

REPLICA_ID_ENV_VAR = "MCPSTATION_REPLICA_ID"  # names this process in the change log (else host-pid-random)

T = TypeVar("T")


UNBOUNDED_WIDTH = 10_000  # columns of a console written to a pipe or a file: wider than any table


class _LazyConsole:
    """A `rich.console.Console` made on first use (rich is not imported for `--json` output)."""

    def __init__(self, *, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def _made(self) -> Console:
        if self._console is None:
            from rich.console import Console

            stream = sys.stderr if self._stderr else sys.stdout
            # No terminal and no COLUMNS: no width to fit, so a table takes the width it needs.
            unbounded = not stream.isatty() and not os.environ.get("COLUMNS")
            self._console = Console(stderr=self._stderr, width=UNBOUNDED_WIDTH if unbounded else None)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._made(), name)

    # `with console:` (rich's live displays: a progress bar) looks these up on the type, not through __getattr__.
    def __enter__(self) -> Console:
        return self._made().__enter__()

    def __exit__(self, *exc_info: Any) -> None:
        self._made().__exit__(*exc_info)


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
    if not _globals.verbose:
        from mcpstation.cli._notices import SaidOnce

        handler.addFilter(SaidOnce(data_dir()))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx2", "httpcore", "httpcore2", "mcp", "uvicorn"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    # Migrations at a first start (Alembic's INFO lines) are for someone who asked, with -v.
    logging.getLogger("alembic").setLevel(level if _globals.verbose else max(level, logging.WARNING))
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


def command_input_key() -> str | None:
    """The key of this command's input (`per_input`): the config it names, the environment, and
    its store options; None when the config file cannot be read."""
    from mcpstation.per_input import input_key

    options = {"data_dir": _globals.data_dir, "db_url": _globals.db_url}
    return input_key(config_path_of(_globals.config_path), options=options)


def data_dir() -> Path:
    """The data directory: the store's SQLite file (unless `--db-url`) and the control socket."""
    return data_dir_of(_globals.data_dir)


def open_store(config: StationConfig | None = None) -> Awaitable[Store]:
    """The store named by `--db-url` or `--data-dir` (default: SQLite in the user's data directory)."""
    from mcpstation.store import Store

    directory = Path(_globals.data_dir).expanduser() if _globals.data_dir else None
    keep = config.policy.audit_arguments if config is not None else False
    replica = os.environ.get(REPLICA_ID_ENV_VAR) or None
    return Store.open(_globals.db_url, data_dir=directory, keep_call_arguments=keep, replica_id=replica)


@asynccontextmanager
async def open_station(
    start: StartPlan | None = None, *, config: StationConfig | None = None, early: EarlyStarts | None = None
) -> AsyncIterator[Station]:
    """A running station for the CLI: config (`config`, or the one the command names), store, and
    a terminal elicitor when a person is there; `start` says how the servers the catalog cache
    knows start (default: all, and waited for); `early` holds servers started before it."""
    from mcpstation.host import Host, TerminalElicitor
    from mcpstation.pool import StartPlan
    from mcpstation.station import Station

    config = config or _load()
    elicitor = TerminalElicitor() if sys.stdin.isatty() and not _globals.json else None
    async with await open_store(config) as store:
        station = Station(
            config,
            store=store,
            hooks=Host.from_config(config, elicitation_handler=elicitor, store=store),
            start=start or StartPlan.SETTLED,
            early=early,
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
        say(f"{_error_name(exc)}: {exc}", style="red", stderr=True)
        raise typer.Exit(exc.exit_code) from None
    except Refusal as refusal:  # a prompt or resource request that produced no answer
        say(f"{OUTCOME_NAMES[refusal.outcome]}: {refusal.message}", style="red", stderr=True)
        raise typer.Exit(OUTCOME_EXIT[refusal.outcome]) from None
    except _Exit as exc:
        raise typer.Exit(exc.code) from None


OUTCOME_NAMES: dict[Outcome, str] = {outcome: outcome.name.replace("_", " ").lower() for outcome in Outcome}


def _error_name(exc: StationError) -> str:
    """The error's type as the person sees it: the running station's own, for its error answers."""
    from mcpstation.cli._remote import ErrorAnswer

    return exc.type_name if isinstance(exc, ErrorAnswer) else type(exc).__name__


def terminal_confirm() -> Confirm | None:
    """How a confirm-tier call (`[policy] confirm_tools`) is asked about: y/N on the terminal, or,
    with no terminal on stdin, None (the call is refused, saying how to allow it)."""
    if not sys.stdin.isatty():
        return None
    from mcpstation.host import TerminalElicitor

    return TerminalElicitor().confirm


def cli_caller(actor: str | None = None) -> Caller:
    """Who a request from this command line runs as: the person at the terminal (`--actor` names them)."""
    from mcpstation.config.models import Role
    from mcpstation.pipeline import Caller, Face

    return Caller.cli() if actor is None else Caller(actor, Role.ADMIN, Face.CLI)


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
