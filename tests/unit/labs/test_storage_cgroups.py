"""cgroup logic against fake v1/v2 trees (the real hierarchy is tested in tests/lab/storage)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.labs.cgroups import Cgroup, CgroupLayout, CgroupLimits
from virtbench.model import VirtbenchError

HYBRID_MOUNTS = """\
tmpfs /sys/fs/cgroup tmpfs rw 0 0
cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0
cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0
cgroup /sys/fs/cgroup/memory cgroup rw,relatime,memory 0 0
cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0
"""


def test_probe_hybrid_prefers_v1_when_v2_lacks_controllers() -> None:
    layout = CgroupLayout.probe(HYBRID_MOUNTS)
    assert layout.version_of("cpu") == "v1"
    assert layout.version_of("memory") == "v1"
    assert layout.describe().startswith("hybrid")


def _fake_v2(root: Path) -> CgroupLayout:
    (root / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    (root / "cgroup.subtree_control").write_text("cpuset cpu memory\n")
    (root / "cpuset.cpus.effective").write_text("0-3\n")
    return CgroupLayout(v2=root, v2_controllers=frozenset({"cpuset", "cpu", "memory"}))



def test_v2_writes_limits_into_one_directory(tmp_path: Path) -> None:
    layout = _fake_v2(tmp_path)
    (tmp_path / "virtbench").mkdir()
    (tmp_path / "virtbench" / "cgroup.subtree_control").write_text("")
    (tmp_path / "virtbench" / "cpuset.cpus.effective").write_text("0-3\n")
    (tmp_path / "virtbench" / "cpuset.mems").write_text("")
    cg = Cgroup("vbfs-x", CgroupLimits(cpus=[1, 2], cpu_quota_cores=1.5,
                                       memory_bytes=64 << 20), layout=layout)
    assert set(cg.dirs.values()) == {tmp_path / "virtbench" / "vbfs-x"}
    cg.create()
    group = tmp_path / "virtbench" / "vbfs-x"
    assert (group / "cpuset.cpus").read_text() == "1,2"
    assert (group / "cpu.max").read_text() == "150000 100000"
    assert (group / "memory.max").read_text() == str(64 << 20)
    assert "+" in (tmp_path / "virtbench" / "cgroup.subtree_control").read_text()
    assert cg.procs_files() == [group / "cgroup.procs"]


def test_no_limits_means_no_group_files() -> None:
    cg = Cgroup("vbfs-none", CgroupLimits(), layout=CgroupLayout())
    assert cg.procs_files() == []


def test_missing_controller_is_a_clear_error() -> None:
    with pytest.raises(VirtbenchError, match="memory"):
        Cgroup("vbfs-y", CgroupLimits(memory_bytes=1 << 20), layout=CgroupLayout())


def test_bad_names_refused() -> None:
    for name in ("../escape", "", ".hidden"):
        with pytest.raises(VirtbenchError, match="plain directory name"):
            Cgroup(name, CgroupLimits(), layout=CgroupLayout())


def test_a_v1_host_gets_a_v2_membership_group_for_perf(tmp_path: Path) -> None:
    """This machine's layout: cpu, cpuset, memory on v1, no v1 perf_event mount, an empty v2
    hierarchy: the group joins v2 too, where perf -G finds it (profile scope cgroup)."""
    v1 = {c: tmp_path / c for c in ("cpu", "memory")}
    for root in v1.values():
        root.mkdir()
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("")
    unified = tmp_path / "unified"
    unified.mkdir()
    layout = CgroupLayout(v1=v1, v2=unified)
    assert layout.version_of("perf_event") == "v2"
    cg = Cgroup("vbx-perf", CgroupLimits(memory_bytes=64 << 20), layout=layout)
    assert cg.dirs == {"memory": tmp_path / "memory" / "virtbench" / "vbx-perf",
                       "perf_event": unified / "virtbench" / "vbx-perf"}
    (unified / "virtbench" / "vbx-perf").mkdir(parents=True)  # as cgroupfs makes it:
    (unified / "virtbench" / "vbx-perf" / "cgroup.procs").write_text("")  # with its files
    cg.create()
    assert (unified / "virtbench" / "vbx-perf").is_dir()
    assert not (unified / "virtbench" / "cgroup.subtree_control").exists()  # nothing enabled
    assert cg.perf_event_path() == "virtbench/vbx-perf"
    assert unified / "virtbench" / "vbx-perf" / "cgroup.procs" in cg.procs_files()
    # a v1 perf_event mount is the one perf uses; no limit at all: no group anywhere
    v1_perf = CgroupLayout.probe(HYBRID_MOUNTS + "cgroup /sys/fs/cgroup/perf_event cgroup "
                                                 "rw,perf_event 0 0\n")
    assert v1_perf.version_of("perf_event") == "v1"
    assert Cgroup("vbx-none", CgroupLimits(), layout=layout).perf_event_path() is None
    assert CgroupLayout(v1=v1).version_of("perf_event") is None


def test_a_perf_group_the_host_refuses_leaves_the_limits_working(tmp_path: Path) -> None:
    """Best effort: where the v2 hierarchy gives no group (here: a directory without
    cgroup.procs, as a read-only or foreign mount would), the group keeps its limits."""
    v1 = {"memory": tmp_path / "memory"}
    v1["memory"].mkdir()
    unified = tmp_path / "unified"
    unified.mkdir()
    cg = Cgroup("vbx-nop", CgroupLimits(memory_bytes=64 << 20), layout=CgroupLayout(v1=v1,
                                                                                  v2=unified))
    cg.create()
    assert cg.perf_event_path() is None
    assert cg.procs_files() == [tmp_path / "memory" / "virtbench" / "vbx-nop" / "cgroup.procs"]
    assert not (unified / "virtbench" / "vbx-nop").exists()
    assert (tmp_path / "memory" / "virtbench" / "vbx-nop" / "memory.limit_in_bytes").read_text() \
        == str(64 << 20)
