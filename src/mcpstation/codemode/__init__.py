"""Code mode: the model writes one short script that calls the fleet's tools, run in a real sandbox.

`mcp_run_code` (`tool.py`) carries typed stubs of the caller's tools (`stubs.py`); the script runs
in pydantic-monty (`_monty.py`, the only module that imports it) on the station's pool of sandbox
workers (`workers.py`), and every call it makes comes back through the pipeline as the caller's
own request (`runner.py`), within the run's limits (`limits.py`). See docs/code-mode.md.
"""

from mcpstation.codemode.limits import Budget, Limit
from mcpstation.codemode.names import ToolNames, python_name
from mcpstation.codemode.runner import CallRecord, CodeRunner
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
