"""`TerminalElicitor`, fed through stdin as a person at the keyboard would type."""

from __future__ import annotations

import io

import pytest

from mcpstation.host import ElicitationAnswer, FormRequest, TerminalElicitor, UrlRequest

pytestmark = pytest.mark.anyio

FORM = FormRequest(
    message="Tell me about you",
    schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name"},
            "age": {"type": "integer", "minimum": 1, "maximum": 150},
            "agree": {"type": "boolean"},
            "pet": {
                "type": "string",
                "oneOf": [{"const": "pet-1", "title": "Cats"}, {"const": "pet-2", "title": "Dogs"}],
            },
            "tools": {"type": "array", "items": {"type": "string", "enum": ["Guitar", "Piano"]}, "default": ["Piano"]},
            "motto": {"type": "string", "default": "carpe diem"},
        },
        "required": ["name", "age"],
    },
)


async def ask(typed: str, request: FormRequest | UrlRequest = FORM) -> tuple[ElicitationAnswer, str]:
    out = io.StringIO()
    answer = await TerminalElicitor(io.StringIO(typed), out)("srv", request)
    return answer, out.getvalue()


async def test_a_form_is_filled_with_typed_values_checked_and_defaults_kept():
    answer, shown = await ask("y\nAda\nold\n200\n36\nyes\ndogs\n\n\n")
    assert answer == ElicitationAnswer.accept(
        {"name": "Ada", "age": 36, "agree": True, "pet": "pet-2", "tools": ["Piano"], "motto": "carpe diem"}
    )
    assert "Server 'srv' asks:" in shown and "expected a whole number" in shown and "between 1 and 150" in shown
    assert "pet-1 (Cats)" in shown


async def test_optional_fields_may_be_left_empty_and_multi_select_takes_a_list():
    answer, _ = await ask("yes\nAda\n5\n\n\nGuitar, piano\n\n")
    assert answer.content == {"name": "Ada", "age": 5, "tools": ["Guitar", "Piano"], "motto": "carpe diem"}


async def test_no_and_cancel_and_end_of_input():
    assert (await ask("n\n"))[0] == ElicitationAnswer.decline()
    assert (await ask("c\n"))[0] == ElicitationAnswer.cancel()
    assert (await ask("y\nAda\n"))[0] == ElicitationAnswer.cancel()  # input ended mid-form


async def test_a_url_is_shown_and_consent_asked():
    answer, shown = await ask("y\n", UrlRequest(message="Sign in", url="https://example.org/login"))
    assert answer == ElicitationAnswer.accept() and "https://example.org/login" in shown


async def test_it_reads_the_real_stdin_by_default(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert await TerminalElicitor()("srv", FORM) == ElicitationAnswer.decline()
