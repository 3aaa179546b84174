"""Through the renderers: no printed interval leaves its metric's domain (the varnish study's
hit ratio, p99 and backend fetches), and two values are shown with the reason for no CI."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console

from virtbench.analysis import Analysis, analyse
from virtbench.model import Better, Measurement, Metric
from virtbench.plugins import build_sections
from virtbench.report.html import render_html
from virtbench.report.text import render_json, render_markdown, render_terminal
from virtbench.store import Store, TrialRecord

METRICS = [Metric("hit_ratio", "%", Better.HIGHER, "cache hits / lookups"),
           Metric("p99", "ms", Better.LOWER, "99th percentile response time"),
           Metric("fetches", "requests", Better.LOWER, "backend fetches")]
VALUES = {  # per variant: one list per metric, one value per repetition
    "cold-warm": {"hit_ratio": [99.9, 98.1, 100.0], "p99": [1.2, 0.9, 4.5],
                  "fetches": [0.0, 1.0, 0.0]},
    "two-runs": {"hit_ratio": [99.0, 99.76], "p99": [3.6, 0.5], "fetches": [13.0, 0.0]},
}


def _analysis(tmp_path: Path) -> Analysis:
    store = Store(str(tmp_path / "s.db"))
    run = store.create_run(experiment="varnish", description="", spec_yaml="", spec_path="",
                           seed=1, host="h", target="local", baseline="cold-warm", version="t")
    store.add_variants(run, [(v, {"storage": v}) for v in VALUES], "cold-warm")
    store.add_workload(run, "web.load", "web.load", 0, {}, METRICS)
    order = 0
    for variant, by_metric in VALUES.items():
        for rep in range(len(by_metric["p99"])):
            store.record_trial(run, TrialRecord(variant, "web.load", rep, order, False, "ok", "",
                                                0.0, 1.0, "local", None, {}),
                               [Measurement(m, v[rep]) for m, v in by_metric.items()],
                               {m.name: m.unit for m in METRICS})
            order += 1
    return analyse(store, [run])


def test_every_interval_stays_in_its_domain(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    results = json.loads(render_json(analysis, sections=build_sections(analysis)))["results"]
    with_ci = [r for r in results if r["ci_low"] is not None]
    assert {r["metric"] for r in with_ci} == {"hit_ratio", "p99", "fetches"}
    for r in with_ci:
        assert r["variant"] == "cold-warm"
        assert 0.0 <= r["ci_low"] <= r["mean"] <= r["ci_high"]
        if r["unit"] == "%":
            assert r["ci_high"] <= 100.0 and r["ci_method"] == "Wilson (effective n)"
    assert {r["ci_method"] for r in with_ci} >= {"log-normal (Cox)", "bootstrap percentile"}


def test_two_values_are_shown_with_the_reason(tmp_path: Path) -> None:
    analysis = _analysis(tmp_path)
    sections = build_sections(analysis)
    two = [r for r in json.loads(render_json(analysis, sections=sections))["results"]
           if r["variant"] == "two-runs"]
    assert all(r["ci_low"] is None and r["no_ci_reason"] == "2 values: an interval needs at "
               "least 3" for r in two)
    html = render_html(analysis, sections=build_sections(analysis))
    assert "values 99 %, 99.76 %; no CI from 2 values" in html
    assert "values 500 µs, 3.6 ms; no CI from 2 values" not in html  # unit ms is not scaled
    assert "values 0.5 ms, 3.6 ms; no CI from 2 values" in html
    assert "2 values&#58; an interval needs at least 3" in render_markdown(analysis,
                                                                            sections=sections)
    console = Console(width=100, record=True, file=io.StringIO())
    render_terminal(analysis, console, sections=build_sections(analysis))
    text = console.export_text()
    assert "n<3" in text  # the ±CI column of the two-value variant
