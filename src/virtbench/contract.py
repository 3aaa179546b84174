"""The plugin contract every kind of plugin shares: tools, parameters, knobs and realisations.

Workloads, labs, parsers and report sections all build on these names; they sit on the bottom
floor beside ``model`` so that no plugin family imports another to reach them.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from virtbench.model import PORT_MAX, PORT_MIN, VirtbenchError

__all__ = [
    "MAX_SECONDS",
    "MIN_SIZE_MIB",
    "Knob",
    "NoParams",
    "NumbersNotBooleans",
    "Params",
    "Port",
    "Realisation",
    "SshWord",
    "Tool",
    "missing_tools",
    "not_an_option",
    "parsed_by",
    "types_of",
]


@dataclass(frozen=True)
class Tool:
    """An external program a plugin needs, and the Debian package that provides it."""

    binary: str
    package: str
    purpose: str = ""


def missing_tools(owner: str, which: Callable[[str], str | None], tools: Iterable[Tool],
                  where: str = "") -> list[str]:
    """One problem per tool ``which`` cannot find, naming the Debian package to install."""
    return [f"{owner}: '{tool.binary}' not found{where}; install the Debian package "
            f"'{tool.package}' (apt-get install {tool.package})"
            for tool in tools if which(tool.binary) is None]


MAX_SECONDS = 30 * 24 * 3600.0
"""The longest duration, time limit or budget a parameter may give (30 days): longer ones are
typos, and overflow the timers they are handed to."""

MIN_SIZE_MIB = 1 / 1024
"""The smallest buffer or data size a parameter may give, in MiB (1 KiB): below it a workload
measures next to nothing (1e-12 MiB measured a 0-byte buffer as throughput 0)."""

Port = Annotated[int, Field(ge=PORT_MIN, le=PORT_MAX, description="TCP or UDP port, 1-65535")]
"""A port number, wherever one is given (parameters, inventories, options)."""

FINITE = ConfigDict(allow_inf_nan=False)
"""Numbers are finite: NaN and ±Infinity (YAML's .nan, .inf; "nan" as text) are refused."""


def not_an_option(value: str, what: str) -> str:
    """A host name, address or user that reaches ssh's command line: a leading '-' would be
    read as an option (``-oProxyCommand=...``), so it is refused where the value is read."""
    if value.startswith("-"):
        raise ValueError(f"{what} {value!r} starts with '-': ssh would read it as an option")
    return value


SshWord = Annotated[str, AfterValidator(lambda value: not_an_option(value, "the value"))]
"""A host name, address or login for ssh (a parameter): never a leading '-'."""


def types_of(annotation: Any) -> list[Any]:
    """The types a field may hold: Annotated unwrapped, unions split."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return types_of(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        return [t for arg in get_args(annotation) for t in types_of(arg)]
    return [annotation]


def _takes_a_boolean(annotation: Any) -> bool:
    """Whether a bool is a fair value of a field: it takes bools, anything, or no number."""
    kinds = types_of(annotation)
    return bool in kinds or Any in kinds or not (int in kinds or float in kinds)


def _element_type(annotation: Any) -> Any:
    """The element type of a list or tuple field (Any when it is neither)."""
    lists = [t for t in types_of(annotation) if get_origin(t) in (list, tuple)]
    return get_args(lists[0])[0] if len(lists) == 1 and get_args(lists[0]) else Any


class NumbersNotBooleans(BaseModel):
    """A model whose number fields refuse ``true``/``false``: pydantic takes a bool for an int
    or a float (True is 1 in Python), so ``repetitions: true`` would run once. A field that
    also takes a bool (``int | bool``) or anything (``Any``) is left alone; a list of numbers
    refuses a bool among its items."""

    # Built when first used, not when defined: `run FILE --check` validates the experiment and
    # its plugins' parameters and never the targets' or a search's other models (0.6 % of its
    # instructions; the nested models' schemas are made once, inside the experiment's).
    model_config = ConfigDict(defer_build=True)

    @field_validator("*", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: Any, info: ValidationInfo) -> Any:
        field_info = cls.model_fields.get(info.field_name or "")
        if field_info is None:
            return value
        annotation = field_info.annotation
        if isinstance(value, bool) and not _takes_a_boolean(annotation):
            raise ValueError(f"{str(value).lower()} is a yes/no value, not a number")
        if isinstance(value, list | tuple) and any(isinstance(v, bool) for v in value) \
                and not _takes_a_boolean(_element_type(annotation)):
            raise ValueError("a yes/no value (true/false) among numbers")
        return value


class Params(NumbersNotBooleans):
    """The base of every plugin's parameters (workloads, labs, targets): an unknown field is
    refused by name, every number must be finite and no number is a yes/no value; each
    subclass bounds its fields to values that mean something physically (a size of at least a
    KiB, a duration within MAX_SECONDS)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class NoParams(Params):
    """The parameters of a plugin that takes none (any given parameter is an error)."""


@dataclass
class Realisation:
    """How a variant's knobs were realised for one workload, and what could not be expressed.

    The runner computes it once per (variant, workload), hands it whole to every trial
    (``TrialContext.realisation``) and stores it with the run.
    """

    mechanism: str = "none (the workload runs unchanged)"
    env: dict[str, str | None] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    limitations: list[str] = field(default_factory=list)


def parsed_by(parse: Callable[[Any], object], base: Any = Any) -> Any:
    """A knob type: ``base`` (checked strictly), then the realiser's own parser must accept it.

    The parser's error (a ``VirtbenchError`` or ``ValueError``) becomes the problem reported.
    """

    def check(value: Any) -> Any:
        try:
            parse(value)
        except VirtbenchError as exc:  # the parser's own words, as a validation message
            raise ValueError(str(exc)) from None
        return value

    return Annotated[base, AfterValidator(check)]


@dataclass(frozen=True)
class Knob:
    """A variant knob a lab or workload understands, declared once by whoever realises it.

    ``virtbench run`` refuses a variant knob that no plugin of the experiment declares, and a
    value that the declaring plugin's ``type`` or ``choices`` do not accept, before anything
    starts.
    """

    name: str
    meaning: str
    """One line: what the knob changes, with its unit."""
    type: Any = Any
    """What pydantic accepts, strictly (``int``, ``NonNegativeFloat``, ``parsed_by(f)``...)."""
    choices: tuple[Any, ...] = ()
    """When given, the only accepted values."""
    values: str = ""
    """How to write a value, for listings; derived from ``choices`` or ``type`` when empty."""
    _adapter: TypeAdapter[Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(self.type, config=FINITE)
        except PydanticUserError:  # a model type carries its own config
            adapter = TypeAdapter(self.type)
        object.__setattr__(self, "_adapter", adapter)

    @property
    def accepts(self) -> str:
        """The accepted values in words: ``linux-bridge | ovs``, ``int ≥ 0``."""
        if self.values:
            return self.values
        if self.choices:
            return " | ".join(str(choice) for choice in self.choices)
        return describe_type(self.type)

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not accepted, or None when it is."""
        if self.choices:
            if value in self.choices:
                return None
            return f"must be one of {self.accepts}"
        try:
            self._adapter.validate_python(value, strict=True)
        except ValidationError as exc:
            return "; ".join(_message(error) for error in exc.errors())
        return None


def _message(error: Any) -> str:
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


_BOUNDS = (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"))


def describe_type(annotation: Any) -> str:
    """A short reading of a type annotation for listings: ``int ≥ 0``, ``list of str``."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if annotation is Any:
        return "any value"
    if origin is Annotated:
        bounds = [f"{sign} {getattr(meta, name)}" for meta in args[1:]
                  for name, sign in _BOUNDS if getattr(meta, name, None) is not None]
        return " ".join([describe_type(args[0]), *bounds])
    if origin is Literal:
        return " | ".join(str(arg) for arg in args)
    if origin in (Union, types.UnionType):
        return " | ".join(describe_type(arg) for arg in args)
    if origin in (list, tuple) and args:
        return f"list of {describe_type(args[0])}"
    if origin is dict:
        return "mapping"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation)
