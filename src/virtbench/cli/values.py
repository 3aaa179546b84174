"""Plain option values checked without pydantic.

typer (0.29) checks every option and argument value that is not already a boolean through a
pydantic TypeAdapter, built when the command reads its options; importing pydantic for it costs
about 0.15 s of CPU here, more than the rest of `virtbench runs` outside SQLAlchemy, and the
store, the report and the exporters need no pydantic of their own. For the values a command
line gives — strings — of a parameter declared ``str``, ``Path`` or ``list[str]`` (with no
parser, choices or file mode), that check is the identity, ``Path(value)`` and then typer's own
path checks, or a list of the strings; a boolean's is the identity; a single value read by the
parameter's own ``parser`` is what the parser returns (typer's adapter is the parser and
``Any``); and an absent value (``--help`` of every command, before it is asked) stays absent.
:func:`check_plain_values` gives such parameters a check doing exactly that
(:class:`PlainValuesCommand`: a command's, and its ``--help``); any other value (an environment
variable's string for a flag, say) and every other parameter keep typer's.

This leans on typer's internals (a parameter's ``type_descriptor`` and ``_runtime_param``, and
``typer._param_types.coerce_cli_path``): where they are not as expected, nothing is changed and
typer checks as it always does. `tests/unit/cli/test_values.py` compares both checks, and
`tests/unit/cli/test_root.py` fails when `runs` imports pydantic again.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any, get_origin

from typer.core import TyperCommand

__all__ = ["PlainValue", "PlainValuesCommand", "check_plain_values", "plain_help_option"]


class PlainValue:
    """typer's runtime check of one ``bool``, ``str``, ``Path`` or ``list[str]`` parameter, or
    of one whose own parser reads a single value, minus pydantic for the plain values; ``kind``
    is ``"bool"``, ``"str"``, ``"path"``, ``"list"`` or ``"parsed"``."""

    def __init__(self, kind: str, descriptor: Any) -> None:
        self.kind = kind
        self.descriptor = descriptor
        self._typers: Any = None

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
                return self._typer().coerce(value, param=param, ctx=ctx)
        if self.kind == "bool" and isinstance(value, bool):
            return value
        if self.kind == "list" and isinstance(value, list | tuple) and all(
                isinstance(item, str) for item in value):
            return list(value)
        if not multi and isinstance(value, str):
            if self.kind == "str":
                return value
            # A path typer's check would name as given: '' or 'a/' stat as '.' and 'a', and
            # its messages name the string given, so those keep typer's check.
            if self.kind == "path" and str(Path(value)) == value:
                from typer._param_types import coerce_cli_path

                try:
                    return coerce_cli_path(Path(value), self.descriptor.parameter_info,
                                           path_type=Path, param=param, ctx=ctx)
                except (ValueError, AssertionError):  # typer's check words these (a NUL)
                    pass
        return self._typer().coerce(value, param=param, ctx=ctx)

    def _typer(self) -> Any:
        """typer's own check, for any other value (pydantic imported now)."""
        if self._typers is None:
            from typer._coercion import build_runtime_param

            self._typers = build_runtime_param(self.descriptor)
        return self._typers


def _kind(param: Any) -> str | None:
    descriptor: Any = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    if (info is None or getattr(param, "_runtime_param", False) is not None
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
        return "path"
    if annotation == list[str]:
        return "list"
    return None


def check_plain_values(params: Iterable[Any]) -> None:
    """Give each plain parameter of ``params`` a :class:`PlainValue` check."""
    for param in params:
        kind = _kind(param)
        if kind is not None:
            param._runtime_param = PlainValue(kind, param.type_descriptor)


class PlainValuesCommand(TyperCommand):
    """A command whose plain parameters, its ``--help`` too, are checked without pydantic
    (virtbench.cli.lazy builds every top-level command as one unless it names its own class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        check_plain_values(self.params)

    def get_help_option(self, ctx: Any) -> Any:
        return plain_help_option(super().get_help_option(ctx))


def plain_help_option(option: Any) -> Any:
    """A command's ``--help`` option (made on first use, by click) with a plain check."""
    if option is not None:
        check_plain_values([option])
    return option
