"""`Request`: one resolved request on its way through the pipeline, whatever its kind.

A face says what it wants by public name (a tool or prompt) or URI; resolution (`Pipeline` in
`pipeline.py`) finds the owner in the catalog and builds a `Request`; every layer sees the same
type and answers with the result type of its kind (`Request.fail` builds one from the kinds table).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from mcpstation.catalog import AnyResult
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.caller import Caller
from mcpstation.pipeline.kinds import KINDS, CompletionRef, RequestKind

WEB_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp"})
ARGUMENTS_SHOWN_CHARS = 400  # of the arguments' JSON, in the question a person reads


class Via(enum.StrEnum):
    """How a request came in when a face did not send it directly (its audit record says so)."""

    CODE = "code"  # a call made by a code-mode script


@dataclass(frozen=True, slots=True)
class Question:
    """What a person is asked to confirm (`confirm.py`): one call, by public name, with its arguments."""

    caller: Caller
    name: str
    server: str
    tool: str
    arguments: Mapping[str, Any]
    via: Via | None = None
    run_id: str | None = None

    def text(self) -> str:
        """`Run 'github_delete_repo' (server 'github') for api:ci-bot with {"repo": "x"}?`"""
        shown = json.dumps(dict(self.arguments), ensure_ascii=False, default=repr)
        if len(shown) > ARGUMENTS_SHOWN_CHARS:
            shown = shown[: ARGUMENTS_SHOWN_CHARS - 1] + "…"
        where = f", from code-mode run {self.run_id}" if self.via is Via.CODE and self.run_id else ""
        return f"Run {self.name!r} (server {self.server!r}) for {self.caller.actor}{where} with {shown}?"


Ask = Callable[[Question], Awaitable[bool]]
"""Asks the caller to confirm a call (`confirm.py`): True runs it, False (or no answer in time) refuses it."""


@dataclass(frozen=True, slots=True)
class Request:
    """A request with its owner resolved: `name` is what the caller said, `target` the owner's own name."""

    kind: RequestKind
    name: str
    server: str
    target: str
    caller: Caller
    arguments: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    progress: ProgressFnT | None = field(default=None, compare=False)
    # completion/complete: the reference (with the owner's own prompt name) and the other arguments
    ref: CompletionRef | None = None
    context_arguments: Mapping[str, str] | None = None
    uri_variables: Mapping[str, str] | None = None  # a resource URI's values, when a template matched it
    meta: Mapping[str, Any] | None = None  # extra `_meta` to send upstream (trace context)
    via: Via | None = None  # None: the face sent it directly
    run_id: str | None = None  # the code-mode run: the run's own request and each call it makes
    ask: Ask | None = field(default=None, compare=False)  # how the caller confirms a call (`confirm.py`)

    def fail(
        self,
        outcome: Outcome,
        error: str,
        *,
        duration_s: float = 0.0,
        structured: dict[str, Any] | None = None,
        upstream_error: types.ErrorData | None = None,
    ) -> AnyResult:
        """The result of this request's kind for a request that produced no usable answer."""
        return KINDS[self.kind].failure(
            self.name, outcome, error, server=self.server, target=self.target, duration_s=duration_s,
            structured=structured, upstream_error=upstream_error,
        )  # fmt: skip

    def refuse(self, reason: str) -> AnyResult:
        """Refused by a station rule; the LLM reads why (tool results carry `{"success": false}` too)."""
        return self.fail(Outcome.REFUSED, reason, structured={"success": False, "error": reason})

    def url_candidates(self) -> Sequence[str]:
        """Strings beside the arguments that a URL guard judges: completion context, the values a
        resource URI fills into its template, and the URI itself when it is a web address."""
        values = list(self.context_arguments.values()) if self.context_arguments else []
        if self.uri_variables:
            values.extend(self.uri_variables.values())
        if KINDS[self.kind].uri_target and self.target.split(":", 1)[0].lower() in WEB_SCHEMES:
            values.append(self.target)
        return values


Handler = Callable[[Request], Awaitable[AnyResult]]
"""Answers a request: the route at the bottom, each layer wrapping the one below.

A layer that decides before the call and then hands it on whole returns the inner handler's
awaitable instead of awaiting it (a plain function, not a coroutine): it then adds no frame to the
call's await chain, which every suspension of the call resumes through, several times per call."""


async def answered(result: AnyResult) -> AnyResult:
    """A layer's own answer, as the awaitable a handler returns (a refusal, a not-found)."""
    return result


Layer = Callable[[Handler], Handler]
"""Wraps a handler: `layer(inner)` returns a handler that may answer itself or ask `inner`."""
