"""Every plugin virtbench has, assembled in one place.

The built-in workloads, labs, parsers and report sections are the modules imported below, each
exporting its plugins as ``WORKLOADS``, ``LABS``, ``PARSERS`` or ``SECTIONS``; third-party
plugins join them through ``virtbench.registry`` (the ``virtbench.plugins`` entry-point group).
The imports are static, so the import graph that tests/unit/test_layers.py checks sees them, and
inside one function per kind, so a lookup imports only the kind it asks for (a CPU experiment's
``run --check`` imports no report section, and no command pays for plugins it does not use).

This module sits above the plugin families and below those who look plugins up (the spec
loader, the runner, fleet, the CLI): pyproject.toml's layers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache
from types import ModuleType
from typing import TYPE_CHECKING

from virtbench import registry
from virtbench.model import Metric, VirtbenchError

if TYPE_CHECKING:
    from virtbench.analysis import Analysis
    from virtbench.labs.lab_contract import Lab
    from virtbench.parsers.parser_contract import Parser
    from virtbench.report.sections import Section, SectionPlugin
    from virtbench.workloads.workload_contract import Workload

__all__ = ["all_labs", "all_parsers", "all_sections", "all_workloads", "build_sections",
           "clear_cache", "declared_metric", "get_lab", "get_parser", "get_workload"]


def _exported(export: str, modules: Iterable[ModuleType]) -> tuple[tuple[object, str], ...]:
    return tuple((plugin, module.__name__) for module in modules
                 for plugin in getattr(module, export))


@cache
def _builtin_workloads() -> tuple[tuple[object, str], ...]:
    from virtbench.workloads import assess_probes, command, storage, web
    from virtbench.workloads.cpu import aes, crc32c
    from virtbench.workloads.media import x265
    from virtbench.workloads.net import packet_rate, qos_probe, qos_transfer, router
    from virtbench.workloads.storage import fio_capacity

    return _exported("WORKLOADS", (command, assess_probes, aes, crc32c, x265, packet_rate,
                                   qos_probe, qos_transfer, router, storage, fio_capacity, web))


@cache
def _builtin_labs() -> tuple[tuple[object, str], ...]:
    from virtbench.labs import assess_nic_guest, assess_scratch, guest, host, kvm, storage_lab, web
    from virtbench.labs.net import crosshost, guest_switch, router_guest, router_lab, vswitch

    return _exported("LABS", (storage_lab, assess_scratch, assess_nic_guest, host, kvm, guest,
                              crosshost, router_lab, vswitch, guest_switch, router_guest, web))


@cache
def _builtin_parsers() -> tuple[tuple[object, str], ...]:
    from virtbench.parsers import bonnie, fio, iperf3, irtt, varnishstat

    return _exported("PARSERS", (bonnie, fio, iperf3, irtt, varnishstat))


@cache
def _builtin_sections() -> tuple[tuple[object, str], ...]:
    from virtbench.report.sections import capacity, hosts, net_qos, storage, vnf_scalability, web

    return _exported("SECTIONS", (capacity, hosts, net_qos, storage, vnf_scalability, web))


def all_workloads() -> dict[str, type[Workload]]:
    from virtbench.workloads.workload_contract import Workload

    return registry.classes(Workload, _builtin_workloads(),  # type: ignore[type-abstract]
                            lambda cls: cls.name)


def all_labs() -> dict[str, type[Lab]]:
    from virtbench.labs.lab_contract import Lab

    return registry.classes(Lab, _builtin_labs(), lambda cls: cls.name)  # type: ignore[type-abstract]


def all_parsers() -> dict[str, Parser]:
    from virtbench.parsers.parser_contract import Parser

    return registry.instances(Parser, _builtin_parsers(), lambda parser: parser.tool)


def all_sections() -> dict[str, SectionPlugin]:
    from virtbench.report.sections import SectionPlugin

    return registry.instances(SectionPlugin, _builtin_sections(), lambda plugin: plugin.name)


def _named(kind: str, found: Mapping[str, object], name: str, known: str) -> None:
    if name not in found:
        raise VirtbenchError(f"{kind} '{name}'; {known}: {', '.join(found)}")


def _builtin_workload_module(name: str) -> ModuleType | None:
    """The one module of a built-in workload's name (None: not built in). A CPU experiment's
    `run --check` then imports no web load generator or NumPy with the other workloads."""
    family = name.split(".", 1)[0]
    if name in ("cpu.crc32c",):
        from virtbench.workloads.cpu import crc32c
        return crc32c
    if name in ("cpu.aes",):
        from virtbench.workloads.cpu import aes
        return aes
    if name in ("media.x265",):
        from virtbench.workloads.media import x265
        return x265
    if family == "exec":
        from virtbench.workloads import command
        return command
    return None


def _builtin(export: str, module: ModuleType | None, name: str) -> object | None:
    for plugin in getattr(module, export, ()):
        if getattr(plugin, "name", None) == name:
            return plugin  # type: ignore[no-any-return]
    return None


def get_workload(name: str) -> type[Workload]:
    found = _builtin("WORKLOADS", _builtin_workload_module(name), name)
    if found is not None:
        return found  # type: ignore[return-value]
    workloads = all_workloads()
    _named("unknown workload", workloads, name, "known workloads")
    return workloads[name]


def declared_metric(workload: str, metric: str) -> Metric | None:
    """The metric ``metric`` as workload plugin ``workload`` declares it here (its unit,
    direction and domain), or None: no such plugin here, or it declares no such metric."""
    try:
        found = get_workload(workload)
    except VirtbenchError:
        return None
    return next((m for m in found.metrics if m.name == metric), None)


def get_lab(name: str) -> type[Lab]:
    if name == "host":  # the default lab: its own module only
        from virtbench.labs import host

        found = _builtin("LABS", host, name)
        if found is not None:
            return found  # type: ignore[return-value]
    labs = all_labs()
    _named("unknown lab", labs, name, "known labs")
    return labs[name]


def get_parser(tool: str) -> Parser:
    parsers = all_parsers()
    _named("no parser for", parsers, tool, "known")
    return parsers[tool]


def build_sections(analysis: Analysis) -> list[Section]:
    """Every section plugin's sections for ``analysis`` (what the report renderers show)."""
    sections: list[Section] = []
    for plugin in all_sections().values():
        sections.extend(plugin.build(analysis))
    return sections


def clear_cache() -> None:
    """Forget the third-party plugins loaded (tests that install a plugin on the fly)."""
    registry.clear_cache()
