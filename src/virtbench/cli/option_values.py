"""Plain option values checked without pydantic, and boolean flags shown as flags in help.

typer (0.29) checks every option and argument value that is not already a boolean through a
pydantic TypeAdapter, built when the command reads its options; importing pydantic for it costs
about 0.15 s of CPU here, more than the rest of `virtbench runs` outside SQLAlchemy, and the
store, the report and the exporters need no pydantic of their own. For the values a command
line gives — strings — of a parameter declared ``str`` or ``list[str]`` (with no parser or
choices), that check is the identity or a list of the strings; a boolean's is the identity; a
single value read by the parameter's own ``parser`` is what the parser returns (typer's adapter
is the parser and ``Any``); a path given to a ``Path`` that asks nothing of it (typer's
defaults: `report -o FILE`) is the path, after the stat typer makes (refused only when the
file exists and cannot be read); and an absent value (``--help`` of every command, before it
is asked; a ``Path`` not given) stays absent. :func:`check_plain_values` gives such parameters
a check doing exactly that (:class:`PlainValuesCommand`: a command's, and its ``--help``); any
other value (an environment variable's string for a flag, a path with options or one typer
refuses) and every other parameter keep typer's.

Only public names of typer's public modules are used (``typer.core``'s parameter classes, their
``type_descriptor`` and ``get_runtime_param``, whose instance attribute here shadows the class's
method; typer's own check is that method called on the class), no private module of typer or
click (tests/unit/cli/test_no_private_imports.py): where a parameter is not as expected, nothing
is changed and typer checks as it always does. `tests/unit/cli/test_option_values.py` compares both
checks, and `tests/unit/cli/test_root.py` fails when `runs` imports pydantic again.

typer 0.29 also shows a boolean flag's type in help as if it took a value (``--check <bool>``);
:func:`show_flags_as_flags` gives each flag an empty metavar (click's public ``metavar``), so
help shows ``--check`` and ``--debug/--no-debug`` (tests/unit/cli/test_help_flags.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_origin

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["FlagsGroup", "PlainValue", "PlainValuesCommand", "check_plain_values",
           "plain_help_option", "refuse_non_text", "show_flags_as_flags", "typers_check"]


def typers_check(param: Any) -> Any:
    """typer's own runtime check of ``param`` (pydantic imported now), built by typer."""
    return type(param).get_runtime_param(param)


class PlainValue:
    """typer's runtime check of one ``bool``, ``str``, ``Path`` or ``list[str]`` parameter, or
    of one whose own parser reads a single value, minus pydantic for the plain values (for a
    ``Path``, only its absence); ``kind`` is ``"bool"``, ``"str"``, ``"path"``, ``"list"`` or
    ``"parsed"``."""

    def __init__(self, kind: str, descriptor: Any) -> None:
        self.kind = kind
        self.descriptor = descriptor

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi = param.multiple or param.nargs == -1
        if value is None:  # as typer: an absent multi-value parameter is empty
            return () if multi else None
        if self.kind == "parsed" and not multi:
            # typer's check is pydantic calling the parser and nothing else (Any after it);
            # a refusal is left to that check, which words it
            try:
                return self.descriptor.parameter_info.parser(value)
            except Exception:  # typer's check raises it, in its own words
                return typers_check(param).coerce(value, param=param, ctx=ctx)
        if self.kind == "bool" and isinstance(value, bool):
            return value
        if self.kind == "list" and isinstance(value, list | tuple) and all(
                isinstance(item, str) for item in value):
            return list(value)
        if self.kind == "str" and not multi and isinstance(value, str):
            return value
        if self.kind == "path" and not multi and isinstance(value, str):
            path = _unchecked_path(value, self.descriptor.parameter_info)
            if path is not None:
                return path
        return typers_check(param).coerce(value, param=param, ctx=ctx)


def _unchecked_path(value: str, info: Any) -> Path | None:
    """A path given to a parameter that asks nothing of it (typer's defaults: it need not
    exist, may be a file or a directory, is not resolved, is no dash), as typer's check gives
    it: the path, unless it exists and cannot be read; None for anything else (another
    option, a file this user may not read, a name the system refuses: a NUL), left to typer's
    check, which words the refusal."""
    asks = (getattr(info, name, True) for name in ("exists", "writable", "resolve_path",
                                                    "allow_dash"))
    allows = (getattr(info, name, False) for name in ("file_okay", "dir_okay"))
    if any(asks) or not all(allows) or getattr(info, "path_type", True) is not None:
        return None
    path = Path(value)
    try:
        os.stat(path)
    except OSError:  # typer's check: a path not there (or not to be looked at) as it is
        return path
    except ValueError:
        return None
    return path if not getattr(info, "readable", True) or os.access(path, os.R_OK) else None


def _kind(param: Any) -> str | None:
    descriptor: Any = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    if (info is None or not callable(getattr(type(param), "get_runtime_param", None))
            or "get_runtime_param" in vars(param)
            or getattr(descriptor, "file_annotation", True) is not None
            or not hasattr(info, "parser")):
        return None  # not typer's parameter as this module knows it, or already checked
    annotation = descriptor.annotation
    if info.parser is not None:
        return None if get_origin(annotation) in (list, tuple) else "parsed"
    if annotation is bool:
        return "bool"
    if annotation is str:
        return "str"
    if annotation is Path and getattr(info, "path_type", True) is None:
        return "path"  # an absent one stays absent; a path given is checked as typer does
    if annotation == list[str]:
        return "list"
    return None


def check_plain_values(params: Iterable[Any]) -> None:
    """Give each plain parameter of ``params`` a :class:`PlainValue` check."""
    for param in params:
        kind = _kind(param)
        if kind is not None:
            plain = PlainValue(kind, param.type_descriptor)
            param.get_runtime_param = lambda plain=plain: plain


def show_flags_as_flags(params: Iterable[Any]) -> None:
    """A flag (a boolean, a ``--x/--no-x`` pair, a count) takes no value: its help shows none."""
    for param in params:
        if getattr(param, "is_flag", False) and getattr(param, "metavar", "") is None:
            param.metavar = ""


class PlainValuesCommand(TyperCommand):
    """A command whose plain parameters, its ``--help`` too, are checked without pydantic and
    whose flags are shown as flags (virtbench.cli.lazy builds every command as one unless it
    names its own class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_plain_values(self.params)
        show_flags_as_flags(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))

    markers: tuple[str, ...] = ()
    """Values the command itself puts among its arguments (compare's line between its sides),
    which hold a NUL so that no argument can be one: exempt from the text rule."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        rest: list[str] = super().parse_args(ctx, args)
        refuse_non_text(self.params, ctx, self.markers)
        return rest


def refuse_non_text(params: Iterable[Any], ctx: Any, markers: tuple[str, ...] = ()) -> None:
    """Every text value of the command line (a ``str``, or the strings of a list; a ``Path``
    is a file name, which may hold any byte) is text by :mod:`virtbench.inputs.unicode_text`:
    an undecodable byte (``$'\\xff'``) is refused as a bad value (exit 2) naming the option,
    before the command passes it to a database, libvirt or a child process."""
    from virtbench.inputs.unicode_text import text_problem

    encoding = sys.getfilesystemencoding()  # the command line's (UTF-8 but in a C locale)
    for param in params:
        value = ctx.params.get(param.name)
        for item in value if isinstance(value, list | tuple) else [value]:
            problem = (text_problem(item, encoding)
                       if isinstance(item, str) and item not in markers else None)
            if problem is not None:
                raise typer.BadParameter(problem, ctx=ctx, param=param)


class FlagsGroup(TyperGroup):
    """A command group whose flags, its ``--help`` too, are shown as flags."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        show_flags_as_flags(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))


def plain_help_option(option: Any) -> Any:
    """A command's ``--help`` option (made on first use, by click) with a plain check, shown as
    the flag it is."""
    if option is not None:
        check_plain_values([option])
        show_flags_as_flags([option])
    return option
