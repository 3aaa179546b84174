"""Command groups loaded when they are used.

`virtbench --help` and every other command would otherwise import each group's module first:
the kvm group's libvirt helpers and CPU-model tables, the fleet's inventory and ssh drivers.
A :class:`LazyGroup` stands in for such a group in the top-level command: its name and help are
known without importing it (the top-level help lists it), and the first use (running one of its
commands, or asking for its help) imports the module and hands over to the real group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from virtbench.cli.errors import ErrorReportingGroup

__all__ = ["LazyGroup", "LazyRootGroup"]


# Contexts and commands are typer's own click (typer vendors it): typed Any here.
class LazyGroup(TyperGroup):
    """A named command group whose commands are a Typer app built by ``load`` on first use."""

    def __init__(self, name: str, help: str, load: Callable[[], typer.Typer]) -> None:
        super().__init__(name=name, help=help, short_help=help)
        self._load = load
        self._real: TyperGroup | None = None

    def real(self) -> TyperGroup:
        """The group itself (its module imported now, once)."""
        if self._real is None:
            command = typer.main.get_command(self._load())
            if not isinstance(command, TyperGroup):
                raise TypeError(f"{self.name}: {command!r} is not a command group")
            self._real = command
        return self._real

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        # The context names the real group, so click invokes it (and its help) from here on.
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        return self.real().invoke(ctx)

    def list_commands(self, ctx: Any) -> list[str]:
        return self.real().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.real().get_command(ctx, cmd_name)


class LazyRootGroup(ErrorReportingGroup):
    """The top-level group with its lazy groups (``lazy_groups``, set by the app's module)
    listed among its commands."""

    lazy_groups: Sequence[LazyGroup] = ()

    def list_commands(self, ctx: Any) -> list[str]:
        # After the others, where typer lists the groups added with add_typer.
        return [*super().list_commands(ctx), *(g.name or "" for g in self.lazy_groups)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        for group in self.lazy_groups:
            if group.name == cmd_name:
                return group
        return super().get_command(ctx, cmd_name)
