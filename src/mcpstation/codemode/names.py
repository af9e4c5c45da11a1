"""Python names for public tool names: what a script calls each tool it may see, and back.

A public name is `^[A-Za-z0-9_-]{1,64}$`; a Python function name may not hold `-`, start with a
digit or be a keyword or a name the sandbox already gives meaning to. Each such character becomes
`_`, a leading digit or a reserved word gets a `t_` prefix, and when two public names would map to
the same Python name, the later ones (in name order) are left without a function: they stay
callable with `call_tool(name, arguments)`, and the stub header says so.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

RESERVED = frozenset({"call_tool", "search_tools", "print", "asyncio", "json", "re", "math", "tools", "Any"})
"""Names the script's own prelude gives meaning to: no tool may shadow them."""

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")


def python_name(public: str) -> str:
    """The Python identifier a tool named `public` is called by in a script."""
    name = _NOT_IDENTIFIER.sub("_", public)
    if not name or name[0].isdigit() or keyword.iskeyword(name) or name in RESERVED or name.startswith("__"):
        name = f"t_{name}"
    return name


@dataclass(frozen=True, slots=True)
class ToolNames:
    """Both directions between public tool names and script function names."""

    by_function: Mapping[str, str]  # python name -> public name
    uncallable: tuple[str, ...]  # public names whose python name another tool took first

    @classmethod
    def of(cls, public_names: Iterable[str]) -> ToolNames:
        by_function: dict[str, str] = {}
        uncallable: list[str] = []
        for public in sorted(public_names):
            function = python_name(public)
            if function in by_function:
                uncallable.append(public)
            else:
                by_function[function] = public
        return cls(by_function, tuple(uncallable))

    def public(self, function: str) -> str | None:
        return self.by_function.get(function)
