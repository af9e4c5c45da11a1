"""A request's tools compiled together: names, per-request budgets, refusals, and the way back.

`compile_tools(tools, target)` compiles every tool for one request. Tools with a fatal diagnostic
are left out (`refused`), so one bad schema never breaks the request. For Anthropic strict tool
use the request's budget (20 strict tools, 24 optional and 16 union-typed properties across them)
is spent on tools with side effects first: destructive ones, then other non-read-only ones, then
read-only ones, each group in catalog order; a tool past the budget is compiled plain, with a
`strict-budget` diagnostic.

On the way back, `arguments_in(name, arguments)` gives the catalog name and the arguments as the
original schema expects them (strict mode's added nulls removed). Validation against the original
schema happens in the station's pipeline, for every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcpstation.catalog.compile import anthropic
from mcpstation.catalog.compile.compiler import Compiled, Target, compile_schema
from mcpstation.catalog.compile.diagnostics import Code, Diagnostic, Severity
from mcpstation.catalog.compile.names import ToolNames, provider_names

if TYPE_CHECKING:
    from mcpstation.catalog.catalog import CatalogTool


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What compiling needs of a tool: its public name, description, input schema and side effects."""

    name: str
    description: str
    input_schema: Mapping[str, Any]
    read_only: bool = False
    destructive: bool = True  # MCP's default for a tool that is not read-only

    @classmethod
    def of(cls, tool: CatalogTool) -> ToolSpec:
        annotations = tool.definition.annotations
        read_only = bool(annotations is not None and annotations.read_only_hint)
        destructive = annotations is None or annotations.destructive_hint is not False
        return cls(
            tool.name,
            tool.description,
            tool.input_schema,
            read_only=read_only,
            destructive=destructive and not read_only,
        )

    @property
    def priority(self) -> int:
        """0 destructive, 1 other side effects, 2 read-only: strict mode goes to the lower first."""
        if self.read_only:
            return 2
        return 0 if self.destructive else 1


@dataclass(frozen=True, slots=True)
class CompiledTool:
    spec: ToolSpec
    name: str  # the provider's name for it
    compiled: Compiled

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.spec.name, "provider_name": self.name, **self.compiled.to_dict()}


@dataclass(frozen=True, slots=True)
class CompiledTools:
    target: Target
    tools: tuple[CompiledTool, ...]  # offered, in the order given
    refused: tuple[CompiledTool, ...]
    names: ToolNames

    def arguments_in(self, provider_name: str, arguments: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The catalog name and restored arguments of a call the model made by `provider_name`."""
        name = self.names.incoming(provider_name)
        for tool in self.tools:
            if tool.spec.name == name:
                return name, tool.compiled.restore(arguments)
        return name, dict(arguments)

    def report(self) -> dict[str, Any]:
        """Per tool: strict or not, refused or not, every diagnostic; and the totals."""
        every = sorted((*self.tools, *self.refused), key=lambda tool: tool.spec.name)
        counts: dict[str, int] = {}
        for tool in every:
            for diagnostic in tool.compiled.diagnostics:
                if diagnostic.severity is Severity.LOSSY:
                    counts[diagnostic.code.value] = counts.get(diagnostic.code.value, 0) + 1
        return {
            "target": self.target.value,
            "tools": [tool.to_dict() for tool in every],
            "name_collisions": [collision.to_dict() for collision in self.names.collisions],
            "summary": {
                "strict": sum(1 for tool in self.tools if tool.compiled.strict),
                "plain": sum(1 for tool in self.tools if not tool.compiled.strict),
                "refused": len(self.refused),
                "lossy": dict(sorted(counts.items())),
            },
        }

    @property
    def fatal(self) -> bool:
        return bool(self.refused)


def compile_tools(tools: Iterable[ToolSpec | CatalogTool], target: Target | str) -> CompiledTools:
    """Every tool compiled for one request to `target` (see the module docstring)."""
    target = Target(target)
    specs = [tool if isinstance(tool, ToolSpec) else ToolSpec.of(tool) for tool in tools]
    names = provider_names([spec.name for spec in specs], target.provider)
    compiled = {spec.name: compile_schema(spec.input_schema, target) for spec in specs}
    if target is Target.ANTHROPIC_STRICT:
        _hold_budget(specs, compiled)
    offered: list[CompiledTool] = []
    refused: list[CompiledTool] = []
    for spec in specs:
        entry = CompiledTool(spec, names.outgoing(spec.name), compiled[spec.name])
        (refused if entry.compiled.refused else offered).append(entry)
    return CompiledTools(target, tuple(offered), tuple(refused), names)


def _hold_budget(specs: list[ToolSpec], compiled: dict[str, Compiled]) -> None:
    strict_tools = optional = unions = 0
    for spec in sorted(specs, key=lambda spec: spec.priority):
        result = compiled[spec.name]
        if not result.strict:
            continue
        fits = (
            strict_tools + 1 <= anthropic.MAX_STRICT_TOOLS
            and optional + result.optional <= anthropic.MAX_OPTIONAL_PROPERTIES
            and unions + result.unions <= anthropic.MAX_UNION_PROPERTIES
        )
        if fits:
            strict_tools, optional, unions = strict_tools + 1, optional + result.optional, unions + result.unions
            continue
        plain = compile_schema(spec.input_schema, Target.ANTHROPIC)
        detail = (
            f"the request's strict budget is spent ({strict_tools} tools, {optional} optional and {unions} union "
            f"properties of {anthropic.MAX_STRICT_TOOLS}/{anthropic.MAX_OPTIONAL_PROPERTIES}/"
            f"{anthropic.MAX_UNION_PROPERTIES}); this tool needs {result.optional} optional and {result.unions} union"
        )
        compiled[spec.name] = Compiled(
            plain.schema,
            False,
            (*plain.diagnostics, Diagnostic(Code.STRICT_BUDGET, "", None, None, detail)),
            Target.ANTHROPIC_STRICT,
            plain.added_nulls,
            plain.optional,
            plain.unions,
        )
