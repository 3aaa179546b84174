"""The probe workloads' commands: each follows its one knob, as QEMU opens a disk per cache mode
(the lab tests run them on the real tools)."""

from __future__ import annotations

from virtbench.workloads.assess_probes import FioProbe, FioProbeParams, Iperf3Probe


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
