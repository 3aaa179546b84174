"""Study 001 sections on a synthetic ovs / ovs-dpdk × 0 / 100 Mbit/s grid."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.report.sections.net_qos import qos_sections

from .synthetic import (
    QOS_LEVELS,
    analysed,
    build_qos,
    by_key,
    cell,
    check_renderable,
    new_store,
    qos_variant,
    row_where,
)

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # a zero-loss baseline cell


def _bounds(text: str) -> tuple[float, float, float]:
    """'+12.3 % [+8.1, +16.9]' -> (12.3, 8.1, 16.9)."""
    m = re.fullmatch(r"([-+][\d.e+-]+) % \[([-+][\d.e+-]+), ([-+][\d.e+-]+)\]", text)
    assert m, text
    return float(m[1]), float(m[2]), float(m[3])


def _t_ci(values: list[float]) -> tuple[float, float, float]:
    x = np.asarray(values)
    half = sps.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size)
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


def test_grading_table_grades_each_cell_from_its_means(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_qos(store)
    analysis = analysed(store)
    sections = qos_sections(analysis)
    check_renderable(analysis, sections)
    (grading,) = by_key(sections, "net-qos-grading")
    assert len(grading.rows) == 4
    dpdk = row_where(grading, switch="ovs-dpdk", background="100")
    ovs = row_where(grading, switch="ovs", background="100")
    delay = np.mean(values[(qos_variant("ovs-dpdk", 100), "study_delay_ms")])
    assert cell(grading, dpdk, "study delay").startswith(f"{delay:.4g} ms · very good")
    assert cell(grading, ovs, "study delay").endswith("· good")  # 200 ms: 150–300
    assert cell(grading, ovs, "study jitter").endswith("· medium")  # 110 ms: 75–125
    assert cell(grading, dpdk, "study jitter").endswith("· good")
    assert cell(grading, ovs, "study loss").endswith("· poor")  # 20 % > 15 %
    assert cell(grading, row_where(grading, switch="ovs", background="0"),
                "study loss") == "0 % · very good"
    assert cell(grading, ovs, "one-way delay").endswith("150–400 ms")
    assert cell(grading, dpdk, "one-way delay").endswith("0–150 ms")
    mean, low, high = _t_ci(values[(qos_variant("ovs-dpdk", 100), "emodel_r")])
    assert cell(grading, dpdk, "E-model R") == f"{mean:.4g} [{low:.4g}, {high:.4g}]"
    assert cell(grading, dpdk, "n") == "5"
    # The definitions are in the paragraphs: TIPHON thresholds, G.114 bands, E-model formula.
    text = " ".join(grading.paragraphs)
    for needle in ("< 150 ms very good", "0–150 ms: acceptable", "R = 93.2 − Id − Ie_eff",
                   "MOS = 1 + 0.035·R"):
        assert needle in text


@pytest.mark.parametrize("compare_by", [True, False])
def test_change_vs_baseline_switch_at_the_same_rate(tmp_path: Path, compare_by: bool) -> None:
    store = new_store(tmp_path)
    values = build_qos(store, compare_by=compare_by)
    analysis = analysed(store)
    assert analysis.compare_knob == ("switch" if compare_by else None)
    (change,) = by_key(qos_sections(analysis), "net-qos-change")
    for metric, unit in (("study_delay_ms", "ms"), ("throughput_mbps", "Mbit/s")):
        for rate in (0, 100):
            base = np.mean(values[(qos_variant("ovs", rate), metric)])
            var = np.mean(values[(qos_variant("ovs-dpdk", rate), metric)])
            expected = 100 * (var / base - 1)
            row = row_where(change, **{"metric": f"{metric} ({unit})", "switch": "ovs-dpdk",
                                       "background": str(rate)})
            point, low, high = _bounds(cell(change, row, "change %"))
            assert point == pytest.approx(expected, rel=2e-3)
            assert low < point < high
            assert cell(change, row, "direction") == "better"
            assert cell(change, row, "p") != "–"
    # Only the non-baseline switch is compared, never ovs with itself, and never across rates:
    assert {r[1] for r in change.rows} == {"ovs-dpdk"}
    # A zero baseline mean (ovs loss at 0 Mbit/s) has no percent change.
    assert not [r for r in change.rows if r[0].startswith("study_loss_pct") and r[2] == "0"]
    assert ("Holm-corrected per metric" in change.paragraphs[0]) == compare_by


def test_aggregate_improvement_follows_its_definition(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_qos(store)
    analysis = analysed(store)
    (agg,) = by_key(qos_sections(analysis), "net-qos-improvement")
    per_cell = {}
    for metric in ("study_delay_ms", "study_jitter_ms", "study_throughput_mbps",
                   "study_loss_pct"):
        for rate in (0, 100):
            base = np.mean(values[(qos_variant("ovs", rate), metric)])
            var = np.mean(values[(qos_variant("ovs-dpdk", rate), metric)])
            if base == 0:
                continue
            higher = metric == "study_throughput_mbps"
            per_cell[(metric, rate)] = 100 * ((var - base) if higher else (base - var)) / base
    assert len(per_cell) == 7 and QOS_LEVELS["study_loss_pct"]["ovs"][0] == 0
    expected = float(np.mean(list(per_cell.values())))
    summary = row_where(agg, switch="ovs-dpdk", cell="all cells")
    point, low, high = _bounds(cell(agg, summary, "improvement %"))
    assert point == pytest.approx(expected, rel=2e-3)
    assert low < point < high
    for (metric, rate), pct in per_cell.items():
        row = row_where(agg, switch="ovs-dpdk", cell=f"{metric} @ {rate} Mbit/s")
        assert cell(agg, row, "improvement %") == f"{pct:+.3g} %"
    assert any("study_loss_pct @ 0 Mbit/s" in w for w in agg.warnings)
    assert "(base − variant) / base" in " ".join(agg.paragraphs)


def test_aggregate_ci_matches_the_slow_reference_bootstrap() -> None:
    from virtbench.net_qos.aggregate import qos_improvement
    from virtbench.report.sections.net_qos import aggregate_ci

    rng = np.random.default_rng(5)
    base = {("study_delay_ms", 0.0): rng.normal(100, 8, 12),
            ("study_throughput_mbps", 0.0): rng.normal(400, 30, 12)}
    var = {("study_delay_ms", 0.0): rng.normal(80, 8, 12),
           ("study_throughput_mbps", 0.0): rng.normal(440, 30, 12)}
    higher = {"study_delay_ms": False, "study_throughput_mbps": True}
    slow = qos_improvement({k: list(v) for k, v in base.items()},
                           {k: list(v) for k, v in var.items()}, higher, resamples=2000)
    low, high = aggregate_ci(base, var, list(base), higher, 0.95)
    width = slow.ci_high - slow.ci_low
    assert low == pytest.approx(slow.ci_low, abs=0.1 * width)
    assert high == pytest.approx(slow.ci_high, abs=0.1 * width)
    assert low < slow.percent < high
