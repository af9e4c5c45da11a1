"""`OpenAICompatibleSampler`: answers sampling with any OpenAI-compatible `/chat/completions`.

OpenAI, Azure-style proxies, vLLM, llama.cpp, Ollama and LiteLLM all speak this shape. The API
key is read from the environment at each request (so a rotated key needs no restart) and sent
only when set; local endpoints usually need none.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import httpx2

from mcpstation.host.sampling import (
    SamplingAnswer,
    SamplingFailed,
    SamplingMedia,
    SamplingRequest,
    SamplingText,
    SamplingToolResult,
    SamplingToolUse,
    SamplingTurn,
)

logger = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0  # an LLM answer can take a while; the server's own call timeout still applies
_STOP_REASONS = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse", "function_call": "toolUse"}
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


class OpenAICompatibleSampler:
    """A `SamplingHandler` for `POST {base_url}/chat/completions`.

    `http_client` lets the caller share a client (and own its lifetime); without it each request
    opens its own.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self._http = http_client

    def __repr__(self) -> str:
        return f"OpenAICompatibleSampler({self.url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    async def __call__(self, server: str, request: SamplingRequest) -> SamplingAnswer:
        """Raises:
        SamplingFailed: the endpoint could not be reached, refused, or answered something unreadable.
        """
        body = self.request_body(request)
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        try:
            if self._http is not None:
                response = await self._http.post(self.url, json=body, headers=headers, timeout=self.timeout_s)
            else:
                async with httpx2.AsyncClient(timeout=self.timeout_s) as http:
                    response = await http.post(self.url, json=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise SamplingFailed(f"could not reach {self.url}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            hint = f"; is {self.api_key_env} set?" if response.status_code in (401, 403) else ""
            raise SamplingFailed(f"{self.url} answered HTTP {response.status_code}: {response.text[:300]}{hint}")
        try:
            return self.answer_from(response.json())
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise SamplingFailed(f"{self.url} sent a reply that is not a chat completion: {exc}") from exc

    def request_body(self, request: SamplingRequest) -> dict[str, Any]:
        """The JSON body for one request (public so a subclass can add provider fields)."""
        messages: list[dict[str, Any]] = []
        if request.system_prompt:
            messages.append({"role": "system", "content": request.system_prompt})
        for turn in request.messages:
            messages.extend(_messages_for(turn))
        body: dict[str, Any] = {"model": self.model, "messages": messages, "max_tokens": request.max_tokens}
        if request.temperature is not None:
            body["temperature"] = request.temperature
        if request.stop_sequences:
            body["stop"] = list(request.stop_sequences)
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description or "",
                        "parameters": dict(tool.input_schema),
                    },
                }
                for tool in request.tools
            ]
            if request.tool_choice is not None:
                body["tool_choice"] = request.tool_choice
        return body

    def answer_from(self, reply: dict[str, Any]) -> SamplingAnswer:
        choice = reply["choices"][0]
        message = choice["message"]
        content = message.get("content")
        if isinstance(content, list):  # some servers return content parts even for text
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        uses = tuple(
            SamplingToolUse(
                id=call["id"],
                name=call["function"]["name"],
                input=json.loads(call["function"].get("arguments") or "{}"),
            )
            for call in message.get("tool_calls") or ()
        )
        finish = choice.get("finish_reason")
        return SamplingAnswer(
            text=content or "",
            model=str(reply.get("model") or self.model),
            stop_reason=_STOP_REASONS.get(finish, finish) if finish else None,
            tool_uses=uses,
        )


def _messages_for(turn: SamplingTurn) -> list[dict[str, Any]]:
    """One MCP turn as chat messages: tool results become `tool` messages, tool uses `tool_calls`."""
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in turn.parts:
        if isinstance(part, SamplingText):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, SamplingMedia) and part.kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": f"data:{part.mime_type};base64,{part.data}"}})
        elif isinstance(part, SamplingMedia):
            fmt = _AUDIO_FORMATS.get(part.mime_type, part.mime_type.rsplit("/", 1)[-1])
            parts.append({"type": "input_audio", "input_audio": {"data": part.data, "format": fmt}})
        elif isinstance(part, SamplingToolUse):
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": json.dumps(part.input)},
                }
            )
        elif isinstance(part, SamplingToolResult):
            text = f"error: {part.text}" if part.is_error else part.text
            out.append({"role": "tool", "tool_call_id": part.tool_use_id, "content": text})
    if parts or calls:
        only_text = all(p["type"] == "text" for p in parts)
        content: Any = "\n".join(p["text"] for p in parts) if only_text else parts
        message: dict[str, Any] = {"role": turn.role, "content": content if parts else None}
        if calls:
            message["tool_calls"] = calls
        out.append(message)
    return out
