"""`compile_schema(schema, target)`: one tool's input schema in the form a model provider accepts.

Pure and deterministic: the same input gives the same output, and the input is never changed.
A strict target that cannot express the schema compiles its plain twin instead (`strict` False,
with the reasons as diagnostics). A fatal diagnostic means the tool cannot be offered at all; its
`schema` is then a copy of the input, for the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mcpstation.catalog.compile import anthropic, gemini, openai
from mcpstation.catalog.compile._emit import emit
from mcpstation.catalog.compile._normalize import Fatal, copy_json, normalize
from mcpstation.catalog.compile._profile import Profile
from mcpstation.catalog.compile.diagnostics import STRICT_BLOCKERS, Code, Diagnostic, Severity
from mcpstation.catalog.compile.restore import strip_added_nulls


class Target(StrEnum):
    JSON = "json"  # the schema unchanged: only checked
    OPENAI = "openai"
    OPENAI_STRICT = "openai-strict"
    ANTHROPIC = "anthropic"
    ANTHROPIC_STRICT = "anthropic-strict"
    GEMINI = "gemini"  # FunctionDeclaration.parameters (OpenAPI subset)
    GEMINI_JSON = "gemini-json"  # FunctionDeclaration.parametersJsonSchema

    @property
    def provider(self) -> str:
        """`openai`, `anthropic`, `gemini` or `json`: whose naming rules apply."""
        return self.value.split("-", 1)[0]

    @property
    def is_strict(self) -> bool:
        return self in (Target.OPENAI_STRICT, Target.ANTHROPIC_STRICT)

    @property
    def plain(self) -> Target:
        return {Target.OPENAI_STRICT: Target.OPENAI, Target.ANTHROPIC_STRICT: Target.ANTHROPIC}.get(self, self)


PROFILES: dict[Target, Profile] = {
    Target.OPENAI: openai.PLAIN,
    Target.OPENAI_STRICT: openai.STRICT,
    Target.ANTHROPIC: anthropic.PLAIN,
    Target.ANTHROPIC_STRICT: anthropic.STRICT,
    Target.GEMINI: gemini.PARAMETERS,
    Target.GEMINI_JSON: gemini.JSON_SCHEMA,
}


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compiled schema, whether it is strict, and every change made to get it."""

    schema: dict[str, Any]
    strict: bool
    diagnostics: tuple[Diagnostic, ...]
    target: Target
    added_nulls: frozenset[str] = field(default=frozenset(), repr=False)  # pointers in `schema` of nulls to remove
    optional: int = 0  # optional properties at any depth (Anthropic's strict budget)
    unions: int = 0  # union-typed properties at any depth (likewise)

    @property
    def refused(self) -> bool:
        """A fatal diagnostic: the tool cannot be offered to this target."""
        return any(d.severity is Severity.FATAL for d in self.diagnostics)

    @property
    def lossy(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity is Severity.LOSSY)

    def restore(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """A model's arguments for this schema as the original schema expects them: the nulls
        strict mode added for optional properties removed, so the server sees them left out."""
        return strip_added_nulls(arguments, self.schema, self.added_nulls)

    def with_diagnostic(self, diagnostic: Diagnostic) -> Compiled:
        return Compiled(
            self.schema,
            self.strict,
            (*self.diagnostics, diagnostic),
            self.target,
            self.added_nulls,
            self.optional,
            self.unions,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.value,
            "strict": self.strict,
            "refused": self.refused,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def compile_schema(schema: Mapping[str, Any], target: Target | str) -> Compiled:
    """`schema` (a tool's input schema) compiled for `target`; never raises for a bad schema (a
    fatal diagnostic says what is wrong)."""
    target = Target(target)
    try:
        tree = normalize(schema)
    except Fatal as fatal:
        return Compiled(_copy(schema), False, (fatal.diagnostic,), target)
    if target is Target.JSON:
        return Compiled(_copy(schema), False, (), target)
    profile = PROFILES[target]
    try:
        emitted = emit(tree, profile)
        if emitted.blocked and profile.fallback is not None:
            reasons = [d for d in emitted.diagnostics if d.code in STRICT_BLOCKERS]
            plain = emit(tree, profile.fallback)
            summary = Diagnostic(
                Code.STRICT_FALLBACK,
                "",
                None,
                None,
                "strict mode cannot express: " + ", ".join(sorted({d.code.value for d in reasons})),
            )
            diagnostics = (*tree.diagnostics, *reasons, summary, *plain.diagnostics)
            return Compiled(plain.schema, False, diagnostics, target, plain.added_nulls, plain.optional, plain.unions)
    except Fatal as fatal:
        return Compiled(_copy(schema), False, (*tree.diagnostics, fatal.diagnostic), target)
    return Compiled(
        emitted.schema,
        profile.strict,
        (*tree.diagnostics, *emitted.diagnostics),
        target,
        emitted.added_nulls,
        emitted.optional,
        emitted.unions,
    )


def _copy(schema: Mapping[str, Any]) -> dict[str, Any]:
    copied = copy_json(dict(schema)) if isinstance(schema, Mapping) else {}
    return copied if isinstance(copied, dict) else {}
