"""Sampling: a server asks the host's LLM to write something (`sampling/createMessage`).

The host application answers with a `SamplingHandler`; the station enforces its policy first:

    request -> tools allowed? -> max_tokens capped? -> rate limit per server -> handler

A refusal is an `ErrorData` with a message saying what was refused and which setting decides,
which the SDK sends back to the server (legacy: as the JSON-RPC error; modern: aborting the
input-required round). Our frozen dataclasses keep the handler free of SDK types; the two
`_from_sdk` / `_to_sdk` functions below are the only place that converts.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import mcp_types as types
from mcp.client import ClientRequestContext
from mcp.client.session import SamplingFnT

from mcpstation.errors import StationError
from mcpstation.host._allowances import SamplingPolicy

logger = logging.getLogger(__name__)

Role = Literal["user", "assistant"]
ToolChoiceMode = Literal["auto", "required", "none"]

# JSON-RPC codes of our refusals: the request is valid, the host will not serve it.
REFUSED = types.INVALID_REQUEST
FAILED = types.INTERNAL_ERROR


# -- what the handler sees and returns --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SamplingText:
    text: str


@dataclass(frozen=True, slots=True)
class SamplingMedia:
    """An image or audio clip, base64 as the server sent it."""

    kind: Literal["image", "audio"]
    data: str
    mime_type: str


@dataclass(frozen=True, slots=True)
class SamplingToolUse:
    """The model asks to call one of the request's tools (an assistant part)."""

    id: str
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SamplingToolResult:
    """What a tool call returned, reported back by the server (a user part)."""

    tool_use_id: str
    text: str
    is_error: bool = False


SamplingPart = SamplingText | SamplingMedia | SamplingToolUse | SamplingToolResult


@dataclass(frozen=True, slots=True)
class SamplingTurn:
    role: Role
    parts: tuple[SamplingPart, ...]

    @property
    def text(self) -> str:
        """The turn's text parts joined; what a text-only model reads."""
        return "\n".join(part.text for part in self.parts if isinstance(part, SamplingText))


@dataclass(frozen=True, slots=True)
class SamplingTool:
    """A tool the server lets the model call during this sampling (2025-11-25+)."""

    name: str
    description: str | None
    input_schema: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SamplingRequest:
    """One sampling request, after policy (so `max_tokens` is already capped)."""

    messages: tuple[SamplingTurn, ...]
    max_tokens: int
    system_prompt: str | None = None
    temperature: float | None = None
    stop_sequences: tuple[str, ...] = ()
    model_hints: tuple[str, ...] = ()
    tools: tuple[SamplingTool, ...] = ()
    tool_choice: ToolChoiceMode | None = None
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class SamplingAnswer:
    """The host LLM's reply. `stop_reason` uses MCP's words: endTurn, stopSequence, maxTokens, toolUse."""

    text: str
    model: str
    stop_reason: str | None = "endTurn"
    tool_uses: tuple[SamplingToolUse, ...] = ()


class SamplingHandler(Protocol):
    """The host application's LLM: `async (server, request) -> answer`.

    Raise to fail the request; the server then gets an error naming the exception.
    """

    async def __call__(self, server: str, request: SamplingRequest, /) -> SamplingAnswer: ...


class SamplingFailed(StationError):
    """The host LLM could not answer a sampling request (endpoint down, bad reply, ...)."""


# -- policy ---------------------------------------------------------------------------------------


class _TokenBucket:
    """`rate_per_minute` requests a minute, bursts up to the same number (at least one)."""

    def __init__(self, rate_per_minute: float, clock: Callable[[], float]) -> None:
        self._rate_per_s = rate_per_minute / 60.0
        self._capacity = max(1.0, rate_per_minute)
        self._tokens = self._capacity
        self._clock = clock
        self._last = clock()

    def take(self) -> float:
        """Take one token; returns 0 on success, else the seconds until one is available."""
        now = self._clock()
        self._tokens = min(self._capacity, self._tokens + (now - self._last) * self._rate_per_s)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return 0.0
        return (1.0 - self._tokens) / self._rate_per_s


@dataclass
class SamplingGate:
    """Applies a `SamplingPolicy` and calls the handler; one instance serves every server."""

    handler: SamplingHandler
    policy: SamplingPolicy = field(default_factory=SamplingPolicy)
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, _TokenBucket] = field(default_factory=dict, init=False, repr=False)

    def callback_for(self, server: str) -> SamplingFnT:
        """The SDK `sampling_callback` for `server` (registering it declares the capability)."""

        async def sampling_callback(
            context: ClientRequestContext, params: types.CreateMessageRequestParams
        ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
            return await self.sample(server, params)

        return sampling_callback

    async def sample(
        self, server: str, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        policy = self.policy
        wants_tools = bool(params.tools) or params.tool_choice is not None
        if wants_tools and not policy.allow_tools:
            return self._refuse(
                server,
                f"sampling with tools is not allowed for server {server!r}; "
                "set [host.sampling] tool_support = true to allow it",
            )
        max_tokens = params.max_tokens
        if max_tokens > policy.max_tokens:
            if policy.over_max_tokens == "refuse":
                return self._refuse(
                    server,
                    f"sampling asked for {max_tokens} tokens, over the host's cap of {policy.max_tokens} "
                    f"(server {server!r}); ask for fewer, or raise [host.sampling] max_tokens",
                )
            logger.info("server %r: sampling max_tokens %d clipped to %d", server, max_tokens, policy.max_tokens)
            max_tokens = policy.max_tokens
        bucket = self._buckets.get(server)
        if bucket is None:
            bucket = self._buckets[server] = _TokenBucket(policy.requests_per_minute, self.clock)
        wait_s = bucket.take()
        if wait_s > 0:
            return self._refuse(
                server,
                f"sampling rate limit for server {server!r} reached ({policy.requests_per_minute:g} requests "
                f"a minute); retry in {wait_s:.1f} s",
            )
        request = _from_sdk(params, max_tokens)
        try:
            answer = await self.handler(server, request)
        except Exception as exc:  # boundary: the host application's LLM code; the server gets an error, not a crash
            logger.exception("server %r: the sampling handler failed", server)
            return types.ErrorData(code=FAILED, message=f"the host LLM could not answer: {exc}")
        logger.info("server %r: sampled %s (%s)", server, answer.model, answer.stop_reason)
        return _to_sdk(answer, with_tools=wants_tools)

    def _refuse(self, server: str, message: str) -> types.ErrorData:
        logger.warning("refused sampling: %s", message)
        return types.ErrorData(code=REFUSED, message=message)


# -- the one seam between SDK types and ours ------------------------------------------------------------


def _from_sdk(params: types.CreateMessageRequestParams, max_tokens: int) -> SamplingRequest:
    hints: tuple[str, ...] = ()
    if params.model_preferences is not None and params.model_preferences.hints:
        hints = tuple(hint.name for hint in params.model_preferences.hints if hint.name)
    return SamplingRequest(
        messages=tuple(
            SamplingTurn(role=message.role, parts=tuple(_part_from_sdk(block) for block in message.content_as_list))
            for message in params.messages
        ),
        max_tokens=max_tokens,
        system_prompt=params.system_prompt,
        temperature=params.temperature,
        stop_sequences=tuple(params.stop_sequences or ()),
        model_hints=hints,
        tools=tuple(
            SamplingTool(name=tool.name, description=tool.description, input_schema=tool.input_schema)
            for tool in params.tools or ()
        ),
        tool_choice=params.tool_choice.mode if params.tool_choice is not None else None,
        metadata=params.metadata,
    )


def _part_from_sdk(block: types.SamplingMessageContentBlock) -> SamplingPart:
    if isinstance(block, types.TextContent):
        return SamplingText(block.text)
    if isinstance(block, types.ImageContent):
        return SamplingMedia("image", block.data, block.mime_type)
    if isinstance(block, types.AudioContent):
        return SamplingMedia("audio", block.data, block.mime_type)
    if isinstance(block, types.ToolUseContent):
        return SamplingToolUse(id=block.id, name=block.name, input=block.input)
    texts = [item.text for item in block.content if isinstance(item, types.TextContent)]
    if block.structured_content is not None and not texts:
        texts.append(json.dumps(block.structured_content))
    return SamplingToolResult(tool_use_id=block.tool_use_id, text="\n".join(texts), is_error=bool(block.is_error))


def _to_sdk(
    answer: SamplingAnswer, *, with_tools: bool
) -> types.CreateMessageResult | types.CreateMessageResultWithTools:
    text = types.TextContent(type="text", text=answer.text)
    if not with_tools:
        return types.CreateMessageResult(
            role="assistant", content=text, model=answer.model, stop_reason=answer.stop_reason
        )
    content: list[types.SamplingMessageContentBlock] = [text] if answer.text else []
    content += [types.ToolUseContent(id=use.id, name=use.name, input=dict(use.input)) for use in answer.tool_uses]
    stop_reason = "toolUse" if answer.tool_uses else answer.stop_reason
    return types.CreateMessageResultWithTools(
        role="assistant", content=content or [text], model=answer.model, stop_reason=stop_reason
    )
