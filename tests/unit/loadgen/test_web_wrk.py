"""The wrk engine's script, command line and summary mapping (on real wrk output)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from virtbench.loadgen.config import LoadConfig
from virtbench.loadgen.wrk import lua_script, parse_wrk_output, summary_from_wrk, wrk_argv

DATA = Path(__file__).resolve().parents[2] / "data" / "wrk"
URLS = [f"http://127.0.0.1:6081/p{i}.html" for i in range(3)]


def test_summary_of_a_cached_run() -> None:
    s = summary_from_wrk(parse_wrk_output((DATA / "uniform-20-urls.txt").read_text()))
    assert s.samples == 14310 and s.failures == 0 and s.success_rate_pct == 100.0
    assert s.achieved_rate == pytest.approx(14310 / 1.100108)
    assert s.response_time_median_ms == pytest.approx(0.484)
    assert s.response_time_p99_ms == pytest.approx(68.335)
    assert s.response_time_mean_ms == pytest.approx(3.157569428)
    assert s.hit_ratio_client_pct == pytest.approx(100 * 14290 / 14310)
    assert s.received_mb_per_s == pytest.approx(19426482 / 1.100108 / 1e6)
    assert math.isnan(s.send_lag_p99_ms) and math.isnan(s.ttfb_mean_ms)


def test_every_503_is_a_failure_and_times_are_undefined() -> None:
    s = summary_from_wrk(parse_wrk_output((DATA / "backend-down-503.txt").read_text()))
    assert s.samples == 13711 and s.failures == 13711 and s.success_rate_pct == 0.0
    assert math.isnan(s.response_time_mean_ms) and math.isnan(s.hit_ratio_client_pct)
    assert s.errors == {"http_4xx_5xx": 13711}


def test_missing_summary_line_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no summary line"):
        parse_wrk_output("Running 1s test @ http://127.0.0.1:1\n")


def test_script_seeds_each_thread_and_sends_the_host_header() -> None:
    script = lua_script(["/a", "/b"], "127.0.0.1", 42, "uniform", 2)
    assert "math.randomseed(seed * 7919 + thread_number * 104729 + 1)" in script
    assert "local seed = 42" in script and 'local host = "127.0.0.1"' in script
    assert "math.random(#reqs)" in script
    assert "function response(" not in script  # hit counting costs; off unless asked
    assert "function response(" in lua_script(["/a"], "h", 1, "uniform", 2, count_hits=True)
    assert "pos = pos % #reqs + 1" in lua_script(["/a", "/b"], "h", 1, "sequential", 2)
    single = lua_script(["/only"], "h:1", 1, "uniform", 2)
    assert "function request()" not in single and 'wrk.path = "/only"' in single


def test_argv_threads_and_whole_seconds(tmp_path: Path) -> None:
    cfg = LoadConfig(engine="wrk", model="closed", users=1, wrk_threads=4, duration_s=2.5,
                     timeout_s=0.3, urls=URLS)
    argv = wrk_argv(cfg, tmp_path / "s.lua", "http://127.0.0.1:6081")
    assert argv[:5] == ["wrk", "-t1", "-c1", "-d3s", "--timeout=1s"]


def test_wrk_engine_limits_are_named() -> None:
    with pytest.raises(ValidationError, match="engine: wrk runs only the closed model"):
        LoadConfig(engine="wrk", model="open", urls=URLS)
    with pytest.raises(ValidationError, match="engine: wrk has no think time"):
        LoadConfig(engine="wrk", model="closed", think_time_s=0.1, urls=URLS)
