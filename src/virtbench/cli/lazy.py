"""Commands and command groups loaded when they are used.

Every top-level command of `virtbench` is declared in a module of its own group (virtbench.cli.run,
.results, .decide, ...; the kvm, hosts and assess commands in their packages), and importing
those would make `virtbench --help` and every command pay for all of them: typer builds each
command's options, and the modules bring their libraries. The top-level group
(:class:`LazyRootGroup`) holds instead a :class:`LazyCommand` or :class:`LazyGroup` per name:
its name and help are known without importing anything (the top-level help lists it), and the
first use — running it, or asking for its help — imports its module, builds the real command
(that one alone: :func:`command_of`; its plain option values are checked without pydantic,
virtbench.cli.option_values) and hands over to it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import CommandInfo, DefaultPlaceholder

from virtbench.cli.failures import ErrorReportingGroup
from virtbench.cli.option_values import (
    FlagsGroup,
    PlainValuesCommand,
    check_plain_values,
    plain_help_option,
    show_flags_as_flags,
)

__all__ = ["LazyCommand", "LazyGroup", "LazyRootGroup", "command_of", "group_of"]


def _as_ours(cls: Any, typers: type, ours: type) -> Any:
    """``ours`` where ``cls`` (a typer setting, maybe still its default placeholder) is typer's
    default class, else ``cls``."""
    value = cls.value if isinstance(cls, DefaultPlaceholder) else cls
    return ours if value in (None, typers) else cls


def _command_info(info: CommandInfo) -> CommandInfo:
    """``info`` built as a :class:`~virtbench.cli.option_values.PlainValuesCommand` unless it
    names a class of its own (a copy: the app stays as declared)."""
    info = copy.copy(info)
    info.cls = _as_ours(info.cls, TyperCommand, PlainValuesCommand)
    return info


def _with_our_classes(app: typer.Typer) -> typer.Typer:
    """A copy of ``app`` whose commands, at every level, are built as PlainValuesCommand and
    whose groups as FlagsGroup, where they name no class of their own."""
    app = copy.copy(app)
    app.info = copy.copy(app.info)
    app.info.cls = _as_ours(app.info.cls, TyperGroup, FlagsGroup)
    app.registered_commands = [_command_info(info) for info in app.registered_commands]
    groups = []
    for info in app.registered_groups:
        info = copy.copy(info)
        if info.typer_instance is not None:
            info.typer_instance = _with_our_classes(info.typer_instance)
        if not isinstance(info.cls, DefaultPlaceholder):  # named in add_typer
            info.cls = _as_ours(info.cls, TyperGroup, FlagsGroup)
        groups.append(info)
    app.registered_groups = groups
    return app


def command_of(app: typer.Typer, name: str) -> Any:
    """The command ``name`` of ``app``, built alone (building an app builds every command), as a
    :class:`~virtbench.cli.option_values.PlainValuesCommand` unless it names its own class."""
    for info in app.registered_commands:
        callback = info.callback
        declared = info.name or (typer.main.get_command_name(callback.__name__)
                                 if callback is not None else None)
        if declared == name:
            return typer.main.get_command_from_info(
                _command_info(info), pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode)
    raise LookupError(f"no command {name!r} in {app.info.name or app!r}")


def group_of(app: typer.Typer) -> TyperGroup:
    """``app`` as a command group, also when it has a single command (typer would make that
    command the whole app); its commands and groups as :func:`_with_our_classes` makes them."""
    app = _with_our_classes(app)
    command = typer.main.get_command(app)
    group = command if isinstance(command, TyperGroup) else typer.main.get_group(app)
    show_flags_as_flags(group.params)  # --install-completion, added after the group is built
    return group


# Contexts and commands are typer's own click (typer vendors it): typed Any here.
class LazyCommand(TyperCommand):
    """A named command whose module ``load`` imports on first use; ``load`` returns the Typer
    app that declares it (its other commands are not built)."""

    def __init__(self, name: str, help: str, load: Callable[[], typer.Typer]) -> None:
        super().__init__(name=name, help=help, short_help=help)
        self._load = load
        self._real: Any = None

    def real(self) -> Any:
        """The command itself (its module imported now, once)."""
        if self._real is None:
            self._real = command_of(self._load(), self.name or "")
        return self._real

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        # The context names the real command, so click invokes it (and its help) from here on.
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        return self.real().invoke(ctx)


class LazyGroup(TyperGroup):
    """A named command group whose commands are a Typer app built by ``load`` on first use."""

    def __init__(self, name: str, help: str, load: Callable[[], typer.Typer]) -> None:
        super().__init__(name=name, help=help, short_help=help)
        self._load = load
        self._real: TyperGroup | None = None

    def real(self) -> TyperGroup:
        """The group itself (its module imported now, once)."""
        if self._real is None:
            self._real = group_of(self._load())
        return self._real

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None,
                     **extra: Any) -> Any:
        return self.real().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        return self.real().invoke(ctx)

    def list_commands(self, ctx: Any) -> list[str]:
        return self.real().list_commands(ctx)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.real().get_command(ctx, cmd_name)


class LazyRootGroup(ErrorReportingGroup):
    """The top-level group: its commands are ``lazy`` (set by a subclass: the app's table),
    added in that order after any command registered the usual way (so click lists them, and
    suggests one for a typo, as it does any other)."""

    lazy: Sequence[LazyCommand | LazyGroup] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_plain_values(self.params)  # --debug (each command's own: command_of)
        show_flags_as_flags(self.params)
        for command in self.lazy:
            self.add_command(command)

    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))
