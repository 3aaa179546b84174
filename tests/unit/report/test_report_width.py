"""Every per-metric terminal table fits 80 columns and names every row's variant in full."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from virtbench.analysis import Analysis, analyse
from virtbench.model import Better, Measurement, Metric
from virtbench.plugins import build_sections
from virtbench.report.fit import identity_of
from virtbench.report.text import metric_tables, render_json, render_markdown, render_terminal
from virtbench.spec import load_experiment
from virtbench.store import Store, TrialRecord

REPO = Path(__file__).resolve().parents[3]
METRICS = [Metric("delay", "s", Better.LOWER, "one-way delay", True),
           Metric("throughput", "bit/s", Better.HIGHER, "received bits per second"),
           Metric("loss", "%", Better.LOWER, "lost packets")]
LONG_NAMES: list[tuple[str, dict[str, object]]] = [
              ("baseline-configuration-with-a-rather-long-descriptive-name", {"k": 0}),
              ("tuned-configuration-with-hugepages-pinned-vcpus-and-multiqueue", {"k": 1}),
              ("tuned-configuration-with-hugepages-pinned-vcpus-without-multiqueue", {"k": 2})]


def _analysis(tmp_path: Path, variants: list[tuple[str, dict[str, object]]], baseline: str,
              spec: str = "name: x\n") -> Analysis:
    store = Store(str(tmp_path / "s.db"))
    run = store.create_run(experiment="x", description="", spec_yaml=spec, spec_path="",
                           seed=1, host="h", target="local", baseline=baseline, version="t")
    store.add_variants(run, variants, baseline)
    store.add_workload(run, "net.qos-transfer", "net.qos-transfer", 0, {}, METRICS)
    rng = np.random.default_rng(1)
    order = 0
    for rep in range(3):
        for i, (name, _knobs) in enumerate(variants):
            values = {"delay": 1e-3 * (1 + i / 7) * rng.lognormal(0, 0.05),
                      "throughput": 9.4e8 / (1 + i / 9) * rng.lognormal(0, 0.02),
                      "loss": min(100.0, 0.5 * i * rng.uniform(0.5, 1.5))}
            store.record_trial(run, TrialRecord(
                name, "net.qos-transfer", rep, order, False, "ok", "", 0.0, 1.0, "local", None,
                {"noise.steal_pct": "0", "noise.foreign_cpu_pct": "30" if i == 1 else "1"}),
                [Measurement(m, v) for m, v in values.items()],
                {m.name: m.unit for m in METRICS})
            order += 1
    return analyse(store, [run])


def _row_blocks(text: str) -> list[list[list[str]]]:
    """Table rows as lists of lines, each line as its cells (a ruled table splits rows)."""
    blocks: list[list[list[str]]] = []
    current: list[list[str]] = []
    ruled = "├" in text
    for line in text.splitlines():
        if line.startswith("│"):
            current.append([c.strip() for c in line.split("│")[1:-1]])
            if not ruled:
                blocks.append(current)
                current = []
        elif line.startswith(("├", "└")) and current:
            blocks.append(current)
            current = []
    return blocks


def _check_tables(analysis: Analysis) -> int:
    identity = identity_of(analysis.variants)
    k = len(identity.columns)
    expected = {"".join(cells).replace(" ", ""): name for name, cells in identity.cells.items()}
    tables = 0
    for wid, _name, _params in analysis.workloads:
        for metric in analysis.metrics_of(wid):
            rows = [r for r in analysis.rows
                    if r.workload_id == wid and r.metric.name == metric.name]
            for table in metric_tables(analysis, 80, rows, metric, identity):
                console = Console(width=80, record=True, file=io.StringIO())
                console.print(table)
                text = console.export_text()
                assert max(len(line) for line in text.splitlines()) <= 80, text
                # nothing cropped: every row and rule ends with the table's right border
                assert all(line.rstrip()[-1] in "│┃┓┩┤┘" for line in text.splitlines()
                           if line.startswith(("│", "┃", "┏", "┡", "├", "└"))), text
                found = []
                for block in _row_blocks(text):
                    ident = "".join("".join(line[i] for line in block) for i in range(k))
                    ident = ident.replace(" ", "").replace("(base)", "")
                    assert ident in expected, (ident, text)
                    found.append(expected[ident])
                assert sorted(found) == sorted(r.variant for r in rows), text
                tables += 1
    return tables


def test_matrix_experiment_one_column_per_factor(tmp_path: Path) -> None:
    exp, text = load_experiment(REPO / "examples" / "vswitch-qos.yaml")
    variants = [(v.name, v.knobs) for v in exp.all_variants()]
    analysis = _analysis(tmp_path, variants, exp.baseline_name, text)
    assert identity_of(analysis.variants).columns == ["switch", "background_mbps"]
    assert _check_tables(analysis) >= len(METRICS)
    console = Console(width=80, record=True, file=io.StringIO())
    render_terminal(analysis, console, sections=build_sections(analysis))
    out = console.export_text()
    assert "ovs-dpdk" in out and "linux-bridge" in out
    assert "3 of 36 trials measured under noise" in out  # one variant, three repetitions
    assert "3 (3!)" in out


@pytest.mark.parametrize("example", ["cpu-features.yaml", "cpu-features-study.yaml"])
def test_factorial_experiment_names_stay_whole(tmp_path: Path, example: str) -> None:
    exp, _text = load_experiment(REPO / "examples" / example)
    variants = [(v.name, v.knobs) for v in exp.all_variants()]
    analysis = _analysis(tmp_path, variants, exp.baseline_name)
    assert identity_of(analysis.variants).columns == ["variant"]
    assert _check_tables(analysis) >= len(METRICS)


def test_long_variant_names_wrap_not_vanish(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path, LONG_NAMES, LONG_NAMES[0][0])
    assert _check_tables(analysis) >= len(METRICS)


def test_html_marks_noisy_trials(tmp_path: Path) -> None:
    from virtbench.report.html import render_html

    analysis = _analysis(tmp_path, LONG_NAMES, LONG_NAMES[0][0])
    html = render_html(analysis, sections=build_sections(analysis))
    assert "3 of 9 trials measured under noise" in html
    assert html.count('<span class="tag noisy" title=') == len(METRICS)  # one variant, every metric
    document = json.loads(render_json(analysis, sections=build_sections(analysis)))
    assert document["noise"]["sampled_trials"] == 9
    assert {m["repetition"] for m in document["noise"]["marked_trials"]} == {0, 1, 2}
    assert {r["noisy_trials"] for r in document["results"]} == {0, 3}
    assert "| 3 (3!) |" in render_markdown(analysis, sections=build_sections(analysis))



def test_details_per_repetition_tables_fit(tmp_path: Path) -> None:
    exp, text = load_experiment(REPO / "examples" / "vswitch-qos.yaml")
    analysis = _analysis(tmp_path, [(v.name, v.knobs) for v in exp.all_variants()],
                         exp.baseline_name, text)
    console = Console(width=80, record=True, file=io.StringIO())
    render_terminal(analysis, console, details=True, sections=build_sections(analysis))
    out = console.export_text()
    assert "per repetition" in out and "rep 3" in out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert "…" not in out
