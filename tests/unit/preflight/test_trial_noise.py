"""The per-trial noise sample on a fake /proc: cheap reads, attribution, windows, lower bounds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fake_proc import FakeClock, FakeHost

from virtbench.preflight import HostReader
from virtbench.preflight.ownership import MARKER_VARIABLE, RunProcesses
from virtbench.preflight.procfs import ProcInfo
from virtbench.preflight.trial_noise import TrialNoise, TrialSample, own_cpu_seconds

ME = 100  # the runner's pid in the fake tree


class CountingReader(HostReader):
    """Counts full scans and single-process reads, the costs the sampler must keep low."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.scans = 0
        self.reads: list[int] = []

    def processes(self) -> dict[int, ProcInfo]:
        self.scans += 1
        return super().processes()

    def process(self, pid: int) -> ProcInfo | None:
        self.reads.append(pid)
        return super().process(pid)


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    fake = FakeHost(tmp_path / "host")
    fake.cpu(total=1000, steal=0, idle=1000)  # busy 0
    fake.process(ME, 1, "virtbench", 0)
    fake.process(200, 1, "nginx", 0, env=f"{MARKER_VARIABLE}=mark")  # a lab daemon: ours
    fake.process(7, 2, "ksoftirqd/0", 0)  # a kernel thread
    fake.process(300, 1, "other", 0)
    return fake


def setup(host: FakeHost) -> tuple[TrialNoise, CountingReader, FakeClock, RunProcesses]:
    reader = CountingReader(host.root)
    clock = FakeClock()
    noise = TrialNoise(reader, window_s=1.0, rescan_every_s=1.0, clock=clock,
                       own_cpu_s=clock.own)
    return noise, reader, clock, RunProcesses(reader, root_pid=ME, marker="mark")


def run_trial(noise: TrialNoise, ours: RunProcesses, clock: FakeClock, seconds: float,
              host: FakeHost, busy: int, own_s: float = 0.0,
              during: Callable[[], None] = lambda: None) -> dict[str, str]:
    """One trial of ``seconds`` during which the host's busy ticks grow by ``busy``."""
    sample = TrialSample(noise, ours)
    during()
    clock.now += seconds
    clock.own_cpu_s += own_s
    stat = (host.root / "proc" / "stat").read_text().split()
    user, idle = int(stat[1]), int(stat[4])
    capacity = round(seconds * 100 * 2)
    host.cpu(total=user + idle + capacity, steal=0, idle=idle + capacity - busy)
    return sample.notes()


def foreign(notes: dict[str, str]) -> float:
    return float(notes["noise.foreign_cpu_pct"])


def test_only_the_first_trial_scans_every_process(host: FakeHost) -> None:
    noise, reader, clock, ours = setup(host)
    run_trial(noise, ours, clock, 0.125, host, busy=0)
    reader.reads.clear()
    for _ in range(50):
        notes = run_trial(noise, ours, clock, 0.125, host, busy=0)
    assert reader.scans == 1
    # per trial: only the run's other process (nginx), never the foreign one or ourselves
    assert set(reader.reads) == {200}
    assert foreign(notes) == 0.0


def test_foreign_is_busy_time_minus_ours_and_tracked(host: FakeHost) -> None:
    noise, _reader, clock, ours = setup(host)
    sample = TrialSample(noise, ours)
    clock.now, clock.own_cpu_s = 2.0, 1.0  # 100 ticks of our own (and reaped children's)
    host.process(200, 1, "nginx", 60, env=f"{MARKER_VARIABLE}=mark")  # 60 ticks, ours
    host.process(300, 1, "other", 140)
    host.cpu(total=1400, steal=0, idle=1100)  # 300 busy ticks in 2 s on 2 CPUs (400)
    notes = sample.notes()
    # 300 - 100 - 60 = 140 foreign ticks, less 3 of tick noise, of 400
    assert foreign(notes) == pytest.approx(100.0 * 137 / 400)
    assert notes["noise.window_s"] == "2.000"


def test_tick_noise_alone_never_marks_a_short_trial(host: FakeHost) -> None:
    noise, _reader, clock, ours = setup(host)
    # 0.2 ms during which one 10 ms tick of our own work lands: a 2,500 % reading, naively
    notes = run_trial(noise, ours, clock, 0.0002, host, busy=1, own_s=0.0002)
    assert foreign(notes) == 0.0


def test_a_short_trials_window_reaches_back_a_second(host: FakeHost) -> None:
    noise, _reader, clock, ours = setup(host)
    for _ in range(12):  # 1.5 s of 0.125 s trials, a foreign tick in each
        notes = run_trial(noise, ours, clock, 0.125, host, busy=1)
    assert notes["noise.window_s"] == "1.000"
    assert foreign(notes) == pytest.approx(100.0 * (8 - 3) / 200)


def test_high_leftover_rescans_and_then_attributes_a_busy_kernel_thread(host: FakeHost) -> None:
    noise, reader, clock, ours = setup(host)
    ticks = [0]

    def softirq() -> None:  # work for our traffic: kernel thread 7 busy half a CPU
        ticks[0] += 200
        host.process(7, 2, "ksoftirqd/0", ticks[0])

    for _ in range(3):
        notes = run_trial(noise, ours, clock, 2.0, host, busy=200, during=softirq)
    # the first trial counts it as foreign (unknown) and rescans; later ones track it
    assert reader.scans == 2
    assert foreign(notes) == 0.0


def test_rescans_are_rate_limited(host: FakeHost) -> None:
    noise, reader, clock, ours = setup(host)
    for _ in range(24):  # 3 s of 0.125 s trials under an unknown foreign load
        run_trial(noise, ours, clock, 0.125, host, busy=25)
    assert reader.scans == 1 + 3  # the first, then one per second


def test_a_reaped_child_is_not_counted_twice(host: FakeHost) -> None:
    host.process(400, ME, "iperf3", 50)  # a server we spawned: 50 ticks so far, running
    noise, _reader, clock, ours = setup(host)
    sample = TrialSample(noise, ours)  # the full scan tracks it
    host.end(400)  # it ran 30 more ticks, then we reaped it: getrusage holds all its 80
    clock.now, clock.own_cpu_s = 2.0, 1.0  # its 80 ticks and 20 of our own
    host.cpu(total=1400, steal=0, idle=1290)  # 110 busy: 30 + 20 ours, 60 foreign
    assert foreign(sample.notes()) == pytest.approx(100.0 * (60 - 3) / 400)


def test_own_cpu_seconds_grows_with_work() -> None:
    before = own_cpu_seconds()
    sum(i * i for i in range(200_000))
    assert own_cpu_seconds() > before


def test_a_pause_between_trials_rescans_and_starts_a_new_window(host: FakeHost) -> None:
    noise, reader, clock, ours = setup(host)
    for _ in range(10):
        run_trial(noise, ours, clock, 0.125, host, busy=0)
    clock.now += 3.0  # a lab switch: a new daemon of ours starts and works
    host.process(500, 1, "varnishd", 250, env=f"{MARKER_VARIABLE}=mark")
    host.cpu(total=1600, steal=0, idle=1350)
    notes = run_trial(noise, ours, clock, 0.125, host, busy=0)
    assert reader.scans == 2
    assert notes["noise.window_s"] == "0.125"  # not reaching back over the switch
    assert foreign(notes) == 0.0


def test_a_barely_busy_kernel_thread_is_not_read_per_trial(host: FakeHost) -> None:
    noise, reader, clock, ours = setup(host)
    host.process(8, 2, "kworker/0:1", 0)
    ticks = [0, 0]

    def kernel_work() -> None:  # 7 works for us (half a CPU), 8 ticks once in 2 s
        ticks[0] += 200
        ticks[1] += 1
        host.process(7, 2, "ksoftirqd/0", ticks[0])
        host.process(8, 2, "kworker/0:1", ticks[1])

    run_trial(noise, ours, clock, 2.0, host, busy=201, during=kernel_work)  # rescans
    reader.reads.clear()
    run_trial(noise, ours, clock, 0.125, host, busy=0)
    assert set(reader.reads) == {200, 7}  # ours and the busy kernel thread only
