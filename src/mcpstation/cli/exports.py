"""`mcpstation tools export` and `tools check`: the catalog's tools compiled for a model provider.

`export` prints what a provider's `tools=` takes (JSON on stdout), each schema compiled for it;
a tool that cannot be offered is left out and named on stderr. `check` prints, per tool, whether
it compiles strict, plain or not at all and every change made (`--json`: the whole report), and
exits 1 when any tool has a fatal diagnostic, so CI can gate on it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

from mcpstation.cli._exits import EXIT_USAGE
from mcpstation.cli._runner import (
    _configure_logging,
    _emit_json,
    _errors_to_exit_codes,
    _Exit,
    _wants_json,
    out,
    say,
)
from mcpstation.cli._station import with_station
from mcpstation.cli._view import Needs, Shape, StationView

if TYPE_CHECKING:
    from mcpstation.catalog.compile import ToolSpec

EXIT_REFUSED: Final = 1  # `tools check`: a tool cannot be offered to the target (a fatal diagnostic)
FORMATS: Final = ("openai", "openai-responses", "anthropic", "gemini", "gemini-json")
TARGETS: Final = ("json", "openai", "openai-strict", "anthropic", "anthropic-strict", "gemini", "gemini-json")


def export(format: str, *, strict: bool) -> None:
    """Print the tools in `format`'s shape; refused tools go to stderr."""
    with _errors_to_exit_codes():
        _export(format, strict=strict)


def check(target: str, *, json_output: bool) -> None:
    """Print the per-tool report for `target`; exit 1 when a tool is refused."""
    with _errors_to_exit_codes():
        _check(target, json_output=json_output)


def _export(format: str, *, strict: bool) -> None:
    from mcpstation.catalog.compile import Target, compile_tools
    from mcpstation.catalog.schemas import anthropic_tools, gemini_declarations, openai_responses_tools, openai_tools

    if format not in FORMATS:
        say(f"unknown format {format!r}; use one of: {', '.join(FORMATS)}", style="red", stderr=True)
        raise _Exit(EXIT_USAGE)
    if strict and format.startswith("gemini"):
        say("--strict is for openai and anthropic: Gemini has no strict mode", style="red", stderr=True)
        raise _Exit(EXIT_USAGE)
    _configure_logging(logging.WARNING)
    specs = _tool_specs()
    exported: Any
    if format == "openai":
        exported = openai_tools(specs, strict=strict)
    elif format == "openai-responses":
        exported = openai_responses_tools(specs, strict=strict)
    elif format == "anthropic":
        exported = anthropic_tools(specs, strict=strict)
    else:
        exported = [{"functionDeclarations": gemini_declarations(specs, json_schema=format == "gemini-json")}]
    _emit_json(exported)
    target = _target_of(format, strict=strict)
    for tool in compile_tools(specs, Target(target)).refused:
        reasons = "; ".join(d.line() for d in tool.compiled.diagnostics if d.severity.value == "fatal")
        say(f"left out {tool.spec.name}: {reasons}", style="yellow", stderr=True)


def _check(target: str, *, json_output: bool) -> None:
    from mcpstation.catalog.compile import Target, compile_tools

    if target not in TARGETS:
        say(f"unknown target {target!r}; use one of: {', '.join(TARGETS)}", style="red", stderr=True)
        raise _Exit(EXIT_USAGE)
    _configure_logging(logging.WARNING)
    compiled = compile_tools(_tool_specs(), Target(target))
    report = compiled.report()
    if _wants_json(json_output):
        _emit_json(report)
    else:
        out.print(_table(report))
    if compiled.fatal:
        raise _Exit(EXIT_REFUSED)


def _target_of(format: str, *, strict: bool) -> str:
    if format == "openai-responses":
        format = "openai"
    return f"{format}-strict" if strict else format


def _tool_specs() -> list[ToolSpec]:
    from mcpstation.catalog.compile import ToolSpec

    async def command(view: StationView) -> list[Shape]:
        return await view.tools()

    tools = with_station(command, needs=Needs.LISTINGS)
    return [ToolSpec(t["name"], t.get("description") or "", t.get("input_schema") or {}) for t in tools]


def _table(report: dict[str, Any]) -> Any:
    from rich.table import Table

    summary = report["summary"]
    title = f"{report['target']}: {summary['strict']} strict, {summary['plain']} plain, {summary['refused']} refused"
    table = Table(title=title, title_justify="left")
    for column in ("tool", "as", "lossy", "changes"):
        table.add_column(column)
    for tool in report["tools"]:
        state = "refused" if tool["refused"] else "strict" if tool["strict"] else "plain"
        diagnostics = tool["diagnostics"]
        lossy = sum(1 for d in diagnostics if d["severity"] == "lossy")
        notable = [
            f"{d['severity']} {d['code']} {d['pointer'] or '/'}" for d in diagnostics if d["severity"] != "cosmetic"
        ]
        table.add_row(tool["name"], state, str(lossy), "\n".join(notable[:6]) + ("\n…" if len(notable) > 6 else ""))
    return table
