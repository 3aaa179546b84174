"""The vswitch-guests lab's checks before anything starts (labs.net.guest_switch), without a
guest: what a variant asks is refused naming its knob, the guests' names carry the lab's
prefix, and a lab with nothing created removes nothing. The guests themselves boot in
tests/lab/guest/test_vswitch_guests.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from virtbench.labs.net.guest_switch import VSwitchGuestsLab, VSwitchGuestsParams
from virtbench.targets.local import LocalTarget


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> VSwitchGuestsLab:
    monkeypatch.setenv("VIRTBENCH_LAB_ROOT", str(tmp_path / "labs"))
    return VSwitchGuestsLab(VSwitchGuestsParams(vcpus=1), tmp_path, LocalTarget())


def test_only_the_background_pair_are_namespaces(lab: VSwitchGuestsLab) -> None:
    assert sorted(lab.hosts) == ["bgr", "bgs"]
    assert all(h.namespace.startswith(lab.prefix) for h in lab.hosts.values())


@pytest.mark.parametrize(("knobs", "needle"), [
    ({"nic_queues": 2}, "knob nic_queues: 2 queues for 1 vCPU(s)"),
    ({"vcpus": 0}, "knob vcpus: 0"),
    ({"vcpus": (os.cpu_count() or 1) + 1}, "this host's CPUs"),
    ({"switch": "vpp"}, "knob switch: 'vpp'"),
    ({"switch": "ovs-dpdk", "vcpus": 2, "nic_queues": 2}, "multiqueue vhost-user"),
    ({"switch": "ovs-dpdk", "nic_driver": "vhost"}, "vhost-user is its own backend"),
    ({"nic_model": "e1000e"}, "no e1000e module"),
])
def test_refused_before_boot(lab: VSwitchGuestsLab, knobs: dict[str, object],
                             needle: str) -> None:
    problems = lab.check_variant("v", knobs)
    assert any(p.startswith("variant v: ") and needle in p for p in problems), problems


def test_vhost_is_refused_on_a_host_without_vhost_net(lab: VSwitchGuestsLab) -> None:
    problems = lab.check_variant("v", {"nic_driver": "vhost"})
    if Path("/dev/vhost-net").exists():  # the TCG refusal holds everywhere
        assert [p for p in problems if "needs KVM" in p]
    else:
        assert any("/dev/vhost-net" in p for p in problems)
        assert any("needs KVM" in p for p in problems)


def test_valid_variants_and_down_before_up(lab: VSwitchGuestsLab) -> None:
    assert lab.check_variant("v", {"switch": "ovs", "background_mbps": 100}) == []
    assert lab.check_variant("v", {"switch": "ovs-dpdk", "rx_queue_size": 1024}) == []
    lab.down()  # nothing was created: nothing to remove, no error
    assert lab.manifest is None
