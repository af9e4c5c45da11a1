"""Which station a command talks to: `with_station` hands a command, written once over a
`StationView` (`cli/_view.py`), the station running for the data directory (`up`, or the HTTP
gateway) over its control socket, or, with none running, a station started for it alone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcpstation.cli._control import Found, config_path_of, find_station
from mcpstation.cli._exits import EXIT_NO_SERVER
from mcpstation.cli._runner import _errors_to_exit_codes, _Exit, _globals, _run_main, data_dir, logger, say
from mcpstation.cli._view import Needs, StationView, complete_now

if TYPE_CHECKING:
    from mcpstation.cli._control_client import RemoteStation

T = TypeVar("T")

# `ServerState`s that are known but deliberately not run: `ServerState.is_held` over the JSON shape
# both paths share (tests/cli/test_control.py checks they agree).
HELD_STATES = frozenset({"DISABLED", "SHADOWED", "PENDING", "REFUSED", "REMOVED"})
# A request can reach a server in these: IDLE starts it, STARTING makes the request wait for it.
REACHABLE_STATES = frozenset({"READY", "IDLE", "STARTING"})


def with_station(
    command: Callable[[StationView], Awaitable[T]],
    *,
    needs: Needs = Needs.SERVERS,
    require_server: bool = True,
    actor: str | None = None,
    calls: str | None = None,
) -> T:
    """Run `command` on the station running for the data directory, or, with none running (or
    `--one-shot`), on one started for it alone as `needs` says; `-v` says which.

    `require_server`: exit 3 when some server is enabled and none is reachable, before `command`
    runs. `actor` names who acts, for the audit of management actions (`--actor`). `calls` names
    the tool the command calls, whose server a station started for it may start first.
    """

    async def checked(view: StationView) -> T:
        if require_server:
            _require_a_ready_server((await view.status())["servers"])
        return await command(view)

    running = _running_station(actor)
    if running is not None:
        from mcpstation.cli._control_client import StationGone
        from mcpstation.cli._remote import RemoteView

        try:
            with _errors_to_exit_codes():
                return complete_now(checked(RemoteView(running)))
        except StationGone as gone:  # nothing was sent: the command can still run without it
            logger.info("the running station stopped listening (%s); going on without it", gone)

    async def main() -> T:
        from mcpstation.cli._local import open_local_view

        async with open_local_view(needs, actor=actor, calls=calls) as view:
            return await checked(view)

    return _run_main(main)


def _running_station(actor: str | None) -> RemoteStation | None:
    if _globals.one_shot:
        logger.info("--one-shot: starting a station for this command")
        return None
    directory = data_dir()
    lookup = find_station(directory)
    if lookup.found is Found.RUNNING:
        from mcpstation.cli._control_client import RemoteStation

        named = config_path_of(_globals.config_path)
        if lookup.said_config and named is not None and named != lookup.config:
            runs = str(lookup.config) if lookup.config is not None else "the default config"
            logger.warning(
                "the station running for %s runs %s, not %s: this command starts a station of its own for it",
                directory,
                runs,
                named,
            )
            return None
        logger.info("talking to the station running for %s (control socket %s)", directory, lookup.path)
        return RemoteStation(lookup.path, actor=actor)
    if lookup.found is Found.UNUSABLE:
        logger.warning("not using the control socket %s: %s", lookup.path, lookup.reason)
    logger.info("no station runs for %s (%s); starting one for this command", directory, lookup.reason)
    return None


def _require_a_ready_server(servers: list[dict[str, Any]]) -> None:
    """Exit 3 when some server is enabled and none of them is reachable."""
    if not any_reachable(servers):
        for s in _enabled(servers):
            say(f"server {s['name']!r}: {s['state']}: {s['error'] or 'not ready'}", style="red", stderr=True)
        say("no server reachable", style="bold red", stderr=True)
        raise _Exit(EXIT_NO_SERVER)


def any_reachable(servers: list[dict[str, Any]]) -> bool:
    """Whether a request can reach some enabled server; True when no server is enabled."""
    enabled = _enabled(servers)
    return not enabled or any(s["state"] in REACHABLE_STATES for s in enabled)


def _enabled(servers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in servers if s["state"] not in HELD_STATES and s["origin"] != "host"]
