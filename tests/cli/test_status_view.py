"""`status` on a narrow console: no word broken, the errors below the table, whole."""

from __future__ import annotations

import io
import re

from rich.console import Console

from mcpstation.cli._render import status_view

ERROR = (
    "command not found: no-such-binary-for-mcpstation (looked on PATH (/usr/local/bin:/usr/bin:/bin) "
    "and in /home/ada/project/.venv/bin; nearest: /home/ada/project/.venv/bin/mcp-server-time)"
)


def server(name: str, state: str, error: str | None = None, transport: str = "stdio") -> dict[str, object]:
    return {"name": name, "state": state, "transport": transport, "protocol_version": "2025-11-25",
            "tools": 2, "tokens": 279, "prompts": 0, "resources": 0, "templates": 0, "error": error}  # fmt: skip


STATUS = {"servers": [server("gone", "FAILED", ERROR), server("time", "READY", transport="streamable_http")]}


def rendered(width: int) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    for part in status_view(STATUS, width):
        console.print(part)
    return buffer.getvalue()


def words(text: str) -> set[str]:
    return set(re.findall(r"[A-Za-z_][\w-]*", text))


def test_a_narrow_console_breaks_no_word_and_says_each_error_below_the_table() -> None:
    for width in (80, 60, 40):
        text = rendered(width)
        assert max(len(line) for line in text.splitlines()) <= width
        assert {"FAILED", "READY", "server", "state", "gone", "time"} <= words(text), text
        # The error is one paragraph, wrapped at its spaces: joined again, it is the error.
        below = text[text.index("gone: command") :]
        assert " ".join(below.split()).startswith(f"gone: {' '.join(ERROR.split())[:60]}")
        assert "FAILE\n" not in text and "│ FAILE " not in text


def test_a_wide_console_keeps_every_column_and_the_error_in_its_row() -> None:
    text = rendered(400)
    [row] = [line for line in text.splitlines() if "gone" in line]
    assert "FAILED" in row and ERROR in row
    assert {"transport", "version", "tokens", "prompts", "resources", "templates", "error"} <= words(text)
