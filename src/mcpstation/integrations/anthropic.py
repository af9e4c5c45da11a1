"""The station's tools in an Anthropic Messages tool-use loop, without the SDK.

```python
from mcpstation.integrations import anthropic as station_anthropic

message = client.messages.create(model=..., messages=messages, tools=station_anthropic.tools(station))
messages.append({"role": "assistant", "content": message.content})
messages.append({"role": "user", "content": await station_anthropic.run_tool_uses(station, message)})
```

`run_tool_uses` takes the model's message or its content blocks, as recorded JSON or as the
`anthropic` SDK's objects, runs every `tool_use` block in it (concurrently) and returns one
`tool_result` block per use, in the uses' order. Images go back as image blocks and PDFs as
document blocks; audio and other binary content is described in text. A failed call is a
`tool_result` with `is_error: true`, never an exception. The default caller is the model
(`llm_caller("anthropic")`, role `user`); pass `caller=` to change it.
"""

from __future__ import annotations

from typing import Any

from mcpstation.catalog import anthropic_tools, defer_anthropic_tools
from mcpstation.catalog.compile import Target
from mcpstation.errors import UsageError
from mcpstation.integrations._calls import ArgumentsError, PendingCall, call_all, json_arguments, resolve_caller
from mcpstation.integrations._content import Answer, Media, Text
from mcpstation.integrations._payloads import as_list, as_object, plain
from mcpstation.integrations._provider import incoming
from mcpstation.pipeline import Caller
from mcpstation.station import Station

FRAMEWORK = "anthropic"


def tools(
    station: Station, *, caller: Caller | None = None, defer: bool = False, strict: bool = False
) -> list[dict[str, Any]]:
    """The tools `caller`'s model is handed (its LLM surface), as the Messages API's `tools=`.

    Each schema is compiled for Anthropic (`catalog.compile`); `strict=True` asks for strict tool
    use within the request's budget (20 tools, 24 optional and 16 union-typed properties), tools
    with side effects first; the others are sent plain.

    With tool search on for the caller, that is its pinned tools plus `mcp_search_tools` and
    `mcp_call_tool`. `defer=True` lets the API search instead: every tool the caller may see, the
    non-pinned ones marked `defer_loading`, and Anthropic's tool search tool appended (when tool
    search is off for the caller, every tool is loaded as usual).
    """
    resolved = resolve_caller(caller, FRAMEWORK)
    if not defer:
        return anthropic_tools(station.tools_for(resolved), strict=strict)
    surface = station.requests.surface_for(resolved)
    exported = anthropic_tools(surface.visible, strict=strict)
    if not surface.search:
        return exported
    return defer_anthropic_tools(exported, {tool.name for tool in surface.pinned})


async def run_tool_uses(
    station: Station, content_blocks: object, *, caller: Caller | None = None
) -> list[dict[str, Any]]:
    """Run the `tool_use` blocks of a message (or of a list of content blocks); returns the `tool_result` blocks.

    Raises:
        UsageError: the payload is neither a message nor a list of content blocks, or a
            `tool_use` block has no `id` or `name`.
    """
    payload = plain(content_blocks)
    if isinstance(payload, dict) and "content" in payload:
        payload = payload["content"]
    blocks = [as_object(block, "a content block") for block in as_list(payload, "a message's content blocks")]
    uses = [block for block in blocks if block.get("type") == "tool_use"]
    pending: list[PendingCall] = []
    for use in uses:
        if not isinstance(use.get("id"), str) or not isinstance(use.get("name"), str):
            raise UsageError(f"a tool_use block needs a string 'id' and 'name', got {sorted(use)}")
        try:
            pending.append((use["name"], json_arguments(use.get("input"))))
        except ArgumentsError as exc:
            pending.append((use["name"], exc))
    resolved = resolve_caller(caller, FRAMEWORK)
    answers = await call_all(station, incoming(station, resolved, Target.ANTHROPIC, pending), resolved)
    return [_tool_result(use["id"], answer) for use, answer in zip(uses, answers, strict=True)]


def _tool_result(tool_use_id: str, answer: Answer) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if not answer.ok:
        block["content"] = [{"type": "text", "text": answer.error}]
        block["is_error"] = True
        return block
    # The API rejects an empty text block but takes a result with no content.
    content = [_block(part) for part in answer.parts if not (isinstance(part, Text) and not part.text)]
    if content:
        block["content"] = content
    return block


def _block(part: Text | Media) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if part.is_image:
        return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}
    if part.is_document:
        source = {"type": "base64", "media_type": part.mime_type, "data": part.data}
        return {"type": "document", "source": source, "title": part.filename}
    return {"type": "text", "text": part.summary}
