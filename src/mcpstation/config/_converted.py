"""A document converted to the native shape, remembering where each native place came from."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpstation.config._problem import Loc, Problem, unknown_key


@dataclass
class Converted:
    """Native-shape `data` plus `origins`: native place prefix → the user's place.

    A native place with no recorded prefix keeps its own name (the native shape).
    """

    data: dict[str, Any] = field(default_factory=dict)
    origins: dict[Loc, Loc] = field(default_factory=dict)

    def link(self, native: Loc, user: Loc) -> None:
        self.origins[native] = user

    def user_path(self, native: Loc) -> Loc:
        """Where `native` is in the user's file: the longest recorded prefix, rewritten."""
        for end in range(len(native), 0, -1):
            user = self.origins.get(native[:end])
            if user is not None:
                return (*user, *native[end:])
        return native

    def put(self, native: Loc, value: Any, *, user: Loc) -> None:
        """Set `value` at native place `native` (creating tables) and link it to `user`."""
        target = self.data
        for part in native[:-1]:
            target = target.setdefault(str(part), {})  # a table's keys are names, not list indexes
        target[native[-1]] = value  # type: ignore[index]  # native places end in a key
        self.link(native, user)


def expect_mapping(value: Any, where: Loc) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise Problem(where, f"expected a table (mapping), got {_kind(value)}.")
    return value


def expect_list(value: Any, where: Loc) -> list[Any]:
    if not isinstance(value, list):
        raise Problem(where, f"expected a list, got {_kind(value)}.")
    return value


def check_keys(table: Mapping[str, Any], valid: Iterable[str], where: Loc) -> None:
    """Raise on the first key of `table` not in `valid`, with a did-you-mean."""
    allowed = tuple(valid)
    for key in table:
        if key not in allowed:
            raise Problem((*where, key), unknown_key(key, allowed))


def _kind(value: Any) -> str:
    # The type only: values may be secrets.
    names = {dict: "a table", list: "a list", str: "a string", bool: "a boolean", type(None): "nothing"}
    return names.get(type(value), f"a {type(value).__name__}")
