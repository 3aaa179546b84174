"""The report of an RFC 9971 multi-goal search: per goal its bounds, result and settings (with
the RFC 2544 equivalence named when it holds), and the trace."""

from __future__ import annotations

from pathlib import Path

from virtbench.model import Measurement
from virtbench.plugins import build_sections
from virtbench.runner.search import goal_metrics
from virtbench.search.multi import MultiSearch
from virtbench.search.spec import SearchSpec
from virtbench.store import Store

from .synthetic import SyntheticRun, analysed, by_key, cell, check_renderable, new_store, row_where

BLOCK = {"load": "rate", "unit": "pps", "lower": 1000, "upper": 100000, "integer": True,
         "goals": [{"name": "ndr", "loss_ratio": 0, "exceed_ratio": 0,
                    "final_trial_duration": 60, "duration_sum": 60, "width": 0.01,
                    "initial_trial_duration": 10},
                   {"name": "pdr", "loss_ratio": 0.005, "exceed_ratio": 0.5,
                    "final_trial_duration": 10, "duration_sum": 20, "width": 0.01,
                    "initial_trial_duration": 10}]}
SPEC = ("name: x\nworkloads:\n  - name: test.w\n    id: g\n    search: "
        f"{BLOCK!r}\n".replace("'", '"').replace("True", "true"))


def _store(tmp_path: Path, capacity: float) -> SyntheticRun:
    return _store_in(new_store(tmp_path), capacity)


def _store_in(store: Store, capacity: float) -> SyntheticRun:
    """A multi-goal search of a device losing what exceeds ``capacity``, stored as the
    runner stores it."""
    spec = SearchSpec.model_validate(BLOCK)
    run = SyntheticRun(store, variants=[("a", {})], baseline="a",
                       workload_id="g", workload="test.w", metrics=goal_metrics(spec),
                       spec=SPEC)
    search = MultiSearch(spec.multi_plan())
    while (step := search.next()) is not None:
        loss = max(0.0, (step.load - capacity) / step.load)
        search.record(loss)
        labels = {"series": "search", "step": str(len(search.trace) - 1)}
        found = [Measurement("search_load", step.load, 0.0, labels),
                 Measurement("search_loss_ratio", loss, 0.0, labels),
                 Measurement("search_duration", step.duration_s, 0.0, labels)]
        if search.next() is None:
            results = search.results()
            found.append(Measurement("search_trials", float(len(search.trace))))
            assert results[0].lower is not None
            found.append(Measurement("capacity", results[0].lower))
            for r in results:
                assert r.lower is not None and r.upper is not None
                found += [Measurement(f"{r.goal.name}_lower", r.lower),
                          Measurement(f"{r.goal.name}_upper", r.upper),
                          Measurement(f"{r.goal.name}_regular", 1.0)]
        run.trial("a", len(search.trace) - 1, found)
    return run


def test_each_goal_has_its_row_with_bounds_settings_and_equivalence(tmp_path: Path) -> None:
    run = _store(tmp_path, 20_000.0)
    analysis = analysed(run.store)
    sections = build_sections(analysis)
    [summary] = by_key(sections, "capacity-goals")[:1]
    ndr = row_where(summary, goal="ndr")
    lower = float(cell(summary, ndr, "lower bound").split()[0].replace(",", ""))
    assert lower <= 20_000
    assert cell(summary, ndr, "result") == "regular"
    assert "RFC 2544 throughput" in cell(summary, ndr, "settings")
    pdr = row_where(summary, goal="pdr")
    assert "RFC 2544" not in cell(summary, pdr, "settings")
    assert "exceed 0.5" in cell(summary, pdr, "settings")
    [trace] = by_key(sections, "capacity-goals-trace-a-g")
    assert {r[-1] for r in trace.rows} >= {"ndr, pdr", "pdr"}  # 60 s trials, 10 s trials
    check_renderable(analysis, sections)


def test_goal_results_render_in_html_and_compare_like_any_metric(tmp_path: Path) -> None:
    from virtbench.decide.compare import compare_runs
    from virtbench.decide.runs import load_run
    from virtbench.report.html import render_html

    base = _store(tmp_path, 20_000.0)
    analysis = analysed(base.store)
    html = render_html(analysis, sections=build_sections(analysis))
    assert "RFC 9971 goals" in html and "RFC 2544 throughput" in html
    new_store_ = new_store(tmp_path, "new.db")
    new = _store_in(new_store_, 10_000.0)
    comparison = compare_runs(load_run(base.run_id, lambda: base.store),
                              load_run(new.run_id, lambda: new_store_), fail_pct=5.0)
    judged = {row.metric.name for row in comparison.rows}
    assert {"capacity", "ndr_lower", "pdr_lower", "ndr_upper"} <= judged
    row = next(r for r in comparison.rows if r.metric.name == "capacity")
    assert row.result.ratio is not None and 0.45 < row.result.ratio < 0.55  # 10 000 / 20 000
    assert row.unjudged  # one search per side: the gate says it cannot judge, never passes
