"""docs/schema-compilers.md shows the corpus table as report_table.py computes it now."""

from __future__ import annotations

import report_table


def test_the_documented_table_is_the_one_the_compilers_give_today():
    assert report_table.written() == report_table.table(), (
        "docs/schema-compilers.md is out of date: "
        "run .venv/bin/python tests/catalog/test_compile/report_table.py --write"
    )
