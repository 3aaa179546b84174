"""Lab discovery: built-ins and plugins share the ``virtbench.labs`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from importlib.metadata import entry_points

from virtbench.discovery import discover
from virtbench.labs.base import Lab
from virtbench.model import VirtbenchError

__all__ = ["ENTRY_POINT_GROUP", "RENAMED_LABS", "all_labs", "get_lab"]

ENTRY_POINT_GROUP = "virtbench.labs"
# Former lab kinds still accepted (with a deprecation notice) in experiment files and manifests.
RENAMED_LABS = {"fs": "storage"}


def _builtin() -> Iterable[type[Lab]]:
    # Every module under virtbench.labs that exports LABS (a tuple of Lab subclasses).
    import virtbench.labs as package

    yield from discover(package, "LABS")


@cache
def all_labs() -> dict[str, type[Lab]]:
    loaders: list[Callable[[], Iterable[type[Lab]]]] = [_builtin]
    loaders += [ep.load() for ep in entry_points(group=ENTRY_POINT_GROUP)]
    found: dict[str, type[Lab]] = {}
    for load in loaders:
        for cls in load():
            found[cls.name] = cls
    return dict(sorted(found.items()))


def get_lab(name: str) -> type[Lab]:
    labs = all_labs()
    if name not in labs:
        raise VirtbenchError(f"unknown lab '{name}'; known labs: {', '.join(labs)}")
    return labs[name]
