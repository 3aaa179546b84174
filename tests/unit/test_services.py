"""Typed lab services: found by kind, a missing one named with its lab, and no string keys left
in the source or the tests (the untyped ``services["..."]`` they replaced)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from virtbench.model import VirtbenchError
from virtbench.plugins import all_labs, all_workloads
from virtbench.services import (
    FilesystemService,
    ResourceLimits,
    Service,
    Services,
    VethPair,
    WebStack,
)

ROOT = Path(__file__).parents[2]
SRC = ROOT / "src" / "virtbench"


def _fs() -> FilesystemService:
    return FilesystemService(path="/tmp/x", kind="tmpfs", spec="tmpfs", mount={}, size_mib=64,
                             free_mib=64, cache_policy="", drop_caches=False)


def test_a_service_is_found_by_its_kind() -> None:
    fs, limits = _fs(), ResourceLimits(vcpus=1, memory_mib=256, cgroup=None)
    services = Services("storage", (fs, limits))
    assert services.get(FilesystemService) is fs
    assert services.get(ResourceLimits).memory_mib == 256
    assert services.find(WebStack) is None
    assert services.kinds() == (FilesystemService, ResourceLimits)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fs.path = "/elsewhere"  # type: ignore[misc]


def test_a_missing_service_names_the_lab_and_the_kind() -> None:
    with pytest.raises(VirtbenchError, match=r"^lab storage provides no WebStack \(it provides "
                                             r"FilesystemService\); use a lab that provides it"):
        Services("storage", (_fs(),)).get(WebStack)
    with pytest.raises(VirtbenchError, match=r"^no VethPair: no lab published services"):
        Services().get(VethPair)


def test_one_kind_is_published_once() -> None:
    with pytest.raises(VirtbenchError, match="publishes one kind of service twice"):
        Services("storage", (_fs(), _fs()))


def test_every_plugin_declares_service_kinds() -> None:
    """Each lab's ``provides`` and each workload's ``needs`` are frozen Service dataclasses,
    and every kind a built-in workload needs is provided by a built-in lab."""
    provided: set[type[Service]] = set()
    for lab in all_labs().values():
        for kind in lab.provides:
            assert issubclass(kind, Service) and dataclasses.is_dataclass(kind), (lab, kind)
            assert kind.__dataclass_params__.frozen, kind
        provided |= set(lab.provides)
    for workload in all_workloads().values():
        assert all(issubclass(kind, Service) for kind in workload.needs), workload
        assert set(workload.needs) <= provided, workload.name


def _is_services(node: ast.expr) -> bool:
    """``services``, ``ctx.services``, ``state.services``, ``self.services``..."""
    return ((isinstance(node, ast.Name) and node.id == "services")
            or (isinstance(node, ast.Attribute) and node.attr == "services"))


def _kind_like(node: ast.expr) -> bool:
    """A class name (``WebStack``, ``services.WebStack``), as service kinds are spelt."""
    name = node.id if isinstance(node, ast.Name) else (
        node.attr if isinstance(node, ast.Attribute) else "")
    return name[:1].isupper()


def _string_keyed(source: str) -> list[str]:
    """Where ``source`` reaches services by a key rather than a kind: ``services["fs"]``,
    ``ctx.services.get("fs")`` or ``.get(name)``, ``"fs" in state.services``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and _is_services(node.value):
            found.append(f"{node.lineno}: services[...]")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and _is_services(node.func.value)
              and not all(_kind_like(arg) for arg in node.args)):
            found.append(f"{node.lineno}: services.{node.func.attr}(key)")
        elif (isinstance(node, ast.Compare) and any(_is_services(c) for c in node.comparators)
              and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)):
            found.append(f"{node.lineno}: key in services")
    return found


def test_the_scan_finds_each_string_keyed_form() -> None:
    assert len(_string_keyed('a = ctx.services["fs"]\nb = services.get("urls")\n'
                             'c = "x" in state.services\nd = self.services["net"] = 1\n'
                             'e = key not in ctx.services\nf = ctx.services.get(name)\n')) == 6
    assert _string_keyed("a = ctx.services.get(WebStack)\nb = services.find(PacketPath)\n"
                         "c = WebStack in services.kinds()\n") == []


@pytest.mark.parametrize("tree", ["src", "tests"])
def test_no_string_keyed_service_access_remains(tree: str) -> None:
    found = [f"{path.relative_to(ROOT)}:{where}" for path in sorted((ROOT / tree).rglob("*.py"))
             for where in _string_keyed(path.read_text())]
    assert found == []
