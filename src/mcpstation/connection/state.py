"""The lifecycle of one server connection."""

from __future__ import annotations

import enum


class ConnectionState(enum.Enum):
    """Where a connection is in its life; `repr` and `str` give the bare name."""

    IDLE = "idle"  # a lazy server between runs: its listing is known, the next request starts it
    STARTING = "starting"
    READY = "ready"
    BACKING_OFF = "backing_off"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"

    def __repr__(self) -> str:
        return self.name

    def __str__(self) -> str:
        return self.name

    @property
    def is_settled(self) -> bool:
        """True once a start attempt has an outcome (up, failed or stopped)."""
        return self is not ConnectionState.STARTING
