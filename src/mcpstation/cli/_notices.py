"""Standing notices, said once: a log line the station marks `standing` (`station.STANDING_NOTICE`:
a warning about the operator's own config, true at every start while the config stays) is shown
the first time, and again only once what it says changes. `-v` shows it every time.

What was shown is remembered in the data directory, one SHA-256 of the line's text a line.
Imported by every command: the standard library only.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

NOTICES_FILE_NAME = "notices"
STANDING_ATTRIBUTE = "standing"  # the record attribute `station.STANDING_NOTICE` sets


class SaidOnce(logging.Filter):
    """Lets a standing notice through the first time its text is seen in `path`'s data directory."""

    def __init__(self, data_dir: Path) -> None:
        super().__init__()
        self.path = data_dir / NOTICES_FILE_NAME
        self._said: set[str] | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, STANDING_ATTRIBUTE, False):
            return True
        digest = hashlib.sha256(record.getMessage().encode()).hexdigest()
        said = self._load()
        if digest in said:
            return False
        said.add(digest)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="ascii") as notices:
                notices.write(digest + "\n")
        except OSError:  # a data directory we cannot write to: the notice is said every time
            pass
        return True

    def _load(self) -> set[str]:
        if self._said is None:
            try:
                self._said = set(self.path.read_text(encoding="ascii").split())
            except (OSError, ValueError):
                self._said = set()
        return self._said
