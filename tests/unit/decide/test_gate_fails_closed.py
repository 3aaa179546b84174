"""The gate never passes what it cannot judge: counts that start from zero are judged by an
exact test on counts, rows without a verdict (n < 2, no ratio) fail it unless
--allow-unjudged, and a row that fails it is never shown 'equivalent'."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from synthetic import SPEC, add_run, facts

from virtbench.decide.compare import compare_runs
from virtbench.decide.runs import load_run
from virtbench.model import Better, Measurement, Metric
from virtbench.stats.counts import zero_baseline_increase_p
from virtbench.store import Store, TrialRecord

COUNTS = [Metric("failures", "count", Better.LOWER, "failed requests per trial", True),
          Metric("cache_hits", "count", Better.HIGHER, "cache hits per trial")]


def _count_run(store: Store, failures: Sequence[int], hits: Sequence[int]) -> str:
    run_id = store.create_run(experiment="exp", description="", spec_yaml=SPEC, spec_path="",
                              seed=1, host="host-a", target="local", baseline="default",
                              version="0.1.0")
    store.add_variants(run_id, [("default", {})], "default")
    store.add_workload(run_id, "w", "web.load", 0, {}, COUNTS)
    store.add_facts(run_id, "before", facts())
    for rep, (failed, hit) in enumerate(zip(failures, hits, strict=True)):
        now = time.time()
        store.record_trial(run_id, TrialRecord(
            variant="default", workload_id="w", repetition=rep, order_index=rep, warmup=False,
            status="ok", error="", started_at=now, ended_at=now, target="local", facts_id=None,
            notes={}), [Measurement("failures", float(failed)), Measurement("cache_hits",
                                                                            float(hit))],
            {m.name: m.unit for m in COUNTS})
    store.set_run_status(run_id, "complete")
    return run_id


def test_a_count_from_a_clean_zero_fails_the_gate(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                  tmp_path: Path) -> None:
    base = _count_run(sqlite_store, [0] * 5, [0] * 5)
    new = _count_run(sqlite_store, [50] * 5, [40] * 5)
    code, out, _ = cli("compare", base, new, "-s", str(tmp_path / "decide.db"),
                       "--fail-if-worse", "5", "--json")
    rows = {row["metric"]: row for row in json.loads(out)["rows"]}
    assert code == 1
    assert rows["failures"]["regression"] and rows["failures"]["verdict"] == "worse"
    assert rows["failures"]["ratio"] is None  # no ratio from zero; the count test decided
    # More hits where more is better: judged (better), never a regression.
    assert rows["cache_hits"]["verdict"] == "better" and not rows["cache_hits"]["regression"]
    assert all(row["unjudged"] is None for row in rows.values())


def test_zero_on_both_sides_is_no_change(sqlite_store: Store, cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    base = _count_run(sqlite_store, [0] * 5, [3] * 5)
    new = _count_run(sqlite_store, [0] * 5, [3, 3, 4, 3, 3])
    code, out, _ = cli("compare", base, new, "-s", str(tmp_path / "decide.db"),
                       "--fail-if-worse", "5")
    assert code == 0, out
    assert "cannot judge" not in out


def test_one_failure_in_five_trials_is_not_yet_a_regression(sqlite_store: Store) -> None:
    base = _count_run(sqlite_store, [0] * 5, [1] * 5)
    new = _count_run(sqlite_store, [0, 0, 1, 0, 0], [1] * 5)
    result = compare_runs(load_run(base, lambda: sqlite_store),
                          load_run(new, lambda: sqlite_store), fail_pct=5.0)
    row = next(r for r in result.rows if r.metric.name == "failures")
    # All of K = 1 event fell in NEW: p = (5 / 10) ** 1 = 0.5.
    assert row.result.p_worse == pytest.approx(0.5)
    assert row.result.verdict == "inconclusive" and not row.regression and not row.unjudged


def test_one_repetition_per_side_cannot_be_judged(sqlite_store: Store, cli,  # type: ignore[no-untyped-def]
                                                  tmp_path: Path) -> None:
    store = str(tmp_path / "decide.db")
    base = add_run(sqlite_store, {"default": [1.0]})
    new = add_run(sqlite_store, {"default": [3.0]})  # 3x slower, one value each
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5")
    assert code == 1
    assert "cannot judge 2 of 2" in " ".join(out.split())
    assert "fewer than 2 values on a side" in out
    code, out, _ = cli("compare", base, new, "-s", store, "--fail-if-worse", "5",
                       "--allow-unjudged")
    assert code == 0 and "passed (--allow-unjudged)" in " ".join(out.split())
    # Without a gate nothing is judged, so nothing fails: compare only reports.
    code, _, _ = cli("compare", base, new, "-s", store)
    assert code == 0


def test_a_row_failing_the_gate_is_never_shown_equivalent(sqlite_store: Store) -> None:
    # 1.2 % slower with a tiny spread: equivalent within ±2 %, and worse than a 0.5 % gate.
    rng = np.random.default_rng(7)
    base = add_run(sqlite_store, {"default": rng.normal(1.0, 0.001, 30)})
    new = add_run(sqlite_store, {"default": rng.normal(1.012, 0.001, 30)})
    loaded = (load_run(base, lambda: sqlite_store), load_run(new, lambda: sqlite_store))
    without_gate = compare_runs(*loaded)
    assert {r.result.verdict for r in without_gate.rows} == {"equivalent"}
    gated = compare_runs(*loaded, fail_pct=0.5)
    assert all(r.regression and r.result.verdict == "worse" for r in gated.rows)


def test_the_count_test_keeps_its_false_alarm_rate() -> None:
    # Both sides one rate (0.05 to 2 events per trial, n = 3 to 10 per side); the gate's false
    # alarms over all comparisons, those with a BASE above zero included (no count test).
    rng = np.random.default_rng(11)
    for rate in (0.05, 0.3, 1.0, 2.0):
        for n in (3, 5, 10):
            base = rng.poisson(rate, (20_000, n))
            new = rng.poisson(rate, (20_000, n))
            alarms = 0
            for b, x in zip(base, new, strict=True):
                p = zero_baseline_increase_p(b.tolist(), x.tolist())
                alarms += p is not None and p < 0.05
            assert alarms / 20_000 <= 0.05, (rate, n, alarms)
