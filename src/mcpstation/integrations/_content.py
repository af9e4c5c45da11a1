"""`Answer`: one tool call's result in the parts every adapter renders, whatever its framework.

The station's `ToolResult` carries MCP content blocks. Frameworks and providers take a few kinds
of thing: text, images, sometimes audio, sometimes documents. An `Answer` sorts the blocks into
`Text` (text, resource links and embedded text resources, rendered as `ToolResult.text` renders
them) and `Media` (images, audio and embedded binary resources, base64 as the server sent them,
each with the words to say instead where a provider cannot carry it). Each adapter maps the
parts to its framework's types and the error to its framework's way of reporting one.
"""

from __future__ import annotations

import enum
import json
import mimetypes
from dataclasses import dataclass
from urllib.parse import urlsplit

import mcp_types as types

from mcpstation.catalog import ContentBlock, ToolResult, render_block

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types OpenAI, Anthropic and Gemini all read; other images are described in text."""

DOCUMENT_TYPES = frozenset({"application/pdf"})
"""The binary documents providers read; other binary resources are described in text."""


class MediaKind(enum.StrEnum):
    IMAGE = "image"
    AUDIO = "audio"
    FILE = "file"  # an embedded binary resource that is neither image nor audio (a PDF, an archive, ...)


@dataclass(frozen=True, slots=True)
class Text:
    text: str


@dataclass(frozen=True, slots=True)
class Media:
    """Binary content: `data` is base64; `summary` is what to show where the media cannot go."""

    kind: MediaKind
    mime_type: str
    data: str
    summary: str
    uri: str | None = None

    @property
    def is_image(self) -> bool:
        """An image in a type every provider reads."""
        return self.kind is MediaKind.IMAGE and self.mime_type in IMAGE_TYPES

    @property
    def is_document(self) -> bool:
        """A document (PDF) providers read as a file."""
        return self.mime_type in DOCUMENT_TYPES

    @property
    def data_url(self) -> str:
        return f"data:{self.mime_type};base64,{self.data}"

    @property
    def filename(self) -> str:
        """A file name for providers that want one: the URI's last segment, else a generic one."""
        tail = urlsplit(self.uri).path.rsplit("/", 1)[-1] if self.uri else ""
        if tail:
            return tail
        extension = mimetypes.guess_extension(self.mime_type) or ""
        return f"{self.kind}{extension}"


Part = Text | Media


@dataclass(frozen=True, slots=True)
class Answer:
    """What one tool call gave the model: `parts` when it worked, `error` when it did not.

    `result` is the station's own result; None when the call never reached the station (the
    model's arguments were not a JSON object).
    """

    name: str
    parts: tuple[Part, ...] = ()
    error: str | None = None
    result: ToolResult | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def media(self) -> tuple[Media, ...]:
        return tuple(part for part in self.parts if isinstance(part, Media))

    @property
    def text(self) -> str:
        """Every part as text, media by its summary: for a face that takes text only."""
        return "\n".join(part.text if isinstance(part, Text) else part.summary for part in self.parts)

    @classmethod
    def of(cls, result: ToolResult) -> Answer:
        if not result.ok:
            error = result.error or result.text or f"tool {result.name!r} failed ({result.outcome})"
            return cls(result.name, error=error, result=result)
        parts = [_part(block) for block in result.content]
        if result.structured is not None and not any(isinstance(b, types.TextContent) for b in result.content):
            parts.append(Text(json.dumps(result.structured, ensure_ascii=False, sort_keys=True)))
        return cls(result.name, tuple(parts), result=result)

    @classmethod
    def bad_arguments(cls, name: str, problem: str) -> Answer:
        """A call the station never saw: the model's arguments could not be read."""
        return cls(name, error=f"the arguments for tool {name!r} {problem}; send a JSON object")


def _part(block: ContentBlock) -> Part:
    if isinstance(block, types.ImageContent):
        return Media(MediaKind.IMAGE, block.mime_type, block.data, render_block(block))
    if isinstance(block, types.AudioContent):
        return Media(MediaKind.AUDIO, block.mime_type, block.data, render_block(block))
    if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.BlobResourceContents):
        resource = block.resource
        mime = resource.mime_type or "application/octet-stream"
        return Media(_kind_of(mime), mime, resource.blob, render_block(block), uri=str(resource.uri))
    return Text(render_block(block))  # text, resource links, embedded text resources


def _kind_of(mime_type: str) -> MediaKind:
    major = mime_type.split("/", 1)[0]
    if major == "image":
        return MediaKind.IMAGE
    if major == "audio":
        return MediaKind.AUDIO
    return MediaKind.FILE
