"""MCP's eight syslog levels, least severe first, and the Python logging level each maps to."""

from __future__ import annotations

import logging
from typing import Final

PYTHON_LEVELS: Final[dict[str, int]] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
