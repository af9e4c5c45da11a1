"""`LocalView`: a station started in this process for one command (`StationView`, `cli/_view.py`).

A command that needs the catalog (`Needs.LISTINGS`) gets a station whose servers the catalog
cache knows stay stopped (`StartPlan.ON_DEMAND`): a list answers from the cache, and a request
starts only the server that owns what it asks for. A name the cache does not know starts the
servers that stayed stopped, to look for it, and says so.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio

from mcpstation.cli._runner import _load, cli_caller, command_input_key, data_dir, open_station, open_store, say
from mcpstation.cli._view import (
    CALL_FIELDS,
    AuditQuery,
    CacheAge,
    Confirm,
    Needs,
    ProgressFn,
    Refusal,
    ServerVerb,
    Shape,
)
from mcpstation.errors import UsageError

if TYPE_CHECKING:
    from mcpstation.catalog import Catalog
    from mcpstation.dynamic import ServerChange
    from mcpstation.pipeline import Ask, Caller, Question
    from mcpstation.station import Station
    from mcpstation.store import ActionRecord, CallRecord, Store


@asynccontextmanager
async def open_local_view(
    needs: Needs, *, actor: str | None = None, calls: str | None = None
) -> AsyncIterator[LocalView]:
    """The store, and a station started as `needs` says (none for `Needs.STORE`), for one command.

    `calls` names the tool the command calls: its server starts before the station is imported,
    when the last one-shot station on this input saw which one owns it (`_call_owners`).
    """
    if needs is Needs.STORE:
        async with await open_store() as store:
            yield LocalView(store, None, actor)
        return
    from mcpstation.cli import _call_owners
    from mcpstation.connection.early import EarlyStarts

    config = _load()
    listing = needs is Needs.LISTINGS  # a command that calls or lists: the owners file is its business
    directory = data_dir()
    key = command_input_key() if listing else None
    owners = _call_owners.read_owners(directory, key) if key is not None else {}
    early = EarlyStarts()
    try:
        if calls is not None:
            _call_owners.start_owner(early, config, owners, calls)
        from mcpstation.pool import StartPlan  # the station's stack: a store-only command never loads it

        plan = StartPlan.ON_DEMAND if listing else StartPlan.SETTLED
        async with open_station(plan, config=config, early=early) as station:
            assert station.store is not None
            yield LocalView(station.store, station, actor)
            if key is not None:
                _call_owners.keep_owners(directory, key, station, owners)
    finally:
        with anyio.CancelScope(shield=True):
            await early.aclose()


class LocalView:
    """`StationView` over a `Station` of this process, as `actor` (the person at the terminal)."""

    reports_progress = True

    def __init__(self, store: Store, station: Station | None, actor: str | None) -> None:
        self.store = store
        self._station = station
        self._actor = actor

    @functools.cached_property
    def caller(self) -> Caller:
        """Built on first use: a store-only command never loads the pipeline (nor with it the SDK)."""
        return cli_caller(self._actor)

    @property
    def station(self) -> Station:
        assert self._station is not None, "this command opened the store only (Needs.STORE)"
        return self._station

    async def status(self) -> Shape:
        return self.station.status().to_dict()

    async def reconnect(self, name: str | None) -> Shape:
        names = await self.station.reconnect(name, failed_only=name is None, actor=self.caller.actor)
        return {"reconnected": names, **self.station.status().to_dict()}

    async def tools(self) -> list[Shape]:
        station = self.station
        return [{**t.to_dict(), "tokens": station.tool_tokens(t)} for t in station.visible_tools(self.caller)]

    async def search_tools(self, query: str, *, limit: int, server: str | None) -> list[Shape]:
        hits = await self.station.requests.search_tools(query, caller=self.caller, limit=limit, server=server)
        return [hit.to_dict() for hit in hits]

    async def approve_tool(self, server: str, tool: str) -> bool:
        return await self.station.approve_tool(server, tool, actor=self.caller.actor)

    async def prompts(self) -> list[Shape]:
        return [p.to_dict() for p in self.station.prompts_for(self.caller)]

    async def resources(self) -> Shape:
        return {
            "resources": [r.to_dict() for r in self.station.resources_for(self.caller)],
            "templates": [t.to_dict() for t in self.station.templates_for(self.caller)],
        }

    async def catalog_age(self) -> CacheAge | None:
        cache = self.station.catalog_cache
        dormant = self._dormant()
        times = [at for name in dormant if cache is not None and (at := cache.listed_at(name)) is not None]
        return CacheAge(tuple(dormant), min(times)) if times else None

    async def refresh(self) -> None:
        await self._start(self._dormant())

    async def call_tool(
        self,
        name: str,
        arguments: Shape,
        *,
        timeout_s: float | None,
        progress: ProgressFn | None,
        confirm: Confirm | None,
    ) -> Shape:
        ask: Ask | None = None
        if confirm is not None:
            person = confirm

            async def ask_person(question: Question) -> bool:
                return await person(question.text())

            ask = ask_person
        requests = self.station.requests
        await self._find(f"tool {name!r}", lambda catalog: requests.tool_owner(name, arguments) is not None, name)
        result = await self.station.requests.call_tool(
            name, arguments, caller=self.caller, timeout_s=timeout_s, progress=progress, ask=ask
        )
        return result.to_dict()

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> Shape:
        await self._find(f"prompt {name!r}", lambda catalog: name in catalog.prompts, name)
        result = await self.station.requests.get_prompt(name, arguments, caller=self.caller)
        if result.raw is None:
            raise Refusal(result.outcome, result.error or "")
        return result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def read_resource(self, uri: str) -> Shape:
        await self._find(f"resource {uri!r}", lambda catalog: catalog.resource_owner(uri) is not None)
        result = await self.station.requests.read_resource(uri, caller=self.caller)
        if result.raw is None:
            raise Refusal(result.outcome, result.error or "")
        return result.raw.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def change_server(self, verb: ServerVerb, name: str, entry: Shape | None = None) -> Shape:
        station, actor = self.station, self.caller.actor
        if verb is ServerVerb.ADD:
            if entry is None:
                raise UsageError("adding a server needs its entry")
            return (await station.add_server(entry, actor=actor)).to_dict()
        by_name: dict[ServerVerb, Callable[..., Awaitable[ServerChange]]] = {
            ServerVerb.REMOVE: station.remove_server,
            ServerVerb.ENABLE: station.enable_server,
            ServerVerb.DISABLE: station.disable_server,
            ServerVerb.RELOAD: station.reload_server,
            ServerVerb.APPROVE: station.approve_server,
        }
        return (await by_name[verb](name, actor=actor)).to_dict()

    async def audit(self, query: AuditQuery) -> dict[str, list[Shape]]:
        store, kind = self.store, query.kind
        calls = await store.list_calls(query.server, query.since, query.limit) if kind in ("calls", "all") else ()
        actions = await store.list_actions(query.server, query.since, query.limit) if kind in ("actions", "all") else ()
        return {"calls": [_call_dict(c) for c in calls], "actions": [_action_dict(a) for a in actions]}

    # -- servers that stayed stopped -----------------------------------------------------------------

    def _dormant(self) -> list[str]:
        """The servers whose listing serves from the catalog cache while they do not run."""
        from mcpstation.status import ServerState

        return [s.name for s in self.station.status().servers if s.state is ServerState.IDLE]

    async def _find(self, what: str, listed: Callable[[Catalog], bool], name: str | None = None) -> None:
        """Start the servers that stayed stopped when `what` is not in the cached catalog, and say so:
        the one whose names `name` carries the prefix of, if that one is stopped, else all of them."""
        if listed(self.station.catalog):
            return
        dormant = self._dormant()
        hint = self.station.live_catalog.owner_hint(name) if name is not None else None
        if hint in dormant:
            dormant = [hint]
        if dormant:
            names = ", ".join(repr(name) for name in dormant)
            say(f"{what} is not in the catalog cache; starting {names} to look for it", stderr=True)
            await self._start(dormant)

    async def _start(self, names: list[str]) -> None:
        """Start these servers together; returns once each has settled (within the start-up deadline)."""
        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(self.station.reconnect, name)


def _action_dict(action: ActionRecord) -> Shape:
    return {
        "at": action.at.isoformat(),
        "actor": action.actor,
        "action": action.action,
        "server": action.server,
        "detail": dict(action.detail),
    }


def _call_dict(call: CallRecord) -> Shape:
    data: Shape = {name: getattr(call, name) for name in CALL_FIELDS if name != "at"}
    data["at"] = call.at.isoformat()
    return data
