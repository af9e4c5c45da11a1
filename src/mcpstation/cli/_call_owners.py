"""Which config server owns each tool, as the last one-shot station on this input saw it.

`mcpstation call NAME`, with no station running, starts NAME's server (`connection.early`)
before it imports the SDK, the store and the station, when this file names one: the server's
start-up then overlaps the station's. The station still resolves NAME as it always does; the
session of the server it picks adopts the process only if it was started for that server, as
that server runs now (`EarlyStarts.take`), and one started for nothing is stopped at the end.

The file (`per_input`, folder `call-owners`) maps public tool names to servers of the config
that may start early (`early.usable`); a one-shot station that lists the catalog rewrites it
when the catalog says otherwise.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mcpstation.per_input import read_kept, write_kept

if TYPE_CHECKING:
    from mcpstation.config.models import StationConfig
    from mcpstation.connection.early import EarlyStarts
    from mcpstation.station import Station

OWNERS_FOLDER = "call-owners"
Owners = dict[str, str]


def read_owners(directory: Path, key: str) -> Owners:
    """The tool owners kept for `key`; empty when none are, or the file is not usable."""
    body = read_kept(directory, OWNERS_FOLDER, key)
    if not isinstance(body, dict):
        return {}
    return {tool: server for tool, server in body.items() if isinstance(server, str)}


def start_owner(early: EarlyStarts, config: StationConfig, owners: Owners, tool: str) -> bool:
    """Start the server `owners` names for `tool`, when the config runs it; whether one started."""
    server = owners.get(tool)
    if server is None or not config.enabled:
        return False
    try:
        spec = config.server(server)
    except KeyError:  # the config no longer has it
        return False
    return early.start(spec) is not None


def keep_owners(directory: Path, key: str, station: Station, kept: Owners) -> None:
    """Rewrite the owners of `key` from `station`'s catalog, when they differ from `kept`."""
    from mcpstation.connection.early import usable

    config = station.config
    startable = {spec.name for spec in config.servers if usable(spec)} if config.enabled else set()
    owners = {tool.name: tool.server for tool in station.tools if tool.server in startable}
    if owners != kept:
        write_kept(directory, OWNERS_FOLDER, key, owners)
