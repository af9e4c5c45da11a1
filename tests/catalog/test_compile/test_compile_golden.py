"""Golden snapshots per target: every adversarial schema and one tool of each real server, compiled.

A change to a compiler shows here as a diff to review. To accept one, rewrite the snapshots:
`MCPSTATION_UPDATE_GOLDEN=1 .venv/bin/pytest tests/catalog/test_compile/test_compile_golden.py`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from compile_corpus import Case, adversarial, real

from mcpstation.catalog.compile import Target, compile_schema

GOLDEN = Path(__file__).parent / "golden"
INLINE_LIMIT = 8_000  # characters of compiled JSON kept in the snapshot; a larger schema is kept as its hash


def _cases() -> list[Case]:
    firsts: dict[str, Case] = {}
    for case in real():
        firsts.setdefault(case.name.split("/", 1)[0], case)
    return [*firsts.values(), *adversarial()]


def _snapshot(target: Target) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for case in _cases():
        compiled = compile_schema(case.schema, target)
        text = json.dumps(compiled.schema, sort_keys=False, ensure_ascii=False)
        entries[case.name] = {
            "strict": compiled.strict,
            "refused": compiled.refused,
            "schema": compiled.schema
            if len(text) <= INLINE_LIMIT
            else {"sha256": hashlib.sha256(text.encode()).hexdigest()},
            "diagnostics": [f"{d.severity.value} {d.code.value} {d.pointer}" for d in compiled.diagnostics],
        }
    return entries


@pytest.mark.parametrize("target", [t for t in Target if t is not Target.JSON], ids=str)
def test_compiled_schemas_match_the_golden_snapshot(target):
    path = GOLDEN / f"{target.value}.json"
    current = _snapshot(target)
    if os.environ.get("MCPSTATION_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps(current, indent=1, ensure_ascii=False) + "\n")
    expected = json.loads(path.read_text())
    assert sorted(current) == sorted(expected)
    for name, entry in current.items():
        assert entry == expected[name], f"{target.value} {name} differs from {path.name}"
