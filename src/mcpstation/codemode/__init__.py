"""Code mode: the model writes one short script that calls the fleet's tools, run in a real sandbox.

`mcp_run_code` (`tool.py`) carries typed stubs of the caller's tools (`stubs.py`); the script runs
in pydantic-monty (`_monty.py`, the only module that imports it) on the station's pool of sandbox
workers (`workers.py`), and every call it makes comes back through the pipeline as the caller's
own request (`runner.py`, one run in `_run.py`), within the run's limits (`limits.py`).
See docs/code-mode.md.

The names below are imported when first used (PEP 562): a station that never offers or runs code
loads the runner, the tool builder and the worker pool, not the sandbox's limits, names and stubs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcpstation._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from mcpstation.codemode._run import CallRecord
    from mcpstation.codemode.limits import Budget, Limit
    from mcpstation.codemode.names import ToolNames, python_name
    from mcpstation.codemode.runner import CodeRunner
    from mcpstation.codemode.stubs import render_stubs
    from mcpstation.codemode.tool import CodeToolBuilder
    from mcpstation.codemode.values import EXCEPTIONS, script_error, script_value
    from mcpstation.codemode.workers import SandboxWorkers

__all__ = [
    "EXCEPTIONS",
    "Budget",
    "CallRecord",
    "CodeRunner",
    "CodeToolBuilder",
    "Limit",
    "SandboxWorkers",
    "ToolNames",
    "python_name",
    "render_stubs",
    "script_error",
    "script_value",
]

_HOMES: dict[str, str] = {
    **dict.fromkeys(("Budget", "Limit"), "mcpstation.codemode.limits"),
    **dict.fromkeys(("ToolNames", "python_name"), "mcpstation.codemode.names"),
    "CallRecord": "mcpstation.codemode._run",
    "CodeRunner": "mcpstation.codemode.runner",
    "render_stubs": "mcpstation.codemode.stubs",
    "CodeToolBuilder": "mcpstation.codemode.tool",
    **dict.fromkeys(("EXCEPTIONS", "script_error", "script_value"), "mcpstation.codemode.values"),
    "SandboxWorkers": "mcpstation.codemode.workers",
}


__getattr__, __dir__ = lazy_exports(__name__, _HOMES, __all__)
