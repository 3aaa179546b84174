"""CgroupTarget: the one way a process is started inside a cgroup (storage VM sizes, the router
VNF's group, stressed neighbours). A fake group (plain files) stands in for cgroupfs here; the
real hierarchy is exercised by tests/lab/storage and tests/lab/net."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from virtbench.targets.cgroup import CgroupTarget, cgroup_argv
from virtbench.targets.local import LocalTarget, NetnsTarget


@dataclass
class FakeGroup:
    name: str
    files: list[Path] = field(default_factory=list)

    def procs_files(self) -> list[Path]:
        return self.files

    def perf_event_path(self) -> str | None:
        return None


def test_command_runs_with_the_pid_it_wrote_into_every_procs_file(tmp_path: Path) -> None:
    files = [tmp_path / "cpu.procs", tmp_path / "memory.procs"]
    for f in files:
        f.write_text("")
    target = CgroupTarget(LocalTarget(), FakeGroup("g", files))
    pid = target.run(["cat", "/proc/self/stat"]).stdout.split()[0]
    assert [f.read_text().strip() for f in files] == [pid, pid]


def test_spawned_process_joins_before_it_starts(tmp_path: Path) -> None:
    procs = tmp_path / "cgroup.procs"
    procs.write_text("")
    proc = CgroupTarget(LocalTarget(), FakeGroup("g", [procs])).spawn(["sleep", "0"])
    assert proc.wait(10).returncode == 0
    assert procs.read_text().strip() == str(proc.pid)


def test_unwritable_group_file_stops_the_command(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "cgroup.procs"
    marker = tmp_path / "ran"
    target = CgroupTarget(LocalTarget(), FakeGroup("g", [missing]))
    result = target.run(["touch", str(marker)], check=False)
    assert result.returncode == 125 and not marker.exists()


def test_launcher_runs_outside_ip_netns_exec() -> None:
    # ip netns exec remounts /sys, hiding /sys/fs/cgroup from what it starts.
    target = CgroupTarget(NetnsTarget("vbnet-x"), FakeGroup("g", [Path("/cg/cgroup.procs")]))
    argv = target._wrap(["iperf3", "-s"])
    assert argv[:2] == ["sh", "-c"]
    assert argv[-6:] == ["ip", "netns", "exec", "vbnet-x", "iperf3", "-s"]
    assert target.name == "netns:vbnet-x+cgroup:g"


def test_no_group_files_leave_the_command_unchanged() -> None:
    assert cgroup_argv([], ["true"]) == ["true"]
