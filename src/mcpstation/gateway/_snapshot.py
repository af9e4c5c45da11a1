"""The lists a stdio gateway last served its local caller, kept in the data directory.

The next `gateway --stdio` started on the same input (`per_input`: the config file, the variables
it names, `MCPSTATION_*`, the store options) answers `tools/list`, `prompts/list`,
`resources/list` and `resources/templates/list` from this file before its station is up: before
it has read the config, opened the store or imported either.

What the file cannot see (a server added at runtime, a pin approved since) is corrected once the
station is up: a list that differs from what was answered early is announced as changed, as any
other change of the catalog is. Only lists are answered early; every request that acts waits for
the station and goes through its pipeline.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

from mcpstation.per_input import read_kept, write_kept

logger = logging.getLogger(__name__)

SNAPSHOT_FOLDER = "gateway-lists"
KINDS = ("tools", "prompts", "resources", "templates")  # the lists kept, by `ServedLists` field


@dataclass(frozen=True)
class ServedLists:
    """The four lists as one caller was served them."""

    tools: types.ListToolsResult
    prompts: types.ListPromptsResult
    resources: types.ListResourcesResult
    templates: types.ListResourceTemplatesResult

    def as_json(self) -> dict[str, Any]:
        return {kind: getattr(self, kind).model_dump(mode="json", by_alias=True, exclude_none=True) for kind in KINDS}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServedLists:
        return cls(
            tools=types.ListToolsResult.model_validate(data["tools"]),
            prompts=types.ListPromptsResult.model_validate(data["prompts"]),
            resources=types.ListResourcesResult.model_validate(data["resources"]),
            templates=types.ListResourceTemplatesResult.model_validate(data["templates"]),
        )


def read_snapshot(directory: Path, key: str) -> ServedLists | None:
    """The lists kept for `key`, or None: no file, another key, or a file that does not parse."""
    body = read_kept(directory, SNAPSHOT_FOLDER, key)
    if body is None:
        return None
    try:
        return ServedLists.from_json(body)
    except (ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        logger.debug("the gateway's list snapshot is not usable (%s); the station answers", exc)
        return None


def write_snapshot(directory: Path, key: str, lists: ServedLists) -> None:
    """Keep `lists` for `key` (`per_input.write_kept`); failing to write is logged, never raised:
    the next gateway then waits for its station."""
    write_kept(directory, SNAPSHOT_FOLDER, key, lists.as_json())
