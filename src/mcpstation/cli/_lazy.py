"""Sub-commands that live in other modules, imported only when one of them runs.

`mcpstation --help` lists them from their one-line help; `mcpstation servers add ...` imports
`mcpstation.cli.servers` and hands it the arguments. Each entry names a `typer.Typer`: a group
of commands (`group=True`, as `add_typer` would add it, even with one command), or the app of one
command that is itself the sub-command.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer
from typer.core import MarkupMode, TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click import Command, Context  # typer's own click, whose classes TyperGroup extends


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A sub-command: the module and the `typer.Typer` attribute that define it, and its help line."""

    module: str
    attribute: str
    help: str
    group: bool = True


def lazy_group(commands: Mapping[str, LazyCommand], *, markup: MarkupMode = None) -> type[TyperGroup]:
    """A `TyperGroup` class (for `typer.Typer(cls=...)`) that also offers `commands`, loaded on use
    and shown with the help `markup` of the group (typer's `rich_markup_mode`)."""

    class LazyGroup(TyperGroup):
        def list_commands(self, ctx: Context) -> list[str]:
            return [*super().list_commands(ctx), *(name for name in commands if name not in self.commands)]

        def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
            found = super().get_command(ctx, cmd_name)
            if found is None and cmd_name in commands:  # listed in help; loaded only when it runs
                return TyperCommand(name=cmd_name, help=commands[cmd_name].help)
            return found

        def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
            if args and args[0] in commands and args[0] not in self.commands:
                self.add_command(_load(args[0], commands[args[0]], markup), args[0])
            return super().resolve_command(ctx, args)

    return LazyGroup


def _load(name: str, entry: LazyCommand, markup: MarkupMode) -> Command:
    sub_app = getattr(importlib.import_module(entry.module), entry.attribute)
    if not isinstance(sub_app, typer.Typer):
        raise TypeError(f"{entry.module}.{entry.attribute} is not a typer.Typer")
    command = typer.main.get_group(sub_app) if entry.group else typer.main.get_command(sub_app)
    command.name = name
    if not command.help:
        command.help = entry.help
    _set_markup(command, markup)
    return command


def _set_markup(command: Command, markup: MarkupMode) -> None:
    if isinstance(command, TyperGroup | TyperCommand):
        command.rich_markup_mode = markup
    for sub_command in getattr(command, "commands", {}).values():
        _set_markup(sub_command, markup)
