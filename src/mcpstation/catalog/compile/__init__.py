"""Provider schema compilers: every tool's input schema in the form each model provider accepts.

`compile_schema(schema, target)` compiles one schema; `compile_tools(tools, target)` a request's
tools together (names, Anthropic's strict budget, refusals, and `arguments_in` for the way back).
Targets: `json` (unchanged), `openai` and `openai-strict`, `anthropic` and `anthropic-strict`,
`gemini` (`parameters`) and `gemini-json` (`parametersJsonSchema`). Every change is a
`Diagnostic`; see `diagnostics` for what the severities promise.
"""

from mcpstation.catalog.compile.compiler import Compiled, Target, compile_schema
from mcpstation.catalog.compile.diagnostics import STRICT_BLOCKERS as STRICT_BLOCKER_CODES
from mcpstation.catalog.compile.diagnostics import Code, Diagnostic, Severity
from mcpstation.catalog.compile.names import NameCollision, ToolNames, provider_names
from mcpstation.catalog.compile.restore import strip_added_nulls
from mcpstation.catalog.compile.toolset import CompiledTool, CompiledTools, ToolSpec, compile_tools

__all__ = [
    "STRICT_BLOCKER_CODES",
    "Code",
    "Compiled",
    "CompiledTool",
    "CompiledTools",
    "Diagnostic",
    "NameCollision",
    "Severity",
    "Target",
    "ToolNames",
    "ToolSpec",
    "compile_schema",
    "compile_tools",
    "provider_names",
    "strip_added_nulls",
]
