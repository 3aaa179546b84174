"""Lab assess-nic-guest refuses a NIC the scratch guest cannot have, naming param nics, before
anything starts (tests/lab/assess/test_assess_guest_nic.py boots the guest)."""

from __future__ import annotations

from pathlib import Path

from virtbench.labs.assess_nic_guest import NicGuestLab, NicGuestParams, parse_nic
from virtbench.targets.local import LocalTarget


def _lab(**params: object) -> NicGuestLab:
    return NicGuestLab(NicGuestParams(**params), Path("/tmp"), LocalTarget())


def test_the_lab_refuses_bad_nics_naming_the_param() -> None:
    assert parse_nic("virtio:2").nic_queues == 2 and parse_nic("e1000e").nic_model == "e1000e"
    problems = " | ".join(_lab(nics=["virtio:3"], vcpus=2).check())
    assert "param nics (virtio:3): knob nic_queues: 3 queues for 2 vCPU(s)" in problems
    problems = " | ".join(_lab(nics=["e1000e:2"], vcpus=2).check())
    assert "multiqueue needs nic_model virtio" in problems
    problems = " | ".join(_lab(nics=["rtl8139"]).check())
    assert "param nics (rtl8139): knob nic_model: 'rtl8139'" in problems
    assert "param nics: 'virtio:x'" in " | ".join(_lab(nics=["virtio:x"]).check())
    assert "named twice" in " | ".join(_lab(nics=["virtio", "virtio"]).check())
