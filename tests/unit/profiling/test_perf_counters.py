"""perf stat's counters and the /proc deltas, from real outputs (tests/data/perf/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from virtbench.profiling.perf_counters import parse_perf_stat, proc_measurements, read_snapshot
from virtbench.profiling.profile_metrics import PROFILE_METRICS, PROFILE_PREFIX

DATA = Path(__file__).resolve().parents[2] / "data" / "perf"


def test_perf_stat_counters_become_profile_measurements() -> None:
    measurements, notes = parse_perf_stat((DATA / "stat-system-wide.csv").read_text())
    assert {m.metric: m.value for m in measurements} == {
        "profile.task_clock_ms": 2009.07, "profile.context_switches": 2050.0,
        "profile.cpu_migrations": 46.0, "profile.page_faults": 29114.0}
    assert notes == []


def test_major_faults_are_counted_beside_all_faults() -> None:
    measurements, notes = parse_perf_stat((DATA / "stat-major-faults.csv").read_text())
    values = {m.metric: m.value for m in measurements}
    assert values["profile.major_faults"] == 25.0 and values["profile.page_faults"] == 9580.0
    assert notes == []


def test_an_event_perf_could_not_count_is_a_note() -> None:
    measurements, notes = parse_perf_stat(
        "<not supported>,,page-faults,0,100.00,,\n12.5,msec,task-clock:u,1,100.00,,\n")
    assert [(m.metric, m.value) for m in measurements] == [("profile.task_clock_ms", 12.5)]
    assert notes == ["perf stat could not count page-faults: <not supported>"]


def test_proc_deltas_between_two_real_snapshots() -> None:
    before = read_snapshot((DATA / "proc-stat-before.txt").read_text(),
                           (DATA / "proc-softirqs-before.txt").read_text())
    after = read_snapshot((DATA / "proc-stat-after.txt").read_text(),
                          (DATA / "proc-softirqs-after.txt").read_text())
    values = {m.metric: m.value for m in proc_measurements(before, after)}
    assert values["profile.softirq_block"] == 93.0  # 17494567 - 17494474 on CPU 1
    assert values["profile.softirq_net_rx"] == values["profile.softirq_net_tx"] == 0.0
    # cpu line: user +146, system +103, iowait +3, steal +4 ticks; 256 in all
    assert values["profile.steal_pct"] == pytest.approx(100 * 4 / 256)
    assert values["profile.iowait_pct"] == pytest.approx(100 * 3 / 256)
    assert (values["profile.interrupts"] or 0) > 0


def test_an_unreadable_file_gives_no_measurement_from_it() -> None:
    before = read_snapshot(None, (DATA / "proc-softirqs-before.txt").read_text())
    after = read_snapshot(None, (DATA / "proc-softirqs-after.txt").read_text())
    assert sorted(m.metric for m in proc_measurements(before, after)) == [
        "profile.softirq_block", "profile.softirq_net_rx", "profile.softirq_net_tx"]


def test_every_counter_is_declared_with_a_unit_and_a_definition() -> None:
    names = {m.name for m in PROFILE_METRICS}
    assert names == {PROFILE_PREFIX + n for n in (
        "task_clock_ms", "context_switches", "cpu_migrations", "page_faults", "major_faults",
        "softirq_net_rx", "softirq_net_tx", "softirq_block", "interrupts", "steal_pct",
        "iowait_pct")}
    assert all(m.unit and m.description and m.better == "lower" and not m.primary
               for m in PROFILE_METRICS)
