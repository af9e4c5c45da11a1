"""What keeps a ready session current and healthy: change notifications, re-listing, health checks.

Handshake-era servers push `list_changed` notifications; 2026-07-28 servers push nothing, so a
`subscriptions/listen` stream brings their changes. Either way a change asks for a refresh; the
refresh waits for a quiet moment (`REFRESH_DEBOUNCE_S` without a new change, at most
`REFRESH_MAX_DELAY_S`), so a storm of notifications costs a re-listing or two, not one each.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp.client import Client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcpstation.connection._errors import describe_failure
from mcpstation.connection.discovery import discover

if TYPE_CHECKING:
    from mcpstation.connection.session import Session

logger = logging.getLogger(__name__)

REFRESH_DEBOUNCE_S = 0.2  # a refresh waits until the server has been quiet this long...
REFRESH_MAX_DELAY_S = 2.0  # ...but never longer than this after the first change it serves
RESOURCE_KINDS = frozenset({"resources", "templates"})


async def refresh_loop(session: Session, client: Client) -> None:
    """Re-list what changed, debounced; a failed refresh keeps the previous listing."""
    connection = session.connection
    while True:
        await session.refresh_wake.wait()
        await _quiet_moment(session)
        kinds, session.refresh_kinds = session.refresh_kinds, set()
        if not kinds:
            continue
        try:
            with anyio.fail_after(connection.call_timeout_s):
                discovered = await discover(
                    client, server=session.name, kinds=kinds, max_pages=connection.settings.max_list_pages
                )
        except Exception as exc:  # boundary: a failed refresh keeps the previous listing
            logger.warning("server %r: refreshing %s failed: %s", session.name, sorted(kinds), describe_failure(exc))
            continue
        connection.update_listing(
            discovered.found, discovered.warnings + session.dropped_tools(), full=False, ttl_ms=discovered.ttl_ms
        )
        logger.info(
            "server %r lists changed (%s): %d tools",
            session.name,
            ", ".join(sorted(kinds)),
            len(connection.listing.tools),
        )
        connection.listing_changed()


async def _quiet_moment(session: Session) -> None:
    """Wait until no change has come for `REFRESH_DEBOUNCE_S`, or `REFRESH_MAX_DELAY_S` has passed."""
    deadline = anyio.current_time() + REFRESH_MAX_DELAY_S
    while True:
        session.refresh_wake = anyio.Event()
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            return
        with anyio.move_on_after(min(REFRESH_DEBOUNCE_S, remaining)):
            await session.refresh_wake.wait()
            continue
        return


async def health_loop(session: Session, client: Client) -> None:
    """Ping (legacy) or discover (modern) periodically; a server that stops answering is recycled."""
    settings = session.connection.settings
    modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
    while True:
        await anyio.sleep(settings.health_interval_s)
        try:
            with anyio.fail_after(settings.health_timeout_s):
                if modern:
                    await client.session.discover()
                else:
                    await client.session.send_ping()  # the session's ping is not deprecated
        except MCPError as exc:
            if exc.code == types.METHOD_NOT_FOUND:
                continue  # answering at all is healthy
            session.lose(f"health check failed: {describe_failure(exc)}")
            return
        except Exception as exc:  # boundary: any failure of the probe means an unhealthy server
            session.lose(f"health check failed: {describe_failure(exc) or 'no answer'}")
            return


async def listen_loop(
    session: Session, client: Client, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Modern servers push nothing; a `subscriptions/listen` stream brings their changes."""
    listening = False
    try:
        async with client.listen(
            tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
        ) as sub:
            task_status.started()
            listening = True
            async for event in sub:
                if isinstance(event, ToolsListChanged):
                    session.request_refresh({"tools"})
                elif isinstance(event, PromptsListChanged):
                    session.request_refresh({"prompts"})
                elif isinstance(event, ResourcesListChanged):
                    session.request_refresh(set(RESOURCE_KINDS))
    except (ListenNotSupportedError, SubscriptionLost, MCPError) as exc:
        logger.debug("server %r: no change stream (%s)", session.name, exc)
        if not listening:
            task_status.started()


async def on_message(session: Session, message: Any) -> None:
    """The SDK's message handler: change notifications, resource updates, unreadable lines."""
    if isinstance(message, Exception):
        logger.warning("server %r sent something unreadable: %s", session.name, str(message).splitlines()[0][:200])
    elif isinstance(message, types.ToolListChangedNotification):
        session.request_refresh({"tools"})
    elif isinstance(message, types.PromptListChangedNotification):
        session.request_refresh({"prompts"})
    elif isinstance(message, types.ResourceListChangedNotification):
        session.request_refresh(set(RESOURCE_KINDS))
    elif isinstance(message, types.ResourceUpdatedNotification):
        observer = session.connection.observer
        if observer is not None:
            observer.resource_updated(session.name, str(message.params.uri))
