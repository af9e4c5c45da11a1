"""A server that answers for more than it lists: with `prompts` it lists those prompts and answers
`prompts/get` for any name; with `template` it lists that resource template and reads any URI; with
`completions` it completes any reference. Each answer carries the server's own name, so a test
sees who answered; what it was asked is kept (`gets`, `reads`, `completed`). A capability it is not
given is not advertised (a low-level server: capabilities follow its handlers)."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server import Server


class PromptServer:
    def __init__(
        self,
        name: str,
        *,
        prompts: tuple[str, ...] | None = None,
        template: str | None = None,
        resources: bool = False,
        completions: bool = False,
    ) -> None:
        self.name = name
        self.gets: list[str] = []
        self.reads: list[str] = []
        self.completed: list[str] = []  # the prompt name or URI of each completion's reference
        handlers: dict[str, Any] = {}
        if prompts is not None:
            listed = [types.Prompt(name=prompt) for prompt in prompts]

            async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
                return types.ListPromptsResult(prompts=listed)

            handlers.update(on_list_prompts=list_prompts, on_get_prompt=self._get)
        if template is not None or resources:
            templates = [types.ResourceTemplate(uri_template=template, name="items")] if template else []

            async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
                return types.ListResourcesResult(resources=[])

            async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
                return types.ListResourceTemplatesResult(resource_templates=templates)

            handlers.update(
                on_list_resources=list_resources, on_list_resource_templates=list_templates, on_read_resource=self._read
            )
        if completions:
            handlers.update(on_completion=self._complete)
        self.server: Server[Any] = Server(name, **handlers)

    async def _get(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        self.gets.append(params.name)
        text = types.TextContent(type="text", text=f"{self.name} has {params.name}")
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])

    async def _read(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        self.reads.append(str(params.uri))
        contents = types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=f"{self.name} read it")
        return types.ReadResourceResult(contents=[contents])

    async def _complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        ref = params.ref
        self.completed.append(ref.name if isinstance(ref, types.PromptReference) else ref.uri)
        return types.CompleteResult(completion=types.Completion(values=[self.name]))
