"""The one registry: every workload, lab, parser and report section, built-in or third-party.

Built-ins are the modules listed in ``BUILTIN_MODULES`` (imported on first use; each exports
its plugins in ``WORKLOADS``, ``LABS``, ``PARSERS`` or ``SECTIONS``). Third-party packages
register through one entry-point group::

    [project.entry-points."virtbench.plugins"]
    mine = "my_package.virtbench_plugin:register"

where ``register()`` returns an iterable of plugins of any kind: ``Workload`` and ``Lab``
subclasses, ``Parser`` and ``SectionPlugin`` instances. A plugin's kind is its type, so built-ins
and third parties are found the same way; a name registered twice is an error.

This module imports no plugin family: callers pass the base type they want and the name built-ins
export it under (``classes(Lab, "LABS", ...)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from importlib import import_module
from importlib.metadata import entry_points
from typing import TypeVar

from virtbench.model import VirtbenchError

__all__ = ["BUILTIN_MODULES", "ENTRY_POINT_GROUP", "classes", "clear_cache", "instances"]

ENTRY_POINT_GROUP = "virtbench.plugins"

# What each built-in module exports, by the name it exports it under. Grouped so that asking
# for workloads imports no report module (the report's statistics take seconds to import).
BUILTIN_MODULES: dict[str, tuple[str, ...]] = {
    "WORKLOADS": (
        "virtbench.workloads.command",
        "virtbench.workloads.assess_probes",
        "virtbench.workloads.cpu.aes",
        "virtbench.workloads.cpu.crc32c",
        "virtbench.workloads.media.x265",
        "virtbench.workloads.net.packet_rate",
        "virtbench.workloads.net.qos_probe",
        "virtbench.workloads.net.qos_transfer",
        "virtbench.workloads.net.router",
        "virtbench.workloads.storage",
        "virtbench.workloads.storage.fio_capacity",
        "virtbench.workloads.web",
    ),
    "LABS": (
        "virtbench.labs.storage",
        "virtbench.labs.assess_probes",
        "virtbench.labs.host",
        "virtbench.labs.kvm",
        "virtbench.labs.net.crosshost",
        "virtbench.labs.net.router",
        "virtbench.labs.net.vswitch",
        "virtbench.labs.web",
    ),
    "PARSERS": (
        "virtbench.parsers.bonnie",
        "virtbench.parsers.fio",
        "virtbench.parsers.iperf3",
        "virtbench.parsers.irtt",
        "virtbench.parsers.varnishstat",
    ),
    "SECTIONS": (
        "virtbench.report.sections.capacity",
        "virtbench.report.sections.hosts",
        "virtbench.report.sections.net_qos",
        "virtbench.report.sections.storage",
        "virtbench.report.sections.vnf_scalability",
        "virtbench.report.sections.web",
    ),
}

# The kinds a third-party plugin may be, by (module, class): checked only for entry points, so
# listing workloads never imports the report.
_KINDS = (
    ("virtbench.workloads.base", "Workload"),
    ("virtbench.labs.base", "Lab"),
    ("virtbench.parsers.base", "Parser"),
    ("virtbench.report.sections", "SectionPlugin"),
)

T = TypeVar("T")
Origin = str
"""Where a plugin came from: a built-in module or an entry point (``group:name = value``)."""


@cache
def _builtin(export: str) -> tuple[tuple[object, Origin], ...]:
    return tuple((plugin, name) for name in BUILTIN_MODULES[export]
                 for plugin in getattr(import_module(name), export))


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


def _plugins(export: str) -> tuple[tuple[object, Origin], ...]:
    return _builtin(export) + _third_party()


def _check_kind(plugin: object, origin: Origin) -> None:
    bases = [getattr(import_module(module), name) for module, name in _KINDS]
    if any(isinstance(plugin, base) or (isinstance(plugin, type) and issubclass(plugin, base))
           for base in bases):
        return
    raise VirtbenchError(f"plugin {origin} returned {plugin!r}, which is none of: "
                         f"{', '.join(name for _module, name in _KINDS)}")


def classes(base: type[T], export: str, key: Callable[[type[T]], str]) -> dict[str, type[T]]:
    """Every registered subclass of ``base`` (built-ins export it as ``export``), by ``key``."""
    return _unique([(p, origin) for p, origin in _plugins(export)
                    if isinstance(p, type) and issubclass(p, base)], key, base.__name__)


def instances(base: type[T], export: str, key: Callable[[T], str]) -> dict[str, T]:
    """Every registered instance of ``base`` (built-ins export it as ``export``), by ``key``."""
    return _unique([(p, origin) for p, origin in _plugins(export) if isinstance(p, base)], key,
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
    """Forget what was loaded (tests that install a plugin on the fly)."""
    _builtin.cache_clear()
    _third_party.cache_clear()
