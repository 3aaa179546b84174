"""Study 004 sections: the per-run table with percentile CIs, and cold vs warm runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.report.sections.web import web_sections

from .synthetic import analysed, build_web, by_key, cell, check_renderable, new_store, row_where

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # 0 failures: ratio 0/0


def _quantile_ci(times: Any, q: float) -> tuple[float, float]:
    """Order statistics x(l), x(u): l the smallest k with P(B ≤ k) ≥ 2.5 %, u − 1 the smallest
    k with P(B ≤ k) ≥ 97.5 %, B ~ Binomial(n, q)."""
    x = np.sort(times)
    n = x.size
    cdf = sps.binom.cdf(np.arange(n + 1), n, q)
    low = int(np.argmax(cdf >= 0.025))
    high = int(np.argmax(cdf >= 0.975)) + 1
    return float(x[low - 1]), float(x[high - 1])


def test_per_run_table(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    expected = build_web(store)
    analysis = analysed(store)
    sections = web_sections(analysis)
    check_renderable(analysis, sections)
    memory, disk = by_key(sections, "web-runs")
    assert memory.title.endswith("memory") and disk.title.endswith("disk-file")
    assert [r[0] for r in memory.rows] == ["1", "2", "3"]  # repetition k = run k+1
    for rep in range(3):
        e = expected[("memory", rep)]
        row = row_where(memory, run=str(rep + 1))
        assert cell(memory, row, "samples") == "200 requests"
        assert cell(memory, row, "failures") == "0 requests"
        assert cell(memory, row, "success rate") == "100 %"
        assert cell(memory, row, "mean") == f"{e['response_time_mean']:.4g} ms"
        for column, metric, q in (("median", "response_time_median", 0.5),
                                  ("p90", "response_time_p90", 0.9)):
            low, high = _quantile_ci(e["times"], q)
            assert cell(memory, row, column) == f"{e[metric]:.4g} ms [{low:.4g}, {high:.4g}]"
        assert cell(memory, row, "Varnish hit ratio of the run") == f"{e['hit_ratio_run']:.4g} %"
    # Run 3 of disk-file: a failed request kept its time, so the stored times are not the
    # successful ones: the percentiles stand without a CI, and a warning says why.
    row = row_where(disk, run="3")
    assert cell(disk, row, "failures") == "1 requests"
    median = expected[("disk-file", 2)]["response_time_median"]
    assert cell(disk, row, "median") == f"{median:.4g} ms"
    assert "[" in cell(disk, row_where(disk, run="2"), "median")
    assert any("without a CI" in w for w in disk.warnings)
    assert not memory.warnings
    text = " ".join(memory.paragraphs)
    assert "success_rate (%): 100 × (samples − failures) / samples" in text


def test_cold_vs_warm(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    expected = build_web(store)
    analysis = analysed(store)
    (section,) = by_key(web_sections(analysis), "web-cold-warm")
    for variant in ("memory", "disk-file"):
        cold = expected[(variant, 0)]["response_time_mean"]
        warm = np.mean([expected[(variant, r)]["response_time_mean"] for r in (1, 2)])
        row = row_where(section, variant=variant, metric="response_time_mean (ms)")
        assert cell(section, row, "cold") == f"{cold:.4g} ms"
        # two warm runs: no interval, both values and the reason instead
        runs = sorted(expected[(variant, r)]["response_time_mean"] for r in (1, 2))
        assert cell(section, row, "warm") == (f"{warm:.4g} ms (values {runs[0]:.4g} ms, "
                                              f"{runs[1]:.4g} ms; no CI from 2 values)")
        assert cell(section, row, "warm / cold") == f"{warm / cold:.3g}"
        assert cell(section, row, "warm runs") == "2"
        hits = row_where(section, variant=variant, metric="hit_ratio_run (%)")
        assert cell(section, hits, "cold") == "10 %"
        assert float(cell(section, hits, "warm / cold")) > 9


def test_two_runs_still_compare_cold_and_warm(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    expected = build_web(store)
    # Keep runs 1 and 2 only: analysis.first_vs_rest needs 3, the section computes it itself.
    analysis = analysed(store)
    analysis.first_vs_rest = []
    for group in analysis.per_repetition.values():
        for variant, reps in group.items():
            group[variant] = [(r, v) for r, v in reps if r < 2]
    (section,) = by_key(web_sections(analysis), "web-cold-warm")
    row = row_where(section, variant="memory", metric="response_time_mean (ms)")
    ratio = expected[("memory", 1)]["response_time_mean"] / expected[("memory", 0)][
        "response_time_mean"]
    assert cell(section, row, "warm / cold") == f"{ratio:.3g}"
    assert cell(section, row, "warm runs") == "1"
