"""The station's tools in an OpenAI tool-calling loop, Chat Completions or Responses, without the SDK.

```python
from mcpstation.integrations import openai as station_openai

completion = client.chat.completions.create(model=..., messages=messages, tools=station_openai.tools(station))
messages.append(completion.choices[0].message)
messages += await station_openai.run_tool_calls(station, completion)

response = client.responses.create(model=..., input=items, tools=station_openai.tools(station, api="responses"))
items += response.output
items += await station_openai.run_tool_calls(station, response)
```

`run_tool_calls` takes what the model said last: a chat completion (its first choice), its
assistant message, a Responses response or its `output` items, as recorded JSON or as the
`openai` SDK's objects. It answers every function call in it (concurrently; answers in the
calls' order) and returns the items to append. A failed call is answered, never raised: its
text starts with `Error:`. Pass the latest answer only, not the whole history: every function
call in what it is given is run.

Media: Responses function outputs carry images and PDFs themselves. A Chat Completions tool
message carries text only, so there the media are described in it and, with `attach_media` (the
default), also sent in one `user` message after the tool messages (images, wav/mp3 audio, PDFs).
The default caller is the model (`llm_caller("openai")`, role `user`); pass `caller=` to change it.
"""

from __future__ import annotations

from typing import Any, Literal

from mcpstation.catalog import defer_openai_tools, openai_tools, sanitize
from mcpstation.catalog.compile import Target
from mcpstation.errors import UsageError
from mcpstation.integrations._calls import ArgumentsError, PendingCall, call_all, json_arguments, resolve_caller
from mcpstation.integrations._content import Answer, Media, MediaKind, Text
from mcpstation.integrations._payloads import as_list, as_object, plain
from mcpstation.integrations._provider import incoming
from mcpstation.pipeline import Caller
from mcpstation.station import Station

Api = Literal["chat", "responses"]
FRAMEWORK = "openai"
AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def tools(
    station: Station, *, caller: Caller | None = None, api: Api = "chat", defer: bool = False, strict: bool = False
) -> list[dict[str, Any]]:
    """The tools `caller`'s model is handed (its LLM surface), as `tools=` for Chat Completions
    (`api="chat"`) or Responses.

    Each schema is compiled for OpenAI (`catalog.compile`); `strict=True` asks for Structured
    Outputs, per tool where strict mode can express it (`"strict": true` on that tool). The nulls
    strict mode makes the model send for optional arguments are removed by `run_tool_calls`.

    With tool search on for the caller, that is its pinned tools plus `mcp_search_tools` and
    `mcp_call_tool`. `defer=True` (Responses only) lets the API search instead: every tool the caller
    may see, the non-pinned ones marked `defer_loading` in one namespace per server, and
    `{"type": "tool_search"}` appended (when tool search is off for the caller, every tool is loaded).

    Raises:
        UsageError: `api` is neither "chat" nor "responses", or `defer` is asked of chat.
    """
    if api not in ("chat", "responses"):
        raise UsageError(f"api must be 'chat' or 'responses', got {api!r}")
    if defer and api != "responses":
        raise UsageError("deferred loading exists only in the Responses API: pass api='responses' with defer=True")
    resolved = resolve_caller(caller, FRAMEWORK)
    surface = station.requests.surface_for(resolved)
    exported = openai_tools(surface.visible if defer else surface.tools, strict=strict)
    if api == "chat":
        return exported
    flat = [{"type": "function", **tool["function"]} for tool in exported]  # Responses takes them flat
    if not defer or not surface.search:
        return flat
    namespaces = {tool.name: sanitize(tool.server) for tool in surface.visible}
    return defer_openai_tools(flat, {tool.name for tool in surface.pinned}, namespaces=namespaces)


async def run_tool_calls(
    station: Station, message_or_response: object, *, caller: Caller | None = None, attach_media: bool = True
) -> list[dict[str, Any]]:
    """Run the function calls in a model's answer; returns the messages (chat) or items (Responses) to append.

    Raises:
        UsageError: the payload is none of the shapes the module docstring lists.
    """
    resolved = resolve_caller(caller, FRAMEWORK)
    payload = plain(message_or_response)
    items = _responses_items(payload)
    if items is not None:
        return await _run_responses(station, items, resolved)
    message = _chat_message(payload)
    return await _run_chat(station, message, resolved, attach_media=attach_media)


# -- reading the payload ----------------------------------------------------------------------------


def _responses_items(payload: object) -> list[Any] | None:
    """The output items when `payload` is a Responses response, its output, or one of its items."""
    if isinstance(payload, dict):
        if "output" in payload and "choices" not in payload:
            return as_list(payload["output"], "a Responses response's 'output'")
        if payload.get("type") == "function_call":
            return [payload]
        return None
    if isinstance(payload, list) and any(isinstance(item, dict) and "call_id" in item for item in payload):
        return payload
    return None


def _chat_message(payload: object) -> dict[str, Any]:
    """The assistant message of a chat completion, or the message itself, or a bare list of tool calls."""
    if isinstance(payload, list):
        return {"role": "assistant", "tool_calls": payload}
    if isinstance(payload, dict) and "choices" in payload:
        choices = as_list(payload["choices"], "a chat completion's 'choices'")
        if not choices:
            return {"role": "assistant", "tool_calls": []}
        return as_object(as_object(choices[0], "a chat completion's choice").get("message"), "a choice's 'message'")
    if isinstance(payload, dict) and ("tool_calls" in payload or payload.get("role") == "assistant"):
        return payload
    raise UsageError(
        "run_tool_calls takes a chat completion, its assistant message, a Responses response or its output "
        f"items; got {type(payload).__name__} with keys {sorted(payload) if isinstance(payload, dict) else '-'}"
    )


def _call_id(call: dict[str, Any], key: str, what: str) -> str:
    value = call.get(key)
    if not isinstance(value, str) or not value:
        raise UsageError(f"{what} needs a string {key!r}, got {sorted(call)}")
    return value


def _pending(name: object, raw_arguments: object, where: str) -> PendingCall:
    if not isinstance(name, str):
        raise UsageError(f"{where} has no function name")
    try:
        return name, json_arguments(raw_arguments)
    except ArgumentsError as exc:
        return name, exc


# -- Chat Completions -------------------------------------------------------------------------------


async def _run_chat(
    station: Station, message: dict[str, Any], caller: Caller, *, attach_media: bool
) -> list[dict[str, Any]]:
    calls = [
        as_object(call, "a tool call")
        for call in as_list(message.get("tool_calls") or [], "an assistant message's 'tool_calls'")
    ]
    functions = [call for call in calls if call.get("type", "function") == "function"]
    ids = [_call_id(call, "id", "a tool call") for call in functions]
    pending: list[PendingCall] = []
    for call_id, call in zip(ids, functions, strict=True):
        function = as_object(call.get("function"), f"tool call {call_id!r}'s 'function'")
        pending.append(_pending(function.get("name"), function.get("arguments"), f"tool call {call_id!r}"))
    answers = await call_all(station, incoming(station, caller, Target.OPENAI_STRICT, pending), caller)
    messages: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": call_id, "content": _chat_text(answer)}
        for call_id, answer in zip(ids, answers, strict=True)
    ]
    media_parts: list[dict[str, Any]] = []
    for call_id, answer in zip(ids, answers, strict=True):
        parts = [part for media in answer.media if (part := _chat_media(media)) is not None]
        if parts:
            media_parts.append({"type": "text", "text": f"Media returned by tool call {call_id} ({answer.name}):"})
            media_parts.extend(parts)
    if attach_media and media_parts:
        messages.append({"role": "user", "content": media_parts})
    return messages


def _chat_text(answer: Answer) -> str:
    return answer.text if answer.ok else f"Error: {answer.error}"


def _chat_media(media: Media) -> dict[str, Any] | None:
    if media.is_image:
        return {"type": "image_url", "image_url": {"url": media.data_url}}
    if media.kind is MediaKind.AUDIO and media.mime_type in AUDIO_FORMATS:
        return {"type": "input_audio", "input_audio": {"data": media.data, "format": AUDIO_FORMATS[media.mime_type]}}
    if media.is_document:
        return {"type": "file", "file": {"file_data": media.data_url, "filename": media.filename}}
    return None


# -- Responses --------------------------------------------------------------------------------------


async def _run_responses(station: Station, items: list[Any], caller: Caller) -> list[dict[str, Any]]:
    calls = [item for item in items if isinstance(item, dict) and item.get("type") == "function_call"]
    ids = [_call_id(call, "call_id", "a function_call item") for call in calls]
    pending = [
        _pending(call.get("name"), call.get("arguments"), f"function call {call_id!r}")
        for call_id, call in zip(ids, calls, strict=True)
    ]
    answers = await call_all(station, incoming(station, caller, Target.OPENAI_STRICT, pending), caller)
    return [
        {"type": "function_call_output", "call_id": call_id, "output": _responses_output(answer)}
        for call_id, answer in zip(ids, answers, strict=True)
    ]


def _responses_output(answer: Answer) -> str | list[dict[str, Any]]:
    if not answer.ok:
        return f"Error: {answer.error}"
    if not any(_responses_media(media) for media in answer.media):
        return answer.text
    output: list[dict[str, Any]] = []
    for part in answer.parts:
        if isinstance(part, Text):
            output.append({"type": "input_text", "text": part.text})
        else:
            output.append(_responses_media(part) or {"type": "input_text", "text": part.summary})
    return output


def _responses_media(media: Media) -> dict[str, Any] | None:
    if media.is_image:
        return {"type": "input_image", "image_url": media.data_url}
    if media.is_document:
        return {"type": "input_file", "file_data": media.data_url, "filename": media.filename}
    return None
