"""Summaries of per-request records (pure)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from virtbench.loadgen.records import RequestRecord, read_records, summarise, write_records


def _rec(i: int, sched: float, lag: float, rt: float, status: int = 200, error: str = "",
         cache: str = "hit") -> RequestRecord:
    return RequestRecord(index=i, worker=0, url=0, scheduled=sched, start=sched + lag,
                         first_byte=sched + rt / 2, end=sched + rt, status=status, bytes=100,
                         cache=cache, error=error)


def test_failures_rate_and_percentiles() -> None:
    recs = [_rec(i, i * 0.1, 0.0001, 0.010 * (i + 1)) for i in range(8)]
    recs.append(_rec(8, 0.8, 0.0001, 0.5, status=503, cache="miss"))
    recs.append(_rec(9, 0.9, 0.002, 1.0, status=0, error="timeout"))
    s = summarise(recs, duration_s=1.0)
    assert (s.samples, s.failures) == (10, 2)
    assert s.success_rate_pct == 80.0
    assert s.response_time_mean_ms == pytest.approx(45.0)  # successes only: 10..80 ms
    assert s.response_time_median_ms == pytest.approx(45.0)
    assert s.errors == {"http_503": 1, "timeout": 1}
    assert s.late_sends_pct == 10.0  # one send 2 ms late
    assert s.hit_ratio_client_pct == 100.0
    assert s.achieved_rate == 10.0


def test_nothing_succeeded_gives_nan_not_a_crash() -> None:
    s = summarise([_rec(0, 0, 0, 0.1, status=0, error="refused")], 1.0)
    assert s.failures == 1 and math.isnan(s.response_time_mean_ms)


def test_records_round_trip(tmp_path: Path) -> None:
    recs = [_rec(0, 0.0, 0.0, 0.1), _rec(1, 0.1, 0.0, 0.2, status=0, error="timeout")]
    write_records(tmp_path / "r.jsonl", recs, {"engine": "x"})
    back, meta = read_records(tmp_path / "r.jsonl")
    assert back == recs and meta == {"engine": "x"}
