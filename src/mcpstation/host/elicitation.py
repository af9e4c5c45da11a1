"""Elicitation: a server asks the person for input, as a form or by sending them to a URL.

The host application answers with an `ElicitationHandler`; without one every request is
declined. Each mode is allowed or not per server (`[host.elicitation]`, overridden by a server's
`elicitation_form` / `elicitation_url`). When the person accepts a form but leaves fields out,
the schema's `default`s fill them (SEP-1034; the SDK does not).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import mcp_types as types
from mcp.client import ClientRequestContext
from mcp.client.session import ElicitationFnT

from mcpstation.host._allowances import ElicitationModes

logger = logging.getLogger(__name__)

Action = Literal["accept", "decline", "cancel"]
FieldValue = str | int | float | bool | list[str] | None

REFUSED = types.INVALID_REQUEST  # JSON-RPC code of a mode this server may not use
FAILED = types.INTERNAL_ERROR


@dataclass(frozen=True, slots=True)
class FormRequest:
    """Fill in a flat form; `schema` is the JSON Schema the server sent (top-level properties only)."""

    message: str
    schema: Mapping[str, Any]

    @property
    def properties(self) -> Mapping[str, Mapping[str, Any]]:
        properties = self.schema.get("properties")
        return properties if isinstance(properties, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        required = self.schema.get("required")
        return tuple(name for name in required if isinstance(name, str)) if isinstance(required, list) else ()


@dataclass(frozen=True, slots=True)
class UrlRequest:
    """Open `url` in a browser (out of band: nothing typed there passes through the host)."""

    message: str
    url: str
    elicitation_id: str | None = None


ElicitationRequest = FormRequest | UrlRequest


@dataclass(frozen=True, slots=True)
class ElicitationAnswer:
    """What the person did. `content` only for an accepted form; fields left out get schema defaults."""

    action: Action
    content: Mapping[str, FieldValue] | None = None

    @classmethod
    def accept(cls, content: Mapping[str, FieldValue] | None = None) -> ElicitationAnswer:
        return cls("accept", content)

    @classmethod
    def decline(cls) -> ElicitationAnswer:
        return cls("decline")

    @classmethod
    def cancel(cls) -> ElicitationAnswer:
        return cls("cancel")


class ElicitationHandler(Protocol):
    """The host application's way of asking the person: `async (server, request) -> answer`."""

    async def __call__(self, server: str, request: ElicitationRequest, /) -> ElicitationAnswer: ...


def apply_defaults(schema: Mapping[str, Any], content: Mapping[str, FieldValue] | None) -> dict[str, FieldValue]:
    """`content` with every property it leaves out set to the schema's `default`, where one exists."""
    filled: dict[str, FieldValue] = dict(content or {})
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return filled
    for name, prop in properties.items():
        if name not in filled and isinstance(prop, Mapping) and "default" in prop:
            default = prop["default"]
            filled[name] = list(default) if isinstance(default, list) else default
    return filled


class Elicitor:
    """Checks the mode against a server's allowance, asks the handler, fills defaults."""

    def __init__(self, handler: ElicitationHandler | None) -> None:
        self.handler = handler

    def callback_for(self, server: str, modes: ElicitationModes) -> ElicitationFnT:
        """The SDK `elicitation_callback` for `server` (registering it declares the capability)."""

        async def elicitation_callback(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult | types.ErrorData:
            return await self.elicit(server, modes, params)

        return elicitation_callback

    async def elicit(
        self, server: str, modes: ElicitationModes, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        request: ElicitationRequest
        if isinstance(params, types.ElicitRequestURLParams):
            if not modes.url:
                return _refuse(server, "url")
            request = UrlRequest(message=params.message, url=params.url, elicitation_id=params.elicitation_id)
        else:
            if not modes.form:
                return _refuse(server, "form")
            request = FormRequest(message=params.message, schema=params.requested_schema)
        if self.handler is None:
            logger.info("server %r asked for %s input; declined (no elicitation handler)", server, params.mode)
            return types.ElicitResult(action="decline")
        try:
            answer = await self.handler(server, request)
        except Exception as exc:  # boundary: the host application's UI code; the server gets an error, not a crash
            logger.exception("server %r: the elicitation handler failed", server)
            return types.ErrorData(code=FAILED, message=f"the host could not ask the user: {exc}")
        logger.info("server %r: %s elicitation answered %s", server, params.mode, answer.action)
        if answer.action != "accept" or isinstance(request, UrlRequest):
            return types.ElicitResult(action=answer.action)
        return types.ElicitResult(action="accept", content=apply_defaults(request.schema, answer.content))


def _refuse(server: str, mode: str) -> types.ErrorData:
    message = (
        f"{mode} elicitation is not allowed for server {server!r}; "
        f"set elicitation_{mode} = true on the server (or allow_{mode} in [host.elicitation])"
    )
    logger.warning("refused elicitation: %s", message)
    return types.ErrorData(code=REFUSED, message=message)
