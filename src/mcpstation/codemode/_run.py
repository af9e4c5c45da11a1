"""One script's run for `CodeRunner`: its host functions, budget and calls, the sandbox call, the answer.

Loaded with the first `mcpstation/run_code` request, and with it the sandbox's limits and names: a
station that never runs code does not import them.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types

from mcpstation.catalog import ToolResult
from mcpstation.codemode.limits import Budget, Limit
from mcpstation.codemode.names import ToolNames
from mcpstation.codemode.sandbox import Ending, HostFunction, SandboxEnd, SandboxLimits
from mcpstation.codemode.stubs import CHECKER_ONLY, render_stubs
from mcpstation.codemode.values import json_text, result_bytes, script_error, script_value
from mcpstation.codemode.workers import SandboxWorkers
from mcpstation.config.models import CodeModeSettings
from mcpstation.outcomes import Outcome
from mcpstation.pipeline.request import Question, Request, Via
from mcpstation.pipeline.surface import HOST_SERVER, RUN_CODE, SEARCH_LIMIT

if TYPE_CHECKING:
    from mcpstation.pipeline import Pipeline

NO_SANDBOX = "code mode needs its sandbox, pydantic-monty: pip install 'mcpstation[codemode]'"
MIN_CALL_S = 0.5  # a call dispatched near the end of the run's wall time still gets this long


@dataclass
class CallRecord:
    """One call a script made: the tool by public name and what became of it (None: never finished)."""

    tool: str
    outcome: Outcome | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "outcome": str(self.outcome) if self.outcome is not None else "unfinished"}


class Run:
    """One script's run: its functions, its budget and the calls it made."""

    def __init__(self, pipeline: Pipeline, request: Request, settings: CodeModeSettings) -> None:
        self.pipeline = pipeline
        self.request = request
        self.settings = settings
        self.id = request.run_id or uuid.uuid4().hex[:12]
        self.budget = Budget(settings)
        self.calls: list[CallRecord] = []
        self.started = time.monotonic()
        self.paused_s = 0.0  # time spent waiting for a person's answer: not the run's wall time
        self.scope = anyio.CancelScope(deadline=anyio.current_time() + settings.timeout_s)
        self._asking = 0  # questions waiting for an answer
        self._pause_started = 0.0
        self._deadline = self.scope.deadline
        surface = pipeline.surface_for(request.caller)
        self.search = surface.search
        self.shown = surface.stubbed
        self.names = ToolNames.of(tool.name for tool in self.shown)

    def functions(self) -> dict[str, HostFunction]:
        functions: dict[str, HostFunction] = {
            function: self._tool_function(public) for function, public in self.names.by_function.items()
        }
        functions["call_tool"] = self._call_tool
        if self.search:
            functions["search_tools"] = self._search_tools
        return functions

    def _elapsed_s(self) -> float:
        """The run's wall time so far, without the time it waited for a person."""
        return time.monotonic() - self.started - self.paused_s

    def _remaining_s(self) -> float:
        return max(self.settings.timeout_s - self._elapsed_s(), MIN_CALL_S)

    def pauses(self, function: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether this call waits for a person's confirmation: the run pauses at it until answered."""
        public = self.names.public(function)
        if function == "call_tool":
            public = kwargs.get("name", args[0] if args else None)
        return isinstance(public, str) and self.pipeline.needs_confirmation(public)

    async def _ask(self, question: Question) -> bool:
        """The run's caller is asked; meanwhile the run's wall clock stands still."""
        ask = self.request.ask
        assert ask is not None  # only handed down when the run has one
        if self._asking == 0:
            self._pause_started = time.monotonic()
            self._deadline = self.scope.deadline
            self.scope.deadline = math.inf
        self._asking += 1
        try:
            return await ask(question)
        finally:
            self._asking -= 1
            if self._asking == 0:
                waited = time.monotonic() - self._pause_started
                self.paused_s += waited
                self.scope.deadline = self._deadline + waited

    def _tool_function(self, public: str) -> HostFunction:
        async def call(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            if args:
                if len(args) != 1 or kwargs or not isinstance(args[0], Mapping):
                    raise TypeError(f"{public}() takes keyword arguments only")
                return await self._call(public, dict(args[0]))
            return await self._call(public, kwargs)

        return call

    async def _call_tool(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        name = kwargs.get("name", args[0] if args else None)
        arguments = kwargs.get("arguments", args[1] if len(args) > 1 else None)
        if not isinstance(name, str):
            raise TypeError("call_tool(name, arguments): name must be a tool's public name")
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError("call_tool(name, arguments): arguments must be a dict")
        surface = self.pipeline.surface
        if surface is not None and surface.answers(name):  # the meta-tools, this one included, are not tools here
            raise LookupError(f"{Outcome.NOT_FOUND}: {name!r} is not a tool a script can call")
        return await self._call(name, dict(arguments or {}))

    async def _call(self, public: str, arguments: dict[str, Any]) -> Any:
        record = CallRecord(public)
        self.calls.append(record)
        result = await self.pipeline.call_tool(
            public,
            arguments,
            caller=self.request.caller,
            timeout_s=self._remaining_s(),
            via=Via.CODE,
            run_id=self.id,
            ask=self._ask if self.request.ask is not None else None,
        )
        record.outcome = result.outcome
        if result.outcome is Outcome.TIMEOUT and self._elapsed_s() >= self.settings.timeout_s:
            self.budget.stop(Limit.WALL_TIME)  # the call had the run's last seconds: the run's limit, not the tool's
        if not result.ok:
            raise script_error(result)
        value = script_value(result)
        self.budget.take_result(result_bytes(value))  # over budget: the run ends before the script goes on
        return value

    async def _search_tools(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        query = kwargs.get("query", args[0] if args else None)
        limit = kwargs.get("limit", args[1] if len(args) > 1 else SEARCH_LIMIT)
        if not isinstance(query, str) or not isinstance(limit, int):
            raise TypeError("search_tools(query, limit=5): query is text, limit a whole number")
        hits = await self.pipeline.search_tools(query, caller=self.request.caller, limit=max(1, min(limit, 20)))
        return [{**hit.to_dict(schema=True)} for hit in hits]

    def admit(self, function: str) -> Limit | None:
        """Budget check before a host function is dispatched: every function but `search_tools` is a tool call."""
        return None if function == "search_tools" else self.budget.admit_call()

    async def run(self, code: str, workers: SandboxWorkers) -> ToolResult:
        settings = self.settings
        limits = SandboxLimits(
            cpu_s=settings.cpu_s,
            memory_bytes=settings.max_memory_bytes,
            recursion_depth=settings.max_recursion_depth,
            tool_calls=settings.max_tool_calls,
            sleep_s=settings.timeout_s,
        )
        try:
            from mcpstation.codemode._monty import run_script  # the sandbox library loads with the first run
        except ImportError:
            return self._answer(SandboxEnd(Ending.CRASHED, error=NO_SANDBOX))
        stubs = CHECKER_ONLY + render_stubs(self.shown, search=self.search)
        end = SandboxEnd(Ending.LIMIT, limit=Limit.WALL_TIME)
        with self.scope:  # waiting for a free worker is wall time too
            end = await run_script(
                code,
                pool=await workers.pool(),
                stubs=stubs,
                type_check=settings.type_check,
                limits=limits,
                functions=self.functions(),
                admit=self.admit,
                stopped=lambda: self.budget.exceeded,
                on_print=self.budget.take_output,
                pauses=self.pauses,
            )
        return self._answer(end)

    def _answer(self, end: SandboxEnd) -> ToolResult:
        limit = end.limit or self.budget.exceeded  # a limit the host saw ends the run, whatever the script did after
        if end.ending is Ending.COMPLETED and limit is None:
            if len(json_text(end.value).encode()) > self.settings.max_output_bytes:
                limit = Limit.OUTPUT_BYTES
        structured: dict[str, Any] = {
            "ok": end.ending is Ending.COMPLETED and limit is None,
            "value": _json_safe(end.value) if limit is None else None,
            "output": "".join(self.budget.output),
            "calls": [call.to_dict() for call in self.calls],
            "run": self.id,
        }
        if limit is not None:
            structured["limit"] = str(limit)
            structured["error"] = limit.describe(self.settings)
        elif end.ending is not Ending.COMPLETED:
            structured["error"] = end.error or str(end.ending)
        if not structured["ok"]:
            structured["ending"] = str(Ending.LIMIT if limit is not None else end.ending)
        error = structured.get("error")
        return answer(self.request, structured["ok"], structured, error, time.monotonic() - self.started)


def _json_safe(value: Any) -> Any:
    return json.loads(json_text(value))


def answer(
    request: Request, ok: bool, structured: dict[str, Any], error: str | None, duration_s: float = 0.0
) -> ToolResult:
    text = json_text(structured)
    raw = types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=not ok
    )
    return ToolResult(
        Outcome.OK if ok else Outcome.TOOL_ERROR,
        request.name,
        HOST_SERVER,
        RUN_CODE,
        content=tuple(raw.content),
        structured=structured,
        error=None if ok else error,
        duration_s=duration_s,
        raw=raw,
    )
