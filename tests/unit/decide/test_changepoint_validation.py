"""The change-point detector's hit and false-alarm rates by seeded simulation (200 histories of
30 run means each, run CV 1 %; figures: docs/statistics.md)."""

from __future__ import annotations

import numpy as np

from virtbench.stats.changepoints import change_points

HISTORIES, RUNS, STEP_AT = 200, 30, 15


def _histories(seed: int, step: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    runs = rng.normal(1.0, 0.01, (HISTORIES, RUNS))
    runs[:, STEP_AT:] *= 1.0 + step
    return runs


def test_a_planted_5_percent_step_is_found_within_two_runs() -> None:
    found = sum(any(abs(cp.index - STEP_AT) <= 2 for cp in change_points(h))
                for h in _histories(11, 0.05))
    assert found / HISTORIES >= 0.90, found


def test_histories_without_a_step_rarely_report_one() -> None:
    alarms = sum(bool(change_points(h)) for h in _histories(12, 0.0))
    assert alarms / HISTORIES <= 0.05, alarms


def test_change_point_segments_and_edge_cases() -> None:
    series = [1.0] * 6 + [1.2] * 6
    (cp,) = change_points(series)
    assert (cp.index, cp.before, cp.after) == (6, (0, 6), (6, 12))
    assert change_points([1.0] * 12) == []
    assert change_points([1.0, 2.0, 3.0]) == []  # too short for two segments of three
