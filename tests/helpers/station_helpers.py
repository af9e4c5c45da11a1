"""Helpers for station tests: real servers as subprocesses, specs built from them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _processes import alive
from fork_server import interpreter

from mcpstation.config.models import InProcessServerSpec
from mcpstation.testing.demo_server import build_demo_server

PY = interpreter()  # the real interpreter, forked from one that has imported the station (fork_server.py)
START_TIMEOUT_S = 60.0  # generous bound for any test's whole station start on a loaded 2-core machine


def inproc(name: str, *, server: object | None = None, **fields: Any) -> InProcessServerSpec:
    """An in-process entry: our demo server (or `server`) over the SDK's memory streams, no process."""
    return InProcessServerSpec(name=name, server=server if server is not None else build_demo_server(), **fields)


def demo(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio server entry running our demo server."""
    return {"name": name, "command": PY, "args": ["-m", "mcpstation.testing.demo_server", *args], **fields}


def paged(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "command": PY, "args": ["-m", "mcpstation.testing.paged_server", *args], **fields}


def chaos(name: str, mode: str, *args: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "command": PY, "args": ["-m", "mcpstation.testing.chaos_server", mode, *args], **fields}


TINY_SERVER = Path(__file__).resolve().parents[2] / "bench" / "servers" / "tiny_server.py"


def tiny(name: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A stdio entry running the stdlib-only tiny server (handshake era, answers in microseconds)."""
    return {"name": name, "command": PY, "args": [str(TINY_SERVER), *args], **fields}


def pid_alive(pid: int) -> bool:
    return alive(pid)


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCPSTATION_CONFIG", raising=False)
    os.environ.pop("MCPSTATION_CONFIG", None)
