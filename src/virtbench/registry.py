"""The plugin mechanism: third-party plugins from one entry-point group, unique names, kinds.

Which plugins exist is said in one place, ``virtbench.plugins``: it imports the built-in modules
statically and hands them, with their base type, to :func:`classes` or :func:`instances`, which
add the third-party ones. Third-party packages register through one entry-point group::

    [project.entry-points."virtbench.plugins"]
    mine = "my_package.virtbench_plugin:register"

where ``register()`` returns an iterable of plugins of any kind: ``Workload`` and ``Lab``
subclasses, ``Parser`` and ``SectionPlugin`` instances. A plugin's kind is its type, so built-ins
and third parties are found the same way; a name registered twice is an error.

This module imports no plugin family and no project module by name: a third-party plugin's kind
is checked on the classes it already derives from (their module and name), so asking for
workloads never imports the report.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from importlib.metadata import entry_points
from typing import TypeVar

from virtbench.model import VirtbenchError

__all__ = ["ENTRY_POINT_GROUP", "KINDS", "Origin", "classes", "clear_cache", "instances"]

ENTRY_POINT_GROUP = "virtbench.plugins"

# The kinds a plugin may be, as (module, class) of its base: a plugin that derives from none of
# them is refused by name. Read from the plugin's own classes, so checking imports nothing.
KINDS = (
    ("virtbench.workloads.workload_contract", "Workload"),
    ("virtbench.labs.lab_contract", "Lab"),
    ("virtbench.parsers.parser_contract", "Parser"),
    ("virtbench.report.sections", "SectionPlugin"),
)

T = TypeVar("T")
Origin = str
"""Where a plugin came from: a built-in module or an entry point (``group:name = value``)."""


@cache
def _third_party() -> tuple[tuple[object, Origin], ...]:
    found: list[tuple[object, Origin]] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        origin = f"entry point {ep.name} = {ep.value}"
        try:
            register = ep.load()
            plugins = list(register())
        except Exception as exc:  # a broken third-party package must say which one it is
            raise VirtbenchError(f"plugin {origin} failed to load: "
                                 f"{type(exc).__name__}: {exc}") from exc
        for plugin in plugins:
            _check_kind(plugin, origin)
            found.append((plugin, origin))
    return tuple(found)


def _check_kind(plugin: object, origin: Origin) -> None:
    mro = plugin.__mro__ if isinstance(plugin, type) else type(plugin).__mro__
    if {(cls.__module__, cls.__qualname__) for cls in mro} & set(KINDS):
        return
    raise VirtbenchError(f"plugin {origin} returned {plugin!r}, which is none of: "
                         f"{', '.join(name for _module, name in KINDS)}")


def classes(base: type[T], builtins: Iterable[tuple[object, Origin]],
            key: Callable[[type[T]], str]) -> dict[str, type[T]]:
    """``builtins`` and every third-party subclass of ``base``, by ``key``."""
    found = [*builtins, *_third_party()]
    return _unique([(p, origin) for p, origin in found
                    if isinstance(p, type) and issubclass(p, base)], key, base.__name__)


def instances(base: type[T], builtins: Iterable[tuple[object, Origin]],
              key: Callable[[T], str]) -> dict[str, T]:
    """``builtins`` and every third-party instance of ``base``, by ``key``."""
    found = [*builtins, *_third_party()]
    return _unique([(p, origin) for p, origin in found if isinstance(p, base)], key,
                   base.__name__)


def _unique(found: Iterable[tuple[T, Origin]], key: Callable[[T], str],
            kind: str) -> dict[str, T]:
    result: dict[str, T] = {}
    origins: dict[str, Origin] = {}
    for plugin, origin in found:
        name = key(plugin)
        if name in result and result[name] is not plugin:
            raise VirtbenchError(f"two {kind} plugins are named '{name}': one from "
                                 f"{origins[name]}, one from {origin}; uninstall one")
        result[name], origins[name] = plugin, origin
    return dict(sorted(result.items()))


def clear_cache() -> None:
    """Forget the third-party plugins loaded (tests that install a plugin on the fly)."""
    _third_party.cache_clear()
