"""Text-level JSON edits: only the value concerned changes; comments, commas and layout stay."""

from __future__ import annotations

import json

import pytest

from mcpstation.config._json_edit import JsonText
from mcpstation.config._problem import Problem

JSONC = """\
{
  // servers I use
  "mcpServers": {
    "a": {"command": "x"}, // the first
    "b": {
      "command": "y",
      "disabled": true
    },
  },
  "theme": "dark", /* kept */
}
"""


def test_insert_after_a_trailing_comma_keeps_the_style() -> None:
    edited = JsonText(JSONC, comments=True).insert(("mcpServers",), "c", {"url": "https://c/mcp"})
    assert '    },\n    "c": {\n      "url": "https://c/mcp"\n    },\n  },\n  "theme"' in edited.text
    assert edited.data["mcpServers"]["c"] == {"url": "https://c/mcp"}
    assert "// servers I use" in edited.text and "/* kept */" in edited.text


def test_insert_after_a_member_with_a_comment_puts_the_comma_before_the_comment() -> None:
    text = '{\n  "a": 1 // one\n}\n'
    edited = JsonText(text, comments=True).insert((), "b", 2)
    assert edited.text == '{\n  "a": 1, // one\n  "b": 2\n}\n'


def test_remove_takes_the_members_line_and_the_comments_above_it() -> None:
    text = '{\n  "a": 1,\n  // about b\n  "b": 2,\n  "c": 3\n}\n'
    assert JsonText(text, comments=True).remove(("b",)).text == '{\n  "a": 1,\n  "c": 3\n}\n'


def test_remove_the_last_member_takes_the_comma_before_it() -> None:
    edited = JsonText('{\n  "a": 1,\n  "b": 2\n}\n', comments=False).remove(("b",))
    assert edited.text == '{\n  "a": 1\n}\n'
    assert JsonText('{"a": 1, "b": 2}', comments=False).remove(("a",)).text == '{"b": 2}'


def test_set_replaces_in_place_or_creates_the_tables_on_the_way() -> None:
    document = JsonText(JSONC, comments=True)
    assert '"disabled": false' in document.set(("mcpServers", "b", "disabled"), False).text
    created = document.set(("mcp", "excluded"), ["b"])
    assert created.data["mcp"] == {"excluded": ["b"]} and "/* kept */" in created.text


def test_inline_containers_stay_inline_and_tabs_stay_tabs() -> None:
    assert JsonText('{"servers": []}', comments=False).insert(("servers",), None, {"id": "a"}).text == (
        '{"servers": [{"id": "a"}]}'
    )
    tabbed = JsonText('{\n\t"s": {\n\t\t"a": 1\n\t}\n}\n', comments=False).insert(("s",), "b", {"x": 1})
    assert tabbed.text == '{\n\t"s": {\n\t\t"a": 1,\n\t\t"b": {\n\t\t\t"x": 1\n\t\t}\n\t}\n}\n'
    assert json.loads(tabbed.text) == {"s": {"a": 1, "b": {"x": 1}}}


def test_comments_need_a_client_that_allows_them() -> None:
    with pytest.raises(Problem, match="invalid JSON"):
        JsonText(JSONC, comments=False)
