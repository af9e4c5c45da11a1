"""`CodeRunner`: the station's answer to a `mcpstation/run_code` request.

It runs the script in the sandbox (`_monty.py`) with the functions its caller may use: one per
tool shown in `mcp_run_code`'s stubs, `call_tool` for any tool by public name, and `search_tools`
when tool search is on. Each call goes back through the pipeline as a `tools/call` request of the
same `Caller`, so visibility, audit, the argument check, the URL guard and the bounds judge it as
they judge a direct call; the host keeps the run's budget (`limits.py`) before each dispatch.
A call of a confirm-tier tool is asked about exactly as a direct call is (through the run's own
`ask`); the run pauses at that call, suspended in its snapshot and holding no sandbox worker
(`workers.py`), until the answer, and the time a person takes is not charged to the run's wall
time (the confirm tier bounds it). A refusal reaches the script as `PermissionError`, which it may catch.

The answer is a `ToolResult` whose structured content says what happened: `ok`, the script's
`value` and printed `output`, every call it made with its outcome, and, when the run failed, the
`error` and the `limit` that ended it (nothing is retried behind the model's back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from mcpstation.pipeline.surface import RUN_CODE

if TYPE_CHECKING:
    from mcpstation.catalog import AnyResult
    from mcpstation.codemode.workers import SandboxWorkers
    from mcpstation.config.models import CodeModeSettings
    from mcpstation.pipeline import Pipeline
    from mcpstation.pipeline.request import Request


class CodeRunner:
    """Answers `mcpstation/run_code` requests (given to the `Router` as the kind's handler)."""

    def __init__(
        self, pipeline: Callable[[], Pipeline], settings: Callable[[], CodeModeSettings], workers: SandboxWorkers
    ) -> None:
        self._pipeline = pipeline
        self._settings = settings
        self._workers = workers

    async def __call__(self, request: Request) -> AnyResult:
        from mcpstation.codemode._run import Run, answer  # the sandbox side loads with the first request

        code = request.arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return answer(request, False, {"error": f"{RUN_CODE} needs `code`: a Python script"}, "no script")
        run = Run(self._pipeline(), request, self._settings())
        return await run.run(code, self._workers)
