"""The station's tools in a Gemini function-calling loop (google-genai, or the REST API), without the SDK.

```python
from google.genai import types
from mcpstation.integrations import gemini as station_gemini

config = types.GenerateContentConfig(tools=station_gemini.tools(station))
response = client.models.generate_content(model=..., contents=contents, config=config)
contents.append(response.candidates[0].content)
contents.append(types.Content(role="user", parts=await station_gemini.run_function_calls(station, response)))
```

`tools()` gives one `Tool` of function declarations, each schema compiled for Gemini
(`catalog.compile`): `parameters`, the OpenAPI subset every Gemini model takes, or with
`json_schema=True` `parametersJsonSchema` (Gemini 2.5 and later), which keeps more (maps, tuples,
recursion). Names are made valid for Gemini and mapped back. `run_function_calls` takes a
response, a `Content`, its parts or one part, as recorded JSON (either field-name style) or as
google-genai's objects, runs every function call in it (concurrently) and returns one
`functionResponse` part per call, in the calls' order: `{"output": ...}` (the structured result,
else the text) when it worked, `{"error": ...}` when it did not (never an exception). Media are
described in the text. The default caller is the model (`llm_caller("gemini")`, role `user`);
pass `caller=` to change it. The SDK is never imported: the `gemini` extra installs it for its types.
"""

from __future__ import annotations

from typing import Any

from mcpstation.catalog import gemini_declarations
from mcpstation.catalog.compile import Target
from mcpstation.errors import UsageError
from mcpstation.integrations._calls import ArgumentsError, PendingCall, call_all, json_arguments, resolve_caller
from mcpstation.integrations._content import Answer
from mcpstation.integrations._payloads import as_list, as_object, plain
from mcpstation.integrations._provider import incoming
from mcpstation.pipeline import Caller
from mcpstation.station import Station

FRAMEWORK = "gemini"


def tools(station: Station, *, caller: Caller | None = None, json_schema: bool = False) -> list[dict[str, Any]]:
    """`[{"functionDeclarations": [...]}]`: the tools `caller`'s model is handed (its LLM surface),
    for `GenerateContentConfig(tools=...)` or a REST request's `tools`."""
    resolved = resolve_caller(caller, FRAMEWORK)
    return [{"functionDeclarations": gemini_declarations(station.tools_for(resolved), json_schema=json_schema)}]


async def run_function_calls(
    station: Station, response_or_parts: object, *, caller: Caller | None = None
) -> list[dict[str, Any]]:
    """Run the function calls in a model's answer; returns the `functionResponse` parts to send back.

    Raises:
        UsageError: the payload is none of the shapes the module docstring lists, or a call has no name.
    """
    calls = [call for part in _parts(plain(response_or_parts)) if (call := _function_call(part)) is not None]
    pending: list[PendingCall] = []
    for call in calls:
        name = call.get("name")
        if not isinstance(name, str) or not name:
            raise UsageError(f"a function call needs a string 'name', got {sorted(call)}")
        try:
            pending.append((name, json_arguments(call.get("args"))))
        except ArgumentsError as exc:
            pending.append((name, exc))
    resolved = resolve_caller(caller, FRAMEWORK)
    answers = await call_all(station, incoming(station, resolved, Target.GEMINI, pending), resolved)
    return [_response(call, answer) for call, answer in zip(calls, answers, strict=True)]


def _parts(payload: object) -> list[Any]:
    """The parts of a response (its first candidate), of a Content, a list of parts, or one part."""
    if isinstance(payload, dict) and "candidates" in payload:
        candidates = as_list(payload["candidates"], "a response's 'candidates'")
        if not candidates:
            return []
        content = as_object(as_object(candidates[0], "a candidate").get("content") or {}, "a candidate's 'content'")
        return as_list(content.get("parts") or [], "a content's 'parts'")
    if isinstance(payload, dict) and "parts" in payload:
        return as_list(payload["parts"], "a content's 'parts'")
    if isinstance(payload, dict) and _call_of(payload) is not None:
        return [payload]
    if isinstance(payload, list):
        return payload
    raise UsageError(
        "run_function_calls takes a response, a Content, its parts or one part; "
        f"got {type(payload).__name__} with keys {sorted(payload) if isinstance(payload, dict) else '-'}"
    )


def _call_of(part: dict[str, Any]) -> Any:
    return part.get("functionCall", part.get("function_call"))


def _function_call(part: object) -> dict[str, Any] | None:
    call = _call_of(as_object(part, "a part"))
    return None if call is None else as_object(call, "a part's function call")


def _response(call: dict[str, Any], answer: Answer) -> dict[str, Any]:
    body: dict[str, Any] = {"name": call["name"]}  # the name the model used, not the catalog's
    if isinstance(call.get("id"), str):
        body["id"] = call["id"]
    if not answer.ok:
        body["response"] = {"error": answer.error}
    elif answer.result is not None and answer.result.structured is not None and not answer.media:
        body["response"] = {"output": answer.result.structured}
    else:
        body["response"] = {"output": answer.text}
    return {"functionResponse": body}
