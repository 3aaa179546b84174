"""The probe workloads' commands: each follows its one knob, as QEMU opens a disk per cache mode
(the lab tests run them on the real tools)."""

from __future__ import annotations

import pytest

from virtbench.model import VirtbenchError
from virtbench.services import GuestNic, GuestNics
from virtbench.workloads.assess_probes import (
    FioProbe,
    FioProbeParams,
    GuestIperf3Probe,
    GuestIperf3ProbeParams,
    Iperf3Probe,
)


def test_the_cache_probe_opens_the_device_as_qemu_does_per_mode() -> None:
    probe = FioProbe(FioProbeParams(vary="disk_cache"))
    flags = {mode: probe.argv("/dev/loop9", mode, 1)
             for mode in ("writethrough", "directsync", "none", "writeback")}
    assert "--sync=dsync" in flags["writethrough"] and "--direct=0" in flags["writethrough"]
    assert "--sync=dsync" in flags["directsync"] and "--direct=1" in flags["directsync"]
    assert "--direct=1" in flags["none"] and "--sync=dsync" not in flags["none"]
    assert "--direct=0" in flags["writeback"] and "--sync=dsync" not in flags["writeback"]
    assert all("--rw=randwrite" in argv and "--filename=/dev/loop9" in argv
               for argv in flags.values())


def test_each_probe_realises_only_its_own_knob() -> None:
    knobs = {"io_scheduler": "bfq", "disk_cache": "writethrough", "nic_offloads": "off",
             "cpu_features": []}
    assert FioProbe(FioProbeParams(vary="io_scheduler")).realise(knobs).settings == {
        "io_scheduler": "bfq"}
    assert FioProbe(FioProbeParams(vary="disk_cache")).realise(knobs).settings == {
        "disk_cache": "writethrough"}
    assert Iperf3Probe().realise(knobs).settings == {"nic_offloads": "off"}
    argv = FioProbe(FioProbeParams(vary="io_scheduler")).argv("/dev/loop9", "bfq", 1)
    assert "--rw=randread" in argv and "--direct=1" in argv and "--iodepth=16" in argv


NICS = GuestNics(nics=(GuestNic("virtio", 1, "nic0", "10.82.0.2", "10.82.0.1", "{}"),
                       GuestNic("e1000e", 1, "nic1", "10.82.1.2", "10.82.1.1", "{}"),
                       GuestNic("virtio", 2, "nic2", "10.82.2.2", "10.82.2.1", "{}")),
                 peer_ns="vbnet-x-nicpeer", port=5302, vcpus=2)


def test_the_probe_crosses_the_nic_its_one_knob_picks() -> None:
    knobs = {"nic_model": "e1000e", "nic_queues": 2}
    model = GuestIperf3Probe(GuestIperf3ProbeParams(vary="nic_model"))
    queues = GuestIperf3Probe(GuestIperf3ProbeParams(vary="nic_queues"))
    assert model.realise(knobs).settings == {"nic_model": "e1000e", "model": "e1000e",
                                             "queues": "1"}
    assert queues.realise(knobs).settings == {"nic_queues": "2", "model": "virtio",
                                              "queues": "2"}
    argv = model.argv(NICS, "e1000e", 1)
    assert argv[argv.index("-c") + 1] == "10.82.1.1" and argv[argv.index("-B") + 1] == "10.82.1.2"
    assert "-R" in argv and argv[argv.index("-P") + 1] == "1"
    argv = queues.argv(NICS, "virtio", 2)
    assert argv[argv.index("-c") + 1] == "10.82.2.1" and argv[argv.index("-P") + 1] == "2"
    with pytest.raises(VirtbenchError, match="no virtio NIC with 4 queue pair"):
        queues.argv(NICS, "virtio", 4)
