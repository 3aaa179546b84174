"""The change-point detector's hit and false-alarm rates by seeded simulation (200 histories of
30 run means, run CV 1 %; figures recorded in docs/statistics.md)."""

from __future__ import annotations

from virtbench.decide.validation import changepoint_rates
from virtbench.stats.changepoints import change_points


def test_a_planted_5_percent_step_is_found_within_two_runs() -> None:
    assert changepoint_rates(0.05, seed=11).rate >= 0.90


def test_histories_without_a_step_rarely_report_one() -> None:
    assert changepoint_rates(0.0, seed=12).rate <= 0.05


def test_change_point_segments_and_edge_cases() -> None:
    (cp,) = change_points([1.0] * 6 + [1.2] * 6)
    assert (cp.index, cp.before, cp.after) == (6, (0, 6), (6, 12))
    assert change_points([1.0] * 12) == []
    assert change_points([1.0, 2.0, 3.0]) == []  # too short for two segments of three
