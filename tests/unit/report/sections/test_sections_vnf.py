"""Study 002 sections: throughput vs neighbours, degradation range, fit, one block per host."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from virtbench.report.sections.vnf_scalability import vnf_sections

from .synthetic import (
    analysed,
    build_vnf,
    by_key,
    cell,
    check_renderable,
    cox_interval,
    new_store,
    row_where,
)


def _expected(values: dict[tuple[str, str], list[float]]) -> dict[str, float]:
    means = {n: float(np.mean(values[(f"neighbours={n}", "throughput_gbps")]))
             for n in range(4)}
    drops = [means[n] - means[n + 1] for n in range(3)]
    xs = [n for n in range(4) for _ in values[(f"neighbours={n}", "throughput_gbps")]]
    ys = [y for n in range(4) for y in values[(f"neighbours={n}", "throughput_gbps")]]
    fit = sps.linregress(xs, ys)
    half = sps.t.ppf(0.975, len(xs) - 2) * fit.stderr
    return {"drop_min": min(drops), "drop_max": max(drops), "slope": fit.slope,
            "low": fit.slope - half, "high": fit.slope + half, "r2": fit.rvalue ** 2}


def test_throughput_table_range_and_fit(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    values = build_vnf(store)
    analysis = analysed(store)
    sections = vnf_sections(analysis)
    check_renderable(analysis, sections)
    (table,) = by_key(sections, "vnf-scalability-net")
    assert [r[0] for r in table.rows] == ["0", "1", "2", "3"]
    for n in range(4):
        row = row_where(table, neighbours=str(n))
        x = np.asarray(values[(f"neighbours={n}", "throughput_gbps")])
        low, high = cox_interval(x.tolist())  # a throughput is positive
        assert cell(table, row, "throughput") == f"{x.mean():.4g} Gbit/s [{low:.4g}, {high:.4g}]"
        cpu = np.mean(values[(f"neighbours={n}", "cpu_busy_pct")])
        assert cell(table, row, "CPU busy").startswith(f"{cpu:.4g} %")
        assert cell(table, row, "VNFs") == str(n + 1)
        if n:  # change vs 0 neighbours: 100 (mean / mean at 0 − 1)
            base = np.mean(values[("neighbours=0", "throughput_gbps")])
            assert cell(table, row, "change %").startswith(f"{100 * (x.mean() / base - 1):+.3g} %")
    e = _expected(values)
    text = " ".join(table.paragraphs)
    assert f"{e['drop_min']:.4g} Gbit/s to {e['drop_max']:.4g} Gbit/s" in text
    assert f"slope {e['slope']:.4g} Gbit/s per neighbour" in text
    assert f"{e['low']:.4g} to {e['high']:.4g}" in text
    (summary,) = by_key(sections, "vnf-scalability-summary")
    assert summary.rows == [["h", "0–3", f"{e['drop_min']:.4g} Gbit/s – {e['drop_max']:.4g} Gbit/s",
                             f"{e['slope']:.4g} [{e['low']:.4g}, {e['high']:.4g}]",
                             f"{e['r2']:.3g}", "16"]]


def test_one_block_per_host_when_runs_are_compared(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    kvm = build_vnf(store, host="kvm-host", slope=-2.0)
    xen = build_vnf(store, host="xen-host", slope=-0.5)
    runs = [r.id for r in store.runs()]
    analysis = analysed(store, runs)
    sections = vnf_sections(analysis)
    check_renderable(analysis, sections)
    blocks = by_key(sections, "vnf-scalability-net")
    assert [s.title.rsplit(" — ", 1)[1] for s in blocks] == ["kvm-host", "xen-host"]
    assert all(len(s.rows) == 4 for s in blocks)
    (summary,) = by_key(sections, "vnf-scalability-summary")
    slopes = {row[0]: row[3] for row in summary.rows}
    for host, values in (("kvm-host", kvm), ("xen-host", xen)):
        e = _expected(values)
        assert slopes[host] == f"{e['slope']:.4g} [{e['low']:.4g}, {e['high']:.4g}]"
    assert float(slopes["kvm-host"].split()[0]) == pytest.approx(-2.0, abs=0.3)


def test_change_is_within_each_host(tmp_path: Path) -> None:
    store = new_store(tmp_path)
    build_vnf(store, host="kvm-host", slope=-2.0)
    xen = build_vnf(store, host="xen-host", slope=-0.5)
    analysis = analysed(store, [r.id for r in store.runs()])
    (_kvm, xen_block) = by_key(vnf_sections(analysis), "vnf-scalability-net")
    base = np.mean(xen[("neighbours=0", "throughput_gbps")])
    var = np.mean(xen[("neighbours=3", "throughput_gbps")])
    row = row_where(xen_block, neighbours="3")
    assert cell(xen_block, row, "change %").startswith(f"{100 * (var / base - 1):+.3g} %")
    assert cell(xen_block, row_where(xen_block, neighbours="0"), "change %") == "–"
