"""The namespace labs' shared frame (labs.net.netns_lab): local machine only, one lab id in
every name, and a lab with nothing created removes nothing. The real namespaces are built by
tests/lab/net."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.labs.net.router_lab import VnfRouterLab
from virtbench.labs.net.vswitch import VSwitchLab
from virtbench.model import VirtbenchError
from virtbench.targets.local import LocalTarget, NetnsTarget


@pytest.fixture(autouse=True)
def _lab_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))


@pytest.mark.parametrize("lab", [VnfRouterLab, VSwitchLab])
def test_a_lab_refuses_a_target_other_than_this_machine(lab: type[VnfRouterLab | VSwitchLab],
                                                        tmp_path: Path) -> None:
    with pytest.raises(VirtbenchError, match=f"lab {lab.name}: runs on the local machine only"):
        lab(None, tmp_path, NetnsTarget("vbnet-elsewhere"))


def test_every_namespace_carries_the_lab_id(tmp_path: Path) -> None:
    router = VnfRouterLab(None, tmp_path, LocalTarget())
    switch = VSwitchLab(None, tmp_path, LocalTarget())
    assert all(ns.startswith(f"vbnet-{router.lab_id}-") for ns in router.ns.values())
    assert switch.sw_ns == f"vbnet-{switch.lab_id}-sw"
    assert all(h.namespace.startswith(switch.prefix) for h in switch.hosts.values())
    assert router.rundir == tmp_path / "labs" / f"vbnet-{router.lab_id}"


def test_down_before_up_removes_nothing(tmp_path: Path) -> None:
    lab = VSwitchLab(None, tmp_path, LocalTarget())
    lab.down()
    assert lab.manifest is None and not lab.rundir.exists()
