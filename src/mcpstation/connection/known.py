"""`KnownListing`: what a server listed at an earlier run, served before it runs again."""

from __future__ import annotations

from dataclasses import dataclass

import mcp_types as types

from mcpstation.connection.snapshot import SessionInfo


@dataclass(frozen=True, slots=True)
class KnownListing:
    """A lazy server's last listing and session facts (from the catalog cache).

    `stale`: the server's own cache hint (`ttlMs`) has run out, so it is started at once to list
    again; its known listing serves meanwhile.
    """

    tools: tuple[types.Tool, ...]
    prompts: tuple[types.Prompt, ...]
    resources: tuple[types.Resource, ...]
    templates: tuple[types.ResourceTemplate, ...]
    info: SessionInfo
    stale: bool = False
