"""The lists a stdio gateway last served its local caller, kept in the data directory.

The next `gateway --stdio` started on the same config answers `tools/list`, `prompts/list`,
`resources/list` and `resources/templates/list` from this file before its station is up: before
it has read the config, opened the store or imported either. Each file belongs to one input, and
is named by its key: the config file's path and bytes, the values of the environment variables the
file names (`${VAR}`), every `MCPSTATION_*` variable and the command's store options. Another input
finds no file of its own. The `KEEP` most recently written files are kept (one editor's config,
another's, a project's), older ones removed.

What the file cannot see (a server added at runtime, a pin approved since) is corrected once the
station is up: a list that differs from what was answered early is announced as changed, as any
other change of the catalog is. Only lists are answered early; every request that acts waits for
the station and goes through its pipeline.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types

logger = logging.getLogger(__name__)

SNAPSHOT_FOLDER = "gateway-lists"
FORMAT = 1  # bump when what the file holds, or what the key covers, changes
KEEP = 16
_VARIABLE = re.compile(rb"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)")
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


def snapshot_key(
    config_path: Path | None,
    *,
    options: Mapping[str, str | None],
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The key of the gateway's input, or None when the config file cannot be read.

    `options` are the command's own settings that change what it serves (`--data-dir`, `--db-url`).
    """
    environ = os.environ if environ is None else environ
    digest = hashlib.sha256()

    def part(value: str | bytes | None) -> None:
        data = b"\x00" if value is None else (value if isinstance(value, bytes) else value.encode())
        digest.update(len(data).to_bytes(8, "big") + data)

    part(str(FORMAT))
    if config_path is None:
        part(None)
    else:
        try:
            text = config_path.read_bytes()
        except OSError:
            return None
        part(str(config_path))
        part(text)
        for name in sorted({match.decode() for match in _VARIABLE.findall(text)}):
            part(name)
            part(environ.get(name))
    for name in sorted(name for name in environ if name.startswith("MCPSTATION_")):
        part(name)
        part(environ[name])
    for name, value in sorted(options.items()):
        part(name)
        part(value)
    return digest.hexdigest()


def read_snapshot(directory: Path, key: str) -> ServedLists | None:
    """The lists kept for `key`, or None: no file, another key, or a file that does not parse."""
    try:
        data = json.loads(_path(directory, key).read_bytes())
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            return None
        return ServedLists.from_json(data["lists"])
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        logger.debug("the gateway's list snapshot is not usable (%s); the station answers", exc)
        return None


def write_snapshot(directory: Path, key: str, lists: ServedLists) -> None:
    """Keep `lists` for `key`, replacing its file whole (readers see the old file or the new one),
    and remove all but the `KEEP` most recently written.

    Failing to write is logged, never raised: the next gateway then waits for its station.
    """
    body = json.dumps({"format": FORMAT, "key": key, "lists": lists.as_json()}, separators=(",", ":"))
    path = _path(directory, key)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(body)
        os.replace(partial, path)
    except OSError as exc:
        logger.warning("could not keep the gateway's lists in %s: %s", path, exc)
        with contextlib.suppress(OSError):
            partial.unlink()
        return
    _prune(path.parent)


def _path(directory: Path, key: str) -> Path:
    return directory / SNAPSHOT_FOLDER / f"{key}.json"


def _prune(folder: Path) -> None:
    """Remove all but the `KEEP` most recently written snapshots (a file gone meanwhile is fine)."""
    written: list[tuple[float, Path]] = []
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError):
            written.append((path.stat().st_mtime, path))
    for _, path in sorted(written, reverse=True)[KEEP:]:
        with contextlib.suppress(OSError):
            path.unlink()
