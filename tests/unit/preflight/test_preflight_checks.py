"""Noise checks on fake /proc and /sys trees (logic only; the real host is in tests/e2e)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fake_proc import FakeClock, FakeHost

from virtbench.preflight import HostReader, NoiseWatch, RunRegistry, Status, Thresholds, noisy
from virtbench.preflight.checks import Window, measure_window, static_checks, window_checks
from virtbench.preflight.ownership import MARKER_VARIABLE, RunProcesses, foreign_ticks
from virtbench.preflight.procfs import ProcInfo
from virtbench.preflight.trial_noise import TrialNoise
from virtbench.preflight.watch import TrialSample, summary_line


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path / "host")


def test_reader_parses_proc(host: FakeHost) -> None:
    host.process(10, 1, "weird) name (x", 42)
    reader = HostReader(host.root)
    assert reader.cpu_times().total == 1000
    assert reader.cpu_count() == 2
    info = reader.processes()[10]
    assert (info.ppid, info.comm, info.ticks, info.starttime) == (1, "weird) name (x", 42, 777)
    assert reader.vmstat()["pswpout"] == 20


def test_run_processes_follow_tree_and_marker(host: FakeHost) -> None:
    host.process(100, 1, "virtbench", 0)
    host.process(101, 100, "crc", 0)
    host.process(200, 1, "varnishd", 0, env=f"{MARKER_VARIABLE}=abc")  # detached daemon
    host.process(201, 200, "cache-worker", 0)
    host.process(300, 1, "other", 0, env=f"{MARKER_VARIABLE}=zzz")  # another run's daemon
    reader = HostReader(host.root)
    ours = RunProcesses(reader, root_pid=100, marker="abc").ours(reader.processes())
    assert ours == {100, 101, 200, 201}


def test_foreign_ticks_skip_ours_and_kernel_threads() -> None:
    def p(pid: int, ppid: int, ticks: int, start: int = 1) -> ProcInfo:
        return ProcInfo(pid, ppid, f"p{pid}", ticks, start)

    before = {1: p(1, 0, 10), 5: p(5, 1, 100), 6: p(6, 1, 50), 7: p(7, 2, 0), 8: p(8, 1, 30)}
    after = {1: p(1, 0, 10), 5: p(5, 1, 160), 6: p(6, 1, 90), 7: p(7, 2, 99),
             8: p(8, 1, 5, start=9), 9: p(9, 1, 20)}
    used = foreign_ticks(before, after, ours={6})
    # 5 used 60; 8 is a new process with a reused pid (counts from 0); 9 started in between;
    # 6 is ours; 7 is a kernel thread.
    assert [(i.pid, t) for i, t in used] == [(5, 60), (9, 20), (8, 5)]


def test_window_grades() -> None:
    limits = Thresholds()
    idle = Window(1.0, 0.0, 1.0, 2, [], 0)
    busy = Window(1.0, 12.0, 80.0, 2, [("stress-ng-cpu", 4242, 99.0)], 500)
    assert {c.name: c.status for c in window_checks(idle, limits)} == {
        "steal": Status.OK, "foreign_load": Status.OK, "swap": Status.OK}
    checks = {c.name: c for c in window_checks(busy, limits)}
    assert checks["steal"].status == checks["foreign_load"].status == Status.FAIL
    assert "stress-ng-cpu (pid 4242)" in checks["foreign_load"].value
    assert checks["swap"].status == Status.FAIL
    warn = {c.name: c.status for c in window_checks(Window(1.0, 3.0, 15.0, 2, [], 3), limits)}
    assert warn == {"steal": Status.WARN, "foreign_load": Status.WARN, "swap": Status.WARN}


def test_measured_window_on_an_idle_fake_host_is_ok(host: FakeHost) -> None:
    host.process(50, 1, "sleeper", 7)
    reader = HostReader(host.root)
    window = measure_window(reader, RunProcesses(reader, root_pid=99), 0.01)
    assert window.foreign_pct == 0.0 and window.swapped_pages == 0


def test_static_checks(host: FakeHost, tmp_path: Path) -> None:
    host.sys("devices/system/cpu/cpu0/cpufreq/scaling_governor", "powersave")
    host.sys("devices/system/cpu/cpu1/cpufreq/scaling_governor", "performance")
    host.sys("devices/system/cpu/intel_pstate/no_turbo", "0")
    host.sys("kernel/mm/transparent_hugepage/enabled", "[always] madvise never")
    host.sys("devices/system/clocksource/clocksource0/current_clocksource", "hpet")
    reader = HostReader(host.root)
    checks = {c.name: c for c in static_checks(reader, RunRegistry(tmp_path / "runs", reader))}
    assert checks["cpu_governor"].status == Status.WARN
    assert checks["cpu_governor"].value == "performance, powersave"
    assert checks["cpu_boost"].status == Status.WARN
    assert checks["transparent_hugepages"].value == "always"
    assert checks["transparent_hugepages"].status == Status.WARN
    assert checks["clocksource"].status == Status.WARN
    assert checks["other_runs"].status == Status.OK
    host.sys("devices/system/cpu/intel_pstate/no_turbo", "1")
    host.sys("kernel/mm/transparent_hugepage/enabled", "always madvise [never]")
    host.sys("devices/system/clocksource/clocksource0/current_clocksource", "tsc")
    checks = {c.name: c for c in static_checks(reader, RunRegistry(tmp_path / "runs", reader))}
    assert [checks[n].status for n in ("cpu_boost", "transparent_hugepages", "clocksource")] \
        == [Status.OK] * 3


def test_registry_sees_live_runs_and_drops_stale_files(tmp_path: Path) -> None:
    registry = RunRegistry(tmp_path / "runs")
    parent = os.getppid()  # alive, and not us
    start = HostReader().process(parent)
    assert start is not None
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / f"{parent}.json").write_text(
        f'{{"pid": {parent}, "starttime": {start.starttime}, "experiment": "other"}}')
    (tmp_path / "runs" / "reused.json").write_text(  # same pid, different process
        f'{{"pid": {parent}, "starttime": {start.starttime + 1}, "experiment": "old"}}')
    (tmp_path / "runs" / "dead.json").write_text('{"pid": 999999999, "experiment": "gone"}')
    (tmp_path / "runs" / "junk.json").write_text("not json")
    with registry.registered("mine") as own:
        assert own.exists()
        others = registry.others()
    assert [o["experiment"] for o in others] == ["other"]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [f"{parent}.json"]


def test_trial_sample_notes_and_marks(host: FakeHost) -> None:
    host.process(60, 1, "hog", 0)
    reader = HostReader(host.root)
    clock = FakeClock()
    noise = TrialNoise(reader, clock=clock, own_cpu_s=clock.own)
    sample = TrialSample(noise, RunProcesses(reader, root_pid=99))
    clock.now = 5.0
    host.cpu(total=2000, steal=100)  # 900 busy ticks in 5 s on 2 CPUs, nothing of ours
    host.process(60, 1, "hog", 10_000)
    notes = sample.notes()
    assert float(notes["noise.steal_pct"]) == pytest.approx(9.9)  # a tick off for truncation
    assert float(notes["noise.foreign_cpu_pct"]) == pytest.approx(100.0 * (900 - 3) / 1000)
    assert noisy(notes) and "steal 9.9 %" in noisy(notes)[0]
    assert noisy({"noise.steal_pct": "0.1", "noise.foreign_cpu_pct": "1"}) == []
    assert noisy({}) == []


def test_summary_line_names_failures_first() -> None:
    checks = window_checks(Window(1.0, 0.0, 80.0, 2, [], 1), Thresholds())
    line = summary_line("start", checks)
    assert line.startswith("preflight (start): fail foreign_load 80.0 %")
    assert "warn swap" in line


def test_registered_marks_children_and_cleans_up(tmp_path: Path) -> None:
    assert MARKER_VARIABLE not in os.environ
    watch = NoiseWatch(registry=RunRegistry(tmp_path / "runs"))
    with watch.registered("exp"):
        marker = os.environ[MARKER_VARIABLE]
        assert watch.ours.marker == marker
        assert [p.name for p in (tmp_path / "runs").iterdir()] == [f"{os.getpid()}.json"]
    assert MARKER_VARIABLE not in os.environ
    assert list((tmp_path / "runs").iterdir()) == []
