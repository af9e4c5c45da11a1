"""`TerminalElicitor`: asks the person at the keyboard, for the CLI.

It answers servers' elicitations, and (`confirm`) whether a call of a confirm-tier tool may run.
A stdin with a file descriptor (a terminal, a pipe) is read as the event loop says it is readable,
so a question nobody answers in time is given up and the command can end; one without (a test's
`StringIO`) is read in a worker thread. One lock keeps questions from several servers from
interleaving. End of input cancels (a confirmation: no). Field answers are checked against the
schema (type, enum, range) and asked again, up to `MAX_ATTEMPTS` times; an empty answer keeps the
field's default or leaves an optional field out.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import anyio
import anyio.to_thread

from mcpstation.host.elicitation import (
    ElicitationAnswer,
    ElicitationRequest,
    FieldValue,
    FormRequest,
    UrlRequest,
    apply_defaults,
)

MAX_ATTEMPTS = 3  # invalid answers to one field before the whole form is cancelled
READ_BYTES = 4096  # read from a terminal at once: a line typed, or a few typed ahead
_YES = {"y", "yes", "a", "accept"}
_NO = {"n", "no", "d", "decline"}
_CANCEL = {"c", "cancel", "q", "quit"}
_CONFIRMED = {"y", "yes"}


class _EndOfInput(Exception):
    pass


class _Invalid(ValueError):
    pass


class TerminalElicitor:
    """An `ElicitationHandler` that prompts on a terminal (stderr) and reads answers from stdin.

    `stdin` and `stdout` default to `sys.stdin` and `sys.stderr`, looked up at each question so
    tests (and pipes) can feed answers.
    """

    def __init__(self, stdin: TextIO | None = None, stdout: TextIO | None = None) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._lock = anyio.Lock()
        self._typed = b""  # read from the descriptor past the line answered (typed ahead)

    async def __call__(self, server: str, request: ElicitationRequest) -> ElicitationAnswer:
        async with self._lock:
            try:
                if isinstance(request, UrlRequest):
                    return await self._ask_url(server, request)
                return await self._ask_form(server, request)
            except _EndOfInput:
                self._say("(no more input: cancelled)")
                return ElicitationAnswer.cancel()

    async def confirm(self, question: str) -> bool:
        """Ask a yes/no `question`, no by default: True only for an explicit yes; end of input is a no."""
        async with self._lock:
            self._say(f"\n{question}")
            try:
                reply = (await self._read("Allow it? [y/N]: ")).strip().lower()
            except _EndOfInput:
                self._say("(no more input: no)")
                return False
            except anyio.get_cancelled_exc_class():
                self._say("(no answer)")  # ends the prompt's line; the question is given up
                raise
            return reply in _CONFIRMED

    async def _ask_url(self, server: str, request: UrlRequest) -> ElicitationAnswer:
        self._say(f"\nServer {server!r} asks you to open a link:\n  {request.message}\n  {request.url}")
        return await self._consent("Open it and continue? [y]es / [n]o / [c]ancel: ")

    async def _ask_form(self, server: str, request: FormRequest) -> ElicitationAnswer:
        self._say(f"\nServer {server!r} asks:\n  {request.message}")
        answer = await self._consent("Answer? [y]es / [n]o / [c]ancel: ")
        if answer.action != "accept":
            return answer
        content: dict[str, FieldValue] = {}
        required = set(request.required)
        for name, prop in request.properties.items():
            value = await self._ask_field(name, prop, name in required)
            if value is _CANCELLED:
                return ElicitationAnswer.cancel()
            if value is not _SKIPPED:
                content[name] = value  # type: ignore[assignment]
        return ElicitationAnswer.accept(apply_defaults(request.schema, content))

    async def _consent(self, question: str) -> ElicitationAnswer:
        for _ in range(MAX_ATTEMPTS):
            reply = (await self._read(question)).strip().lower()
            if reply in _YES:
                return ElicitationAnswer.accept()
            if reply in _NO:
                return ElicitationAnswer.decline()
            if reply in _CANCEL:
                return ElicitationAnswer.cancel()
            self._say("  please answer y, n or c")
        return ElicitationAnswer.cancel()

    async def _ask_field(self, name: str, prop: Mapping[str, Any], required: bool) -> object:
        title = prop.get("title") or name
        description = f" - {prop['description']}" if prop.get("description") else ""
        choices = _choices(prop)
        hint = ""
        if choices:
            labels = ", ".join(f"{value} ({label})" if label != value else value for value, label in choices)
            hint = f" [{'several of' if prop.get('type') == 'array' else 'one of'}: {labels}]"
        if "default" in prop:
            hint += f" (default {prop['default']!r})"
        elif not required:
            hint += " (optional)"
        for _ in range(MAX_ATTEMPTS):
            raw = (await self._read(f"  {title}{description}{hint}: ")).strip()
            if not raw:
                if "default" in prop or not required:
                    return _SKIPPED  # the default (if any) is filled afterwards
                self._say("  an answer is required")
                continue
            try:
                return _parse(raw, prop, choices)
            except _Invalid as exc:
                self._say(f"  {exc}")
        self._say("  too many invalid answers: cancelled")
        return _CANCELLED

    async def _read(self, prompt: str) -> str:
        out = self._stdout or sys.stderr
        out.write(prompt)
        out.flush()
        stdin = self._stdin or sys.stdin
        fd = _descriptor(stdin)
        if fd is None:
            line: str = await anyio.to_thread.run_sync(stdin.readline, abandon_on_cancel=True)
        else:
            line = await self._read_line(fd)
        if not line:
            raise _EndOfInput
        return line

    async def _read_line(self, fd: int) -> str:
        """One line from `fd` without a thread ("" at end of input); what came after it is kept for the next."""
        while b"\n" not in self._typed:
            await anyio.wait_readable(fd)
            chunk = os.read(fd, READ_BYTES)
            if not chunk:
                break
            self._typed += chunk
        line, newline, self._typed = self._typed.partition(b"\n")
        return (line + newline).decode(errors="replace")

    def _say(self, text: str) -> None:
        out = self._stdout or sys.stderr
        out.write(text + "\n")
        out.flush()


def _descriptor(stream: TextIO) -> int | None:
    """The file descriptor under `stream`, when the event loop can wait on it (POSIX), else None."""
    if os.name != "posix":
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both an OSError and a ValueError
        return None


_SKIPPED = object()
_CANCELLED = object()


def _choices(prop: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(value, label) pairs of an enum field, single or multiple select, titled or not."""
    source: Mapping[str, Any] = prop
    if prop.get("type") == "array" and isinstance(prop.get("items"), Mapping):
        source = prop["items"]
    for key in ("oneOf", "anyOf"):
        options = source.get(key)
        if isinstance(options, list):
            return [(str(o["const"]), str(o.get("title", o["const"]))) for o in options if "const" in o]
    values = source.get("enum")
    if isinstance(values, list):
        names = source.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        return [(str(v), str(label)) for v, label in zip(values, labels, strict=True)]
    return []


def _parse(raw: str, prop: Mapping[str, Any], choices: Sequence[tuple[str, str]]) -> FieldValue:
    kind = prop.get("type")
    if kind == "array":
        picked = [item.strip() for item in raw.split(",") if item.strip()]
        return [_pick(item, choices) for item in picked] if choices else picked
    if choices:
        return _pick(raw, choices)
    if kind == "boolean":
        lowered = raw.lower()
        if lowered in {"y", "yes", "true", "1"}:
            return True
        if lowered in {"n", "no", "false", "0"}:
            return False
        raise _Invalid("answer yes or no")
    if kind in ("integer", "number"):
        try:
            number: int | float = int(raw) if kind == "integer" else float(raw)
        except ValueError:
            raise _Invalid(f"expected {'a whole number' if kind == 'integer' else 'a number'}") from None
        low, high = prop.get("minimum"), prop.get("maximum")
        if (low is not None and number < low) or (high is not None and number > high):
            raise _Invalid(f"expected a value between {low} and {high}")
        return number
    return raw


def _pick(raw: str, choices: Sequence[tuple[str, str]]) -> str:
    for value, label in choices:
        if raw == value or raw.lower() == label.lower():
            return value
    raise _Invalid(f"expected one of {', '.join(value for value, _ in choices)}")
