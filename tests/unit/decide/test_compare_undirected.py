"""compare and the gate leave out metrics without a direction, and say so."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from synthetic import add_run

from virtbench.decide.compare import compare_run_sets, compare_runs
from virtbench.decide.runs import load_run
from virtbench.model import NOT_JUDGED, Better, Metric, VirtbenchError
from virtbench.report.gate.comparison_rows import summary_line
from virtbench.store import Store
from virtbench.store.portable import export_run

# time_s gets each trial's value, packets_sent its inverse (synthetic.add_run): halving the
# time doubles the count, which a lower-is-better direction would call a regression.
METRICS = [Metric("time_s", "s", Better.LOWER, "wall time of one operation", True),
           Metric("packets_sent", "packets", None, "probes the client sent")]


def _runs(st: Store, seed: int = 0) -> tuple[str, str]:
    rng = np.random.default_rng(seed)
    base = add_run(st, {"default": rng.normal(1.0, 0.01, 12)}, metrics=METRICS)
    new = add_run(st, {"default": rng.normal(0.5, 0.005, 12)}, metrics=METRICS)
    return base, new


def test_the_gate_skips_a_metric_without_direction_and_says_so(sqlite_store: Store) -> None:
    base, new = _runs(sqlite_store)
    result = compare_runs(load_run(base, lambda: sqlite_store),
                          load_run(new, lambda: sqlite_store), fail_pct=5.0)
    assert [row.metric.name for row in result.rows] == ["time_s"]
    assert result.rows[0].result.verdict == "better"
    assert result.not_judged == ["w.packets_sent"]
    assert not result.regressions and not result.unjudged
    line = summary_line(result, allow_unjudged=False)
    assert line.startswith("gate passed") and "1 metric left out: no direction" in line
    document = result.as_dict()
    assert document["not_judged"] == {"metrics": ["w.packets_sent"], "why": NOT_JUDGED}
    assert all(row["metric"] != "packets_sent" for row in document["rows"])


def test_run_means_also_leave_it_out(sqlite_store: Store) -> None:
    bases = [load_run(r, lambda: sqlite_store) for r in _runs(sqlite_store, 1)[:1]
             + _runs(sqlite_store, 2)[:1]]
    news = [load_run(r, lambda: sqlite_store) for r in _runs(sqlite_store, 3)[1:]
            + _runs(sqlite_store, 4)[1:]]
    for run in bases + news:  # one experiment file per side (the runs share their hash)
        assert run.digest == bases[0].digest
    result = compare_run_sets(bases, news, fail_pct=5.0)
    assert {row.metric.name for row in result.rows} == {"time_s"}
    assert result.not_judged == ["w.packets_sent"]


def test_asking_for_it_by_name_is_refused(sqlite_store: Store) -> None:
    base, new = _runs(sqlite_store)
    with pytest.raises(VirtbenchError, match="packets_sent: no direction"):
        compare_runs(load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store),
                     metrics=["w.packets_sent"])


def test_the_terminal_names_what_it_left_out(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                            tmp_path: Path) -> None:
    base, new = _runs(sqlite_store)
    store = str(tmp_path / "decide.db")
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5")
    assert code == 0, out
    assert "w.packets_sent" in out and "no direction" in out
    code, out, _ = cli("compare", base, new, "-s", store, "--json")
    assert code == 0 and json.loads(out)["not_judged"]["metrics"] == ["w.packets_sent"]


def test_a_result_file_keeps_the_missing_direction(sqlite_store: Store, tmp_path: Path) -> None:
    base, _new = _runs(sqlite_store)
    path = tmp_path / "base.json.gz"
    export_run(sqlite_store, base, path)
    loaded = load_run(str(path), lambda: sqlite_store)
    assert loaded.metrics[("w", "packets_sent")].better is None
    assert loaded.metrics[("w", "time_s")].better is Better.LOWER


def test_the_markdown_gate_names_what_it_left_out(sqlite_store: Store) -> None:
    from virtbench.report.gate.junit import render_junit
    from virtbench.report.gate.markdown import render_markdown

    base, new = _runs(sqlite_store)
    result = compare_runs(load_run(base, lambda: sqlite_store),
                          load_run(new, lambda: sqlite_store), fail_pct=5.0)
    markdown = render_markdown(result)
    # the stored name is escaped as every stored text is (safetext.markdown_text)
    assert f"Left out, {NOT_JUDGED}: w.packets&#95;sent." in markdown
    assert "| w · packets" not in markdown  # no row for it
    assert '<property name="not_judged" value="w.packets_sent"' in render_junit(result)
