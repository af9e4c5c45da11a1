"""The station as a pydantic-ai toolset (`pip install 'mcpstation[pydantic-ai]'`).

```python
from pydantic_ai import Agent
from mcpstation.integrations.pydantic_ai import station_toolset

agent = Agent("openai:gpt-5", toolsets=[station_toolset(station)])
result = await agent.run("What is 2 + 3?")
```

The toolset lists the tools its caller may see at every step of a run, so servers and tools that
come and go while the station runs are seen at once. A call goes through the station's pipeline
with that caller; the default caller is the model (`llm_caller("pydantic-ai")`, role `user`).

Results: text as text; images, audio and PDFs as `BinaryContent` (pydantic-ai passes them to
models that read them); a tool with structured output and no media returns its structured value.
The `ToolReturnPart`'s `metadata` holds the station's whole result (`ToolResult.to_dict()`). A
failed call raises `ToolFailed` inside the toolset, which pydantic-ai turns into a failed tool
result the model sees and adapts to, without spending a retry; the run itself never fails for it.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic_core import SchemaValidator, core_schema

from mcpstation.integrations._calls import call, parameters_schema, resolve_caller
from mcpstation.integrations._content import Answer, Media, MediaKind, Text
from mcpstation.pipeline import Caller
from mcpstation.station import Station

try:
    from pydantic_ai import RunContext, ToolDefinition, ToolFailed, ToolReturn
    from pydantic_ai.messages import BinaryContent
    from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "mcpstation.integrations.pydantic_ai needs pydantic-ai: pip install 'mcpstation[pydantic-ai]'"
    ) from exc

FRAMEWORK = "pydantic-ai"
TOOLSET_ID = "mcpstation"
# The station's servers validate arguments against their own schemas; here any JSON object passes.
_ANY_OBJECT = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


def station_toolset(station: Station, *, caller: Caller | None = None, id: str = TOOLSET_ID) -> StationToolset:
    """A pydantic-ai toolset of the tools `caller` may see in `station`."""
    return StationToolset(station, caller=resolve_caller(caller, FRAMEWORK), id=id)


class StationToolset(AbstractToolset[Any]):
    """The station's tools for one caller, listed afresh at every run step."""

    def __init__(self, station: Station, *, caller: Caller, id: str = TOOLSET_ID) -> None:
        self.station = station
        self.caller = caller
        self._id = id

    @property
    def id(self) -> str | None:
        return self._id

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            tool.name: ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=tool.name,
                    description=tool.description,
                    parameters_json_schema=parameters_schema(tool),
                    metadata={"server": tool.server, "tool": tool.tool},
                ),
                max_retries=ctx.max_retries,
                args_validator=_ANY_OBJECT,
            )
            for tool in self.station.tools_for(self.caller)
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        answer = await call(self.station, name, tool_args, self.caller)
        if not answer.ok:
            raise ToolFailed(answer.error or f"tool {name!r} failed")
        assert answer.result is not None  # an answer from the station carries its result
        return ToolReturn(return_value=_return_value(answer), metadata=answer.result.to_dict())


def _return_value(answer: Answer) -> Any:
    structured = answer.result.structured if answer.result is not None else None
    if structured is not None and not answer.media:
        return structured
    items = [_item(part) for part in answer.parts]
    if not items:
        return ""
    return items[0] if len(items) == 1 else items


def _item(part: Text | Media) -> str | BinaryContent:
    if isinstance(part, Text):
        return part.text
    if part.kind is MediaKind.FILE and not part.is_document:  # pydantic-ai judges images and audio per model
        return part.summary
    return BinaryContent.narrow_type(BinaryContent(data=base64.b64decode(part.data), media_type=part.mime_type))
