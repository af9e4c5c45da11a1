"""The station's tools as OpenAI Agents SDK `FunctionTool`s (`pip install 'mcpstation[openai-agents]'`).

```python
from agents import Agent, Runner
from mcpstation.integrations.openai_agents import station_tools

agent = Agent(name="assistant", tools=station_tools(station))
result = await Runner.run(agent, "What is 2 + 3?")
```

`station_tools` lists the tools the caller may see when it is called; call it again after the
station's catalog changed. Every call goes through the station's pipeline with that caller; the
default caller is the model (`llm_caller("openai-agents")`, role `user`).

Results: text as `ToolOutputText`, images as `ToolOutputImage` (data URLs), PDFs as
`ToolOutputFileContent`; audio and other binary content is described in text (function outputs
carry no audio). A failed call returns its error as the tool's output (`Error: ...`), the SDK's
way of telling the model; the run never fails for it.
"""

from __future__ import annotations

from typing import Any

from mcpstation.catalog import CatalogTool
from mcpstation.integrations._calls import ArgumentsError, call, json_arguments, parameters_schema, resolve_caller
from mcpstation.integrations._content import Answer, Media, Text
from mcpstation.pipeline import Caller
from mcpstation.station import Station

try:
    from agents import FunctionTool, RunContextWrapper, ToolOutputFileContent, ToolOutputImage, ToolOutputText
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "mcpstation.integrations.openai_agents needs the OpenAI Agents SDK: pip install 'mcpstation[openai-agents]'"
    ) from exc

FRAMEWORK = "openai-agents"

ToolOutput = str | list[ToolOutputText | ToolOutputImage | ToolOutputFileContent]


def station_tools(station: Station, *, caller: Caller | None = None) -> list[FunctionTool]:
    """One `FunctionTool` per tool `caller` may see in `station` now."""
    resolved = resolve_caller(caller, FRAMEWORK)
    return [_function_tool(station, tool, resolved) for tool in station.tools_for(resolved)]


def _function_tool(station: Station, tool: CatalogTool, caller: Caller) -> FunctionTool:
    name = tool.name

    async def invoke(context: RunContextWrapper[Any], raw_arguments: str) -> ToolOutput:
        try:
            arguments = json_arguments(raw_arguments)
        except ArgumentsError as exc:
            return _output(Answer.bad_arguments(name, str(exc)))
        return _output(await call(station, name, arguments, caller))

    return FunctionTool(
        name=name,
        description=tool.description,
        params_json_schema=parameters_schema(tool),
        on_invoke_tool=invoke,
        strict_json_schema=False,  # MCP schemas are rarely strict-mode schemas (optional properties)
    )


def _output(answer: Answer) -> ToolOutput:
    if not answer.ok:
        return f"Error: {answer.error}"
    if not any(_media_output(media) for media in answer.media):
        return answer.text
    return [
        ToolOutputText(text=part.text)
        if isinstance(part, Text)
        else _media_output(part) or ToolOutputText(text=part.summary)
        for part in answer.parts
    ]


def _media_output(media: Media) -> ToolOutputImage | ToolOutputFileContent | None:
    if media.is_image:
        return ToolOutputImage(image_url=media.data_url)
    if media.is_document:
        return ToolOutputFileContent(file_data=media.data_url, filename=media.filename)
    return None
