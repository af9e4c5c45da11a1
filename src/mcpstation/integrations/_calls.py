"""How every adapter reaches the station: through its front door, with a caller, one `Answer` per call.

The default caller of an adapter is the model itself: `llm_caller(framework)`, role `user`,
face `llm`. It sees what a `user` sees and nothing an operator marked `admin` (the station's own
management tools among them), and the audit trail names it `llm:<framework>`. A program that
wants its model to reach more passes `caller=` (`Caller.library()` reaches everything).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from mcpstation.catalog import CatalogTool
from mcpstation.catalog.catalog import object_schema
from mcpstation.config.models import Role
from mcpstation.integrations._content import Answer
from mcpstation.pipeline import Caller, Face
from mcpstation.station import Station


def llm_caller(identity: str = "llm") -> Caller:
    """The caller an adapter uses when none is given: a model, with the `user` role."""
    return Caller(identity, Role.USER, Face.LLM)


def resolve_caller(caller: Caller | None, framework: str) -> Caller:
    return caller if caller is not None else llm_caller(framework)


def parameters_schema(tool: CatalogTool) -> dict[str, Any]:
    """The tool's input schema as the server wrote it, made an object (each framework converts it itself)."""
    return object_schema(tool)


class ArgumentsError(ValueError):
    """The model's arguments for a call are not a JSON object; the message says what they are."""


def json_arguments(raw: object) -> dict[str, Any]:
    """A model's arguments (a JSON string, an object or nothing) as a dict.

    Raises:
        ArgumentsError: they are not valid JSON, or not an object.
    """
    if raw is None or raw == "":
        return {}
    value: object = raw
    if isinstance(raw, str | bytes):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise ArgumentsError(f"are not valid JSON ({exc})") from None
    if not isinstance(value, Mapping):
        raise ArgumentsError(f"are a JSON {type(value).__name__}, not an object")
    return dict(value)


async def call(station: Station, name: str, arguments: Mapping[str, Any], caller: Caller) -> Answer:
    """One tool call through the station's pipeline; every failure comes back as an `Answer`."""
    result = await station.requests.call_tool(name, arguments, caller=caller)
    return Answer.of(result)


PendingCall = tuple[str, Mapping[str, Any] | ArgumentsError]
"""A tool name and either its arguments or why they could not be read."""


async def call_all(station: Station, calls: Sequence[PendingCall], caller: Caller) -> list[Answer]:
    """Run a model's parallel calls concurrently; the answers come back in the calls' order."""
    answers: list[Answer | None] = [None] * len(calls)

    async def run(index: int, name: str, arguments: Mapping[str, Any]) -> None:
        answers[index] = await call(station, name, arguments, caller)

    async with anyio.create_task_group() as group:
        for index, (name, arguments) in enumerate(calls):
            if isinstance(arguments, ArgumentsError):
                answers[index] = Answer.bad_arguments(name, str(arguments))
            else:
                group.start_soon(run, index, name, arguments)
    return [answer for answer in answers if answer is not None]
