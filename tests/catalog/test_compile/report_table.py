"""The table in docs/schema-compilers.md: per target, tools compiled strict, plain and refused, and
the lossy diagnostics by kind, over the corpus of tests/catalog/test_compile/corpus.

Rerun after a compiler change: `.venv/bin/python tests/catalog/test_compile/report_table.py --write`
(without `--write` it prints the table). test_compile_report.py fails while the doc is out of date.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from compile_corpus import Case, adversarial, real

from mcpstation.catalog.compile import STRICT_BLOCKER_CODES, Severity, Target, compile_schema

DOC = Path(__file__).resolve().parents[3] / "docs" / "schema-compilers.md"
BEGIN = "<!-- report_table.py: begin -->"
END = "<!-- report_table.py: end -->"


def _rows(cases: list[Case]) -> list[str]:
    rows = [
        "| target | strict | plain | refused | strict fell back for | lossy diagnostics by kind |",
        "|---|---:|---:|---:|---|---|",
    ]
    for target in Target:
        if target is Target.JSON:
            continue
        counts: Counter[str] = Counter()
        lossy: Counter[str] = Counter()
        fallbacks: Counter[str] = Counter()
        for case in cases:
            compiled = compile_schema(case.schema, target)
            counts["refused" if compiled.refused else "strict" if compiled.strict else "plain"] += 1
            lossy.update(d.code.value for d in compiled.diagnostics if d.severity is Severity.LOSSY)
            if target.is_strict and not compiled.strict and not compiled.refused:
                fallbacks.update({d.code.value for d in compiled.diagnostics if d.code in STRICT_BLOCKER_CODES})
        rows.append(
            f"| {target.value} | {counts['strict']} | {counts['plain']} | {counts['refused']} | "
            f"{_kinds(fallbacks) if target.is_strict else 'n/a'} | {_kinds(lossy)} |"
        )
    return rows


def _kinds(counter: Counter[str]) -> str:
    return (
        ", ".join(f"{kind} {count}" for kind, count in sorted(counter.items(), key=lambda item: (-item[1], item[0])))
        or "none"
    )


def table() -> str:
    real_cases, adversarial_cases = real(), adversarial()
    servers = len({case.name.split("/", 1)[0] for case in real_cases})
    return "\n".join(
        [
            BEGIN,
            f"**Real tools**: {len(real_cases)} tools of {servers} public MCP servers.",
            "",
            *_rows(real_cases),
            "",
            f"**Adversarial schemas**: {len(adversarial_cases)} (root unions, `$ref` with siblings, recursion, "
            "circular references, `{}`, `allOf`, `not`, huge enums, 12-level nesting, maps, `const`, tuples, ...).",
            "",
            *_rows(adversarial_cases),
            END,
        ]
    )


def written() -> str:
    text = DOC.read_text()
    return text[text.index(BEGIN) : text.index(END) + len(END)]


if __name__ == "__main__":
    current = table()
    if "--write" in sys.argv:
        text = DOC.read_text()
        DOC.write_text(text[: text.index(BEGIN)] + current + text[text.index(END) + len(END) :])
    else:
        print(current)
