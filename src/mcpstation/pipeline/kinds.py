"""The request kinds, in one table: what each part of the pipeline needs to know about a kind.

Resolution builds a `Request` of a kind; every other part reads that kind's row here instead of
branching on it: the result type (failures of every layer are built from it), the noun of its
"not found" message (visibility), whether tool role globs apply to its target (visibility),
whether its arguments are checked against an input schema (argument check), whether its target is
a URI (URL guard), whether its content is cut to `max_result_bytes` or only held to the hard cap
(bounds), and how it goes upstream and comes back (route). See docs/architecture.md, "Adding a request kind".

A kind the station answers itself (no upstream server: code mode) has no `operation`; its handler
is given to the `Router` at assembly (`answers`), and it passes every layer like any other kind.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types

from mcpstation.catalog import CompletionResult, PromptResult, ResourceResult, Result, SubscriptionResult, ToolResult
from mcpstation.connection.operations import (
    CallTool,
    Complete,
    GetPrompt,
    Operation,
    ReadResource,
    Subscribe,
    Unsubscribe,
)
from mcpstation.outcomes import Outcome


class RequestKind(enum.StrEnum):
    """Every kind of request a caller can send, by its MCP method (or the station's own, for a kind it answers)."""

    CALL_TOOL = "tools/call"
    GET_PROMPT = "prompts/get"
    READ_RESOURCE = "resources/read"
    SUBSCRIBE = "resources/subscribe"
    UNSUBSCRIBE = "resources/unsubscribe"
    COMPLETE = "completion/complete"
    RUN_CODE = "mcpstation/run_code"  # code mode: a script whose tool calls come back in as tools/call


CompletionRef = types.PromptReference | types.ResourceTemplateReference


class Addressed(Protocol):
    """What a kind reads of a request to send it upstream and to shape the answer (`Request` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def server(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def arguments(self) -> Mapping[str, Any]: ...
    @property
    def ref(self) -> CompletionRef | None: ...
    @property
    def context_arguments(self) -> Mapping[str, str] | None: ...


@dataclass(frozen=True, slots=True)
class Upstream:
    """How a kind goes to its server and comes back."""

    operation: Callable[[Addressed], Operation[Any]]  # what the owner's connection sends
    answer: Callable[[Addressed, Any, float], Result]  # the SDK's answer (and the time it took) as the kind's result


@dataclass(frozen=True, slots=True)
class Kind:
    """One row of the table: a request kind and how each part of the pipeline treats it."""

    kind: RequestKind
    result: type[Result]  # every result of this kind, failures included, is one of these
    noun: str  # "no {noun} 'x'." when the caller may not see it or nobody has it
    upstream: Upstream | None  # None: the station answers it (a handler given to the `Router`)
    cut: bool = False  # content over max_result_bytes is cut; else only the hard cap applies
    roles_by_target: bool = False  # a server's `tool_roles` globs apply to the target, not only its `min_role`
    checks_arguments: bool = False  # the arguments are checked against the target's input schema (arguments.py)
    uri_target: bool = False  # the target is a URI, which the URL guard judges when it is a web address
    every_caller: bool = False  # any caller may ask; what the request reaches is judged as its own requests

    def failure(
        self,
        name: str,
        outcome: Outcome,
        error: str,
        *,
        server: str | None,
        target: str | None,
        duration_s: float = 0.0,
        structured: dict[str, Any] | None = None,
        upstream_error: types.ErrorData | None = None,
    ) -> Result:
        """A failed result of this kind, for requests that may not even have resolved."""
        return self.result.failure(
            name, outcome, error, server=server, target=target, duration_s=duration_s, structured=structured,
            upstream_error=upstream_error,
        )  # fmt: skip

    def not_found(self, name: str, suggestions: list[str] | None = None) -> str:
        """`no tool 'x'. Did you mean 'y'?`: the same words whether the entry is hidden or absent."""
        hint = f" Did you mean {', '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        return f"no {self.noun} {name!r}.{hint}"


def _text_arguments(request: Addressed) -> dict[str, str]:
    """Prompt and completion arguments are strings on the wire."""
    return {key: str(value) for key, value in request.arguments.items()}


def _completion(request: Addressed) -> Complete:
    assert request.ref is not None, "a completion request carries its reference"
    return Complete(request.ref, _text_arguments(request), request.context_arguments)


def _subscription(request: Addressed, raw: Any, duration_s: float) -> SubscriptionResult:
    return SubscriptionResult(Outcome.OK, request.target, request.server, duration_s=duration_s)


_RESOURCE_NOUN = "resource or template matching"

KINDS: Mapping[RequestKind, Kind] = {
    row.kind: row
    for row in (
        Kind(
            RequestKind.CALL_TOOL,
            ToolResult,
            "tool",
            Upstream(
                lambda r: CallTool(r.target, r.arguments),
                lambda r, raw, s: ToolResult.from_sdk(raw, name=r.name, server=r.server, tool=r.target, duration_s=s),
            ),
            cut=True,
            roles_by_target=True,
            checks_arguments=True,
        ),
        Kind(
            RequestKind.GET_PROMPT,
            PromptResult,
            "prompt",
            Upstream(
                lambda r: GetPrompt(r.target, _text_arguments(r)),
                lambda r, raw, s: PromptResult.from_sdk(
                    raw, name=r.name, server=r.server, prompt=r.target, duration_s=s
                ),
            ),
        ),
        Kind(
            RequestKind.READ_RESOURCE,
            ResourceResult,
            _RESOURCE_NOUN,
            Upstream(
                lambda r: ReadResource(r.target),
                lambda r, raw, s: ResourceResult.from_sdk(raw, uri=r.target, server=r.server, duration_s=s),
            ),
            uri_target=True,
        ),
        Kind(
            RequestKind.SUBSCRIBE,
            SubscriptionResult,
            _RESOURCE_NOUN,
            Upstream(lambda r: Subscribe(r.target), _subscription),
            uri_target=True,
        ),
        Kind(
            RequestKind.UNSUBSCRIBE,
            SubscriptionResult,
            _RESOURCE_NOUN,
            Upstream(lambda r: Unsubscribe(r.target), _subscription),
            uri_target=True,
        ),
        Kind(
            RequestKind.COMPLETE,
            CompletionResult,
            "prompt or resource template",
            Upstream(
                _completion,
                lambda r, raw, s: CompletionResult.from_sdk(raw, name=r.name, server=r.server, duration_s=s),
            ),
        ),
        Kind(RequestKind.RUN_CODE, ToolResult, "tool", None, cut=True, every_caller=True),
    )
}
"""Every request kind's row; a test checks that each `RequestKind` has one."""
