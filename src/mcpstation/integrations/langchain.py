"""The station's tools as LangChain `BaseTool`s, on langchain-core alone (`pip install 'mcpstation[langchain]'`).

```python
from mcpstation.integrations.langchain import station_tools

tools = station_tools(station)
model = ChatOpenAI(model=...).bind_tools(tools)
ai = await model.ainvoke(messages)
messages += [ai, *[await by_name[c["name"]].ainvoke(c) for c in ai.tool_calls]]
```

`station_tools` lists the tools the caller may see when it is called; call it again after the
station's catalog changed. The tools are async (`ainvoke`); every call goes through the
station's pipeline with that caller; the default caller is the model
(`llm_caller("langchain")`, role `user`).

Invoked with a tool call, a tool returns a `ToolMessage`: text as text, images and PDFs as
LangChain's standard `image` and `file` content blocks (audio and other binary content is
described in text: a ToolMessage takes no audio block), and the station's whole result
(`ToolResult.to_dict()`, structured content and media included) as its `artifact`.
A failed call is a `ToolMessage` with `status="error"` and the error as its content, never an
exception out of `ainvoke`.
"""

from __future__ import annotations

from typing import Any, Literal

from mcpstation.catalog import CatalogTool
from mcpstation.integrations._calls import call, parameters_schema, resolve_caller
from mcpstation.integrations._content import Answer, Media, Text
from mcpstation.pipeline import Caller
from mcpstation.station import Station

try:
    from langchain_core.tools import BaseTool, ToolException
except ImportError as exc:  # pragma: no cover - only without the extra
    raise ImportError(
        "mcpstation.integrations.langchain needs langchain-core: pip install 'mcpstation[langchain]'"
    ) from exc

FRAMEWORK = "langchain"

Content = str | list[str | dict[str, Any]]


def station_tools(station: Station, *, caller: Caller | None = None) -> list[BaseTool]:
    """One tool per tool `caller` may see in `station` now."""
    resolved = resolve_caller(caller, FRAMEWORK)
    return [StationTool.of(station, tool, resolved) for tool in station.tools_for(resolved)]


class StationTool(BaseTool):
    """One station tool, called through the station's pipeline as `caller`."""

    station: Station
    caller: Caller
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    handle_tool_error: bool = True  # a failed call becomes a ToolMessage with status="error"

    @classmethod
    def of(cls, station: Station, tool: CatalogTool, caller: Caller) -> StationTool:
        return cls(
            name=tool.name,
            description=tool.description,
            args_schema=parameters_schema(tool),
            station=station,
            caller=caller,
        )

    def _run(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"station tool {self.name!r} is async: use `await tool.ainvoke(...)`")

    async def _arun(self, *args: Any, **kwargs: Any) -> tuple[Content, dict[str, Any]]:
        """Returns (content, artifact).

        Raises:
            ToolException: the call failed; LangChain reports it to the model (`handle_tool_error`).
        """
        answer = await call(self.station, self.name, kwargs, self.caller)
        if not answer.ok:
            raise ToolException(answer.error)
        assert answer.result is not None  # an answer from the station carries its result
        return _content(answer), answer.result.to_dict()


def _content(answer: Answer) -> Content:
    if not any(media.is_image or media.is_document for media in answer.media):
        return answer.text
    return [_block(part) for part in answer.parts]


def _block(part: Text | Media) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if part.is_image:
        return {"type": "image", "base64": part.data, "mime_type": part.mime_type}
    if part.is_document:
        return {"type": "file", "base64": part.data, "mime_type": part.mime_type, "filename": part.filename}
    return {"type": "text", "text": part.summary}  # a ToolMessage takes no audio block
