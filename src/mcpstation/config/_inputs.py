"""VS Code's `inputs`: values a config asks the user for (`${input:api-key}`).

A value comes from the environment variable `MCPSTATION_INPUT_<ID>` (the id upper-cased, every
other character `_`), else from a terminal prompt when one is there, else from the input's
`default`; otherwise reading the file fails, naming the input and its description.
"""

from __future__ import annotations

import getpass
import logging
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from mcpstation.config._problem import Loc, Problem, render_path
from mcpstation.config._variables import input_env_name

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class InputSpec:
    """One entry of a VS Code `inputs` list."""

    id: str
    description: str | None = None
    password: bool = False
    default: str | None = None
    options: tuple[str, ...] = ()


class InputAsker(Protocol):
    """Asks a person for an input's value; None when they gave none."""

    def __call__(self, spec: InputSpec) -> str | None: ...


def terminal_asker() -> InputAsker | None:
    """A prompt on the terminal when stdin is one, else None (nobody to ask)."""
    if not sys.stdin.isatty():
        return None
    return _ask_on_terminal


def _ask_on_terminal(spec: InputSpec) -> str | None:
    label = spec.description or spec.id
    hint = f" [{spec.default}]" if spec.default and not spec.password else ""
    choices = f" ({' / '.join(spec.options)})" if spec.options else ""
    prompt = f"{label}{choices}{hint}: "
    try:
        answer = getpass.getpass(prompt, stream=sys.stderr) if spec.password else _plain_input(prompt)
    except EOFError:
        return None
    return answer or spec.default


def _plain_input(prompt: str) -> str:
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line.rstrip("\n")


def input_specs(raw: Any, where: Loc) -> dict[str, InputSpec]:
    """The `inputs` list of a VS Code file; malformed entries are skipped (and reported at DEBUG)."""
    if not isinstance(raw, list):
        if raw is not None:
            logger.debug("%s: not a list; no inputs read", render_path(where))
        return {}
    specs: dict[str, InputSpec] = {}
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("id"), str):
            logger.debug("%s: an input without an id; skipped", render_path((*where, index)))
            continue
        description, default = item.get("description"), item.get("default")
        options = item.get("options")
        specs[item["id"]] = InputSpec(
            id=item["id"],
            description=description if isinstance(description, str) else None,
            password=item.get("password") is True,
            default=default if isinstance(default, str) else None,
            options=tuple(str(option) for option in options) if isinstance(options, list) else (),
        )
    return specs


class Inputs:
    """Gives each referenced input its value, asking at most once per input."""

    def __init__(self, specs: Mapping[str, InputSpec], environ: Mapping[str, str], ask: InputAsker | None) -> None:
        self._specs = specs
        self._environ = environ
        self._ask = ask
        self._values: dict[str, str] = {}

    def lookup(self, input_id: str, where: Loc) -> str:
        """The value of `input_id`, referenced at `where`.

        Raises:
            Problem: nothing gives the input a value.
        """
        if input_id in self._values:
            return self._values[input_id]
        env_name = input_env_name(input_id)
        spec = self._specs.get(input_id)
        value = self._environ.get(env_name)
        if value is None and self._ask is not None:
            value = self._ask(spec or InputSpec(id=input_id))
        if value is None and spec is not None:
            value = spec.default
        if value is None:
            described = f" ({spec.description!r})" if spec is not None and spec.description else ""
            undefined = "" if spec is not None else " It is not defined in the file's `inputs` either."
            raise Problem(
                where,
                f"input {input_id!r}{described} has no value.{undefined} "
                f"Set {env_name} to give it, or run in a terminal to be asked.",
            )
        self._values[input_id] = value
        return value
