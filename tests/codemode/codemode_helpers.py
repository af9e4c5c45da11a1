"""Stations for the code-mode tests: in-process servers, code mode on, limits as each test needs."""

from __future__ import annotations

from typing import Any

from mcpstation import Caller, Face, Role, StationConfig

MODEL = Caller("model", Role.USER, Face.LLM)  # what a framework adapter hands the model's calls as


def code_config(*servers: Any, code_mode: str = "on", tool_search: str = "off", **limits: Any) -> StationConfig:
    """Code mode on (tool search off unless asked), with `limits` for the `[code_mode]` table."""
    return StationConfig(
        servers=servers, station={"code_mode": code_mode, "tool_search": tool_search}, code_mode=limits
    )
