"""Small files a command keeps in the data directory for one input, read by the next command on it.

A command's input is the config file (its path and bytes), the values of the environment variables
the file names (`${VAR}`, `${env:VAR}`), every `MCPSTATION_*` variable and the command's own store
options. `input_key` hashes it; each file is named by that key inside a folder of its kind
(`gateway-lists`, `call-owners`), so another input finds no file of its own. A file is replaced
whole (a reader sees the old file or the new one), mode 0600, and the `KEEP` most recently written
of a folder are kept (one editor's config, another's, a project's).

Standard library only: these files are read before the SDK, the config or the store is imported.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FORMAT = 2  # bump when a file's envelope, or what the key covers, changes
KEEP = 16
_VARIABLE = re.compile(rb"\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)")


def input_key(
    config_path: Path | None,
    *,
    options: Mapping[str, str | None],
    environ: Mapping[str, str] | None = None,
) -> str | None:
    """The key of a command's input, or None when the config file cannot be read.

    `options` are the command's own settings that change what it sees (`--data-dir`, `--db-url`).
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


def read_kept(directory: Path, folder: str, key: str) -> Any:
    """The body kept in `folder` for `key`, or None: no file, another key, or one that does not parse."""
    try:
        data = json.loads(_path(directory, folder, key).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.debug("the file kept in %s for this input is not usable (%s)", folder, exc)
        return None
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
        return None
    return data.get("body")


def write_kept(directory: Path, folder: str, key: str, body: Any) -> None:
    """Keep `body` (JSON) in `folder` for `key`, replacing its file whole, and remove all but the
    `KEEP` most recently written files of the folder.

    Failing to write is logged, never raised: the next command then does without the file.
    """
    text = json.dumps({"format": FORMAT, "key": key, "body": body}, separators=(",", ":"))
    path = _path(directory, folder, key)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(partial, path)
    except OSError as exc:
        logger.warning("could not keep %s in %s: %s", folder, path, exc)
        with contextlib.suppress(OSError):
            partial.unlink()
        return
    _prune(path.parent)


def _path(directory: Path, folder: str, key: str) -> Path:
    return directory / folder / f"{key}.json"


def _prune(folder: Path) -> None:
    """Remove all but the `KEEP` most recently written files (a file gone meanwhile is fine)."""
    written: list[tuple[float, Path]] = []
    for path in folder.glob("*.json"):
        with contextlib.suppress(OSError):
            written.append((path.stat().st_mtime, path))
    for _, path in sorted(written, reverse=True)[KEEP:]:
        with contextlib.suppress(OSError):
            path.unlink()
