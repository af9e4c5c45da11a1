"""One result type per request kind, each with a typed `outcome`; tool results render as text for an LLM.

Every request comes back as one of these, successful or not: `outcome` says what happened
(`Outcome.OK`, `TOOL_ERROR`, `REFUSED`, ...) and `error` says why in words a person or an LLM
can act on. `raw` is the SDK's own result when the server answered.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Self

import mcp_types as types

from mcpstation.outcomes import Outcome

ContentBlock = types.TextContent | types.ImageContent | types.AudioContent | types.ResourceLink | types.EmbeddedResource
ResourceContents = types.TextResourceContents | types.BlobResourceContents


@dataclass(frozen=True, slots=True)
class Result:
    """What every request's result has, whatever its kind: the typed `outcome`, the `name` the caller
    asked for (a public name or a URI), the owning `server` when it resolved, `error` when it failed,
    how long it took, and the server's own JSON-RPC error when one was the cause.

    `recorded_error` is the error as the station's own records keep it (the audit, traces), when
    `error` carries what only the caller may see (a user's authorization URL); `error_on_record`
    is what they keep."""

    outcome: Outcome
    name: str
    server: str | None
    error: str | None = field(default=None, kw_only=True)
    duration_s: float = field(default=0.0, kw_only=True)
    upstream_error: types.ErrorData | None = field(default=None, kw_only=True, repr=False, compare=False)
    recorded_error: str | None = field(default=None, kw_only=True, repr=False, compare=False)

    NAME_KEY: ClassVar[str] = "name"  # what `to_dict` calls `name` (resources say `uri`)

    @property
    def ok(self) -> bool:
        return self.outcome is Outcome.OK

    @property
    def error_on_record(self) -> str | None:
        """The error as the audit and traces keep it: `error`, less what only the caller may see."""
        return self.error if self.recorded_error is None else self.recorded_error

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of `mcpstation ... --json` and the HTTP API: the common keys and the kind's own."""
        return {
            "ok": self.ok,
            "outcome": str(self.outcome),
            self.NAME_KEY: self.name,
            "server": self.server,
            **self._details(),
            "duration_s": round(self.duration_s, 6),
            "error": self.error,
        }

    def _details(self) -> dict[str, Any]:
        """The keys of this kind's own fields in `to_dict`."""
        return {}

    def content_bytes(self) -> int | None:
        """Bytes of what the answer carries as sent (the size the bounds judge); None when it carries nothing."""
        return None

    def capped(self, max_bytes: int, *, size: int | None = None) -> Self:
        """This result cut to about `max_bytes`; a kind whose content is never cut returns itself."""
        return self

    @classmethod
    def failure(
        cls,
        name: str,
        outcome: Outcome,
        error: str,
        *,
        server: str | None = None,
        target: str | None = None,
        duration_s: float = 0.0,
        structured: dict[str, Any] | None = None,
        upstream_error: types.ErrorData | None = None,
    ) -> Self:
        """A result for a request that produced no usable answer. `target` is the owner's own name of
        the entry (kinds that keep one), `structured` the data a tool result carries to the LLM."""
        return cls(outcome, name, server, error=error, duration_s=duration_s, upstream_error=upstream_error)


@dataclass(frozen=True, slots=True)
class ToolResult(Result):
    """What a tool call produced, successful or not."""

    tool: str | None
    content: tuple[ContentBlock, ...] = ()
    structured: dict[str, Any] | None = None
    raw: types.CallToolResult | None = field(default=None, kw_only=True, repr=False, compare=False)

    @property
    def text(self) -> str:
        """The result as plain text: binary content described by type and size, never dumped."""
        if self.error is not None and not self.content:
            return f"Error: {self.error}"
        parts = [render_block(block) for block in self.content]
        if self.structured is not None and not any(isinstance(b, types.TextContent) for b in self.content):
            parts.append(json.dumps(self.structured, ensure_ascii=False, sort_keys=True))
        return "\n".join(parts)

    def _details(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "text": self.text,
            "content": [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in self.content],
            "structured": self.structured,
        }

    def content_bytes(self) -> int:
        return content_size(self.content)

    def capped(self, max_bytes: int, *, size: int | None = None) -> Self:
        """This result with its content cut to about `max_bytes`, head and tail kept, marked.

        Text is cut in the middle with a marker saying how much went; binary items that do not
        fit are replaced by a marker naming their type and size.
        """
        if size is None:
            size = content_size(self.content)
        if size <= max_bytes:
            return self
        budget = max_bytes
        kept: list[ContentBlock] = []
        for block in self.content:
            block_size = content_size((block,))
            if block_size <= budget:
                kept.append(block)
                budget -= block_size
            elif isinstance(block, types.TextContent) and budget > 256:
                kept.append(types.TextContent(type="text", text=cut_middle(block.text, budget, max_bytes)))
                budget = 0
            else:
                note = f"[{render_block(block)} omitted: over max_result_bytes={max_bytes}]"
                kept.append(types.TextContent(type="text", text=note))
        return replace(self, content=tuple(kept))

    @classmethod
    def failure(
        cls,
        name: str,
        outcome: Outcome,
        error: str,
        *,
        server: str | None = None,
        target: str | None = None,
        duration_s: float = 0.0,
        structured: dict[str, Any] | None = None,
        upstream_error: types.ErrorData | None = None,
    ) -> Self:
        return cls(
            outcome, name, server, target, structured=structured, error=error, duration_s=duration_s,
            upstream_error=upstream_error,
        )  # fmt: skip

    @classmethod
    def from_sdk(cls, raw: types.CallToolResult, *, name: str, server: str, tool: str, duration_s: float) -> ToolResult:
        """Normalize the SDK's `CallToolResult`."""
        content = tuple(raw.content)
        error = None
        if raw.is_error:
            texts = [b.text for b in content if isinstance(b, types.TextContent)]
            error = "\n".join(texts) or f"tool {tool!r} on server {server!r} reported an error"
        return cls(
            Outcome.TOOL_ERROR if raw.is_error else Outcome.OK,
            name,
            server,
            tool,
            content,
            raw.structured_content,
            error=error,
            duration_s=duration_s,
            raw=raw,
        )


@dataclass(frozen=True, slots=True)
class PromptResult(Result):
    """What `prompts/get` produced: the prompt's messages, or why there are none."""

    prompt: str | None
    description: str | None = None
    messages: tuple[types.PromptMessage, ...] = ()
    raw: types.GetPromptResult | None = field(default=None, kw_only=True, repr=False, compare=False)

    @classmethod
    def from_sdk(
        cls, raw: types.GetPromptResult, *, name: str, server: str, prompt: str, duration_s: float
    ) -> PromptResult:
        return cls(
            Outcome.OK, name, server, prompt, raw.description, tuple(raw.messages), duration_s=duration_s, raw=raw
        )

    @classmethod
    def failure(
        cls,
        name: str,
        outcome: Outcome,
        error: str,
        *,
        server: str | None = None,
        target: str | None = None,
        duration_s: float = 0.0,
        structured: dict[str, Any] | None = None,
        upstream_error: types.ErrorData | None = None,
    ) -> Self:
        return cls(outcome, name, server, target, error=error, duration_s=duration_s, upstream_error=upstream_error)

    def _details(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "description": self.description,
            "messages": [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in self.messages],
        }

    def content_bytes(self) -> int:
        return sum(content_size((message.content,)) for message in self.messages)


@dataclass(frozen=True, slots=True)
class ResourceResult(Result):
    """What `resources/read` produced: the resource's contents, or why there are none (`name` is the URI)."""

    contents: tuple[ResourceContents, ...] = ()
    raw: types.ReadResourceResult | None = field(default=None, kw_only=True, repr=False, compare=False)

    NAME_KEY: ClassVar[str] = "uri"

    @property
    def uri(self) -> str:
        return self.name

    @classmethod
    def from_sdk(cls, raw: types.ReadResourceResult, *, uri: str, server: str, duration_s: float) -> ResourceResult:
        return cls(Outcome.OK, uri, server, tuple(raw.contents), duration_s=duration_s, raw=raw)

    def _details(self) -> dict[str, Any]:
        return {"contents": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in self.contents]}

    def content_bytes(self) -> int:
        return resource_contents_size(self.contents)


@dataclass(frozen=True, slots=True)
class CompletionResult(Result):
    """What `completion/complete` produced: suggested values for one argument."""

    values: tuple[str, ...] = ()
    total: int | None = None
    has_more: bool | None = None
    raw: types.CompleteResult | None = field(default=None, kw_only=True, repr=False, compare=False)

    @classmethod
    def from_sdk(cls, raw: types.CompleteResult, *, name: str, server: str, duration_s: float) -> CompletionResult:
        completion = raw.completion
        return cls(
            Outcome.OK,
            name,
            server,
            tuple(completion.values),
            completion.total,
            completion.has_more,
            duration_s=duration_s,
            raw=raw,
        )

    def _details(self) -> dict[str, Any]:
        return {"values": list(self.values), "total": self.total, "has_more": self.has_more}


@dataclass(frozen=True, slots=True)
class SubscriptionResult(Result):
    """What `resources/subscribe` or `resources/unsubscribe` produced (`name` is the URI)."""

    NAME_KEY: ClassVar[str] = "uri"

    @property
    def uri(self) -> str:
        return self.name


AnyResult = Result
"""Any request's result (each kind's is a `Result` subclass); kept as the name layers and faces use."""


def render_block(block: ContentBlock) -> str:
    """One content item as text for an LLM."""
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent):
        return f"[image: {block.mime_type}, {_human_size(_decoded_size(block.data))}]"
    if isinstance(block, types.AudioContent):
        return f"[audio: {block.mime_type}, {_human_size(_decoded_size(block.data))}]"
    if isinstance(block, types.ResourceLink):
        described = f" - {block.description}" if block.description else ""
        mime = f", {block.mime_type}" if block.mime_type else ""
        return f"[resource link: {block.name} <{block.uri}>{mime}]{described}"
    resource = block.resource
    if isinstance(resource, types.TextResourceContents):
        return f"[resource <{resource.uri}>]\n{resource.text}"
    mime = resource.mime_type or "application/octet-stream"
    return f"[resource <{resource.uri}>: {mime}, {_human_size(_decoded_size(resource.blob))}]"


def content_size(content: Sequence[ContentBlock]) -> int:
    """Bytes the content occupies as sent: text in UTF-8, binary as its base64 text."""
    total = 0
    for block in content:
        if isinstance(block, types.TextContent):
            total += len(block.text.encode())
        elif isinstance(block, types.ImageContent | types.AudioContent):
            total += len(block.data)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            total += len(resource.text.encode() if isinstance(resource, types.TextResourceContents) else resource.blob)
        else:
            total += len(block.uri) + len(block.name) + len(block.description or "")
    return total


def resource_contents_size(contents: Sequence[ResourceContents]) -> int:
    """Bytes of resource contents as sent: text in UTF-8, blobs as their base64 text."""
    return sum(
        len(item.text.encode()) if isinstance(item, types.TextResourceContents) else len(item.blob) for item in contents
    )


def cut_middle(text: str, budget: int, max_bytes: int) -> str:
    """Keep the head and tail of `text` within about `budget` bytes, with a marker between."""
    data = text.encode()
    half = max(0, budget // 2 - 64)
    cut = len(data) - 2 * half
    marker = f"\n[... {cut} bytes cut by mcpstation (max_result_bytes={max_bytes}) ...]\n"
    return data[:half].decode(errors="ignore") + marker + data[len(data) - half :].decode(errors="ignore")


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
