"""The confirm tier: tools a person confirms before each call (`[policy] confirm_tools`).

A call of such a tool waits for the caller's answer: the face that sent the request says how its
caller is asked (`Request.ask`: the gateway asks its client through elicitation, a library user
passes a function, the HTTP API keeps the question for an answer at `/api/mcp/confirmations` when
the call opts in, `confirmations.py`). Yes runs the call; no, no answer within `confirm_timeout_s`, or no way to ask
refuses it (`Outcome.REFUSED`, with `confirmation` saying which in the structured result), so a
call is never run unconfirmed and never dropped without an answer. The layer sits after the rules
that refuse on their own (argument check, URL guard): nobody is asked about a call that would be
refused anyway. A code-mode script's call is asked about exactly like a direct one; its run pauses
until the answer (`mcpstation.codemode`).
"""

from __future__ import annotations

import enum
import fnmatch
from collections.abc import Awaitable, Callable

import anyio

from mcpstation.catalog import AnyResult
from mcpstation.config.models import PolicySettings
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.caller import Face
from mcpstation.pipeline.kinds import RequestKind
from mcpstation.pipeline.request import Handler, Question, Request


class Confirmation(enum.StrEnum):
    """Why a call of a confirm-tier tool was refused (the structured result's `confirmation`)."""

    DENIED = "denied"  # the person said no
    UNANSWERED = "unanswered"  # no answer in time
    UNASKABLE = "unaskable"  # the face that sent the call has no way to ask its caller


_ELICITATION = "call it through the gateway from an MCP client that supports elicitation (it is asked there)"
_HOW_TO_BE_ASKED: dict[Face, str] = {
    Face.CLI: (
        "run `mcpstation call ...` on a terminal, which asks there (y/N), whether it goes through a running "
        "station (`mcpstation up`) or starts one of its own"
    ),
    Face.HTTP_API: (
        "call it with `?confirm=wait`, then answer it (as the same caller, or an admin) at "
        "`POST /api/mcp/confirmations/{id}`, which `GET /api/mcp/confirmations` lists"
    ),
    Face.LIBRARY: "pass `ask=`, an async function that answers the Question True or False",
}  # how a caller of each face gets asked; any other (the framework adapters) through the gateway


class ConfirmTier:
    """Which tools need a person's yes, and the layer that asks, read from the settings at each call."""

    def __init__(self, settings: Callable[[], PolicySettings]) -> None:
        self._settings = settings

    def needs(self, server: str, tool: str) -> bool:
        """Whether a call of `server`'s own tool `tool` waits for a person's answer."""
        patterns = self._settings().confirm_tools
        if not patterns:
            return False
        key = f"{server}/{tool}"
        return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)

    def __call__(self, handler: Handler) -> Handler:
        def confirmed(request: Request) -> Awaitable[AnyResult]:
            if request.kind is not RequestKind.CALL_TOOL or not self.needs(request.server, request.target):
                return handler(request)
            return asked(request)

        async def asked(request: Request) -> AnyResult:
            refused = await self._answer(request)
            if refused is None:
                return await handler(request)
            confirmation, reason = refused
            structured = {"success": False, "error": reason, "confirmation": str(confirmation)}
            return request.fail(Outcome.REFUSED, reason, structured=structured)

        return confirmed

    async def _answer(self, request: Request) -> tuple[Confirmation, str] | None:
        """None when the person said yes, else why not."""
        name = repr(request.name)
        if request.ask is None:
            how = _HOW_TO_BE_ASKED.get(request.caller.face, _ELICITATION)
            return Confirmation.UNASKABLE, (
                f"{name} needs a person's confirmation before each call, and this caller cannot be asked. "
                f"Fix: {how}, or remove it from [policy] confirm_tools."
            )
        question = Question(
            request.caller, request.name, request.server, request.target, request.arguments, request.via,
            request.run_id,
        )  # fmt: skip
        timeout_s = self._settings().confirm_timeout_s
        approved = False
        with anyio.move_on_after(timeout_s) as waited:
            approved = await request.ask(question)
        if waited.cancelled_caught:
            return Confirmation.UNANSWERED, f"{name} needs a person's confirmation; nobody answered in {timeout_s:g} s"
        if not approved:
            return Confirmation.DENIED, f"{name} needs a person's confirmation, and the call was declined"
        return None
