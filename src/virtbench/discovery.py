"""Find built-in plugins: modules of a package that export a named tuple of classes."""

from __future__ import annotations

import pkgutil
from collections.abc import Iterator
from importlib import import_module
from types import ModuleType
from typing import Any

__all__ = ["discover"]


def discover(package: ModuleType, attribute: str) -> Iterator[Any]:
    """Yield the items of ``module.<attribute>`` for every module in ``package`` (recursively)."""
    for info in sorted(pkgutil.walk_packages(package.__path__, package.__name__ + "."),
                       key=lambda i: i.name):
        if info.name.rsplit(".", 1)[-1].startswith("_"):
            continue
        module = import_module(info.name)
        yield from getattr(module, attribute, ())
