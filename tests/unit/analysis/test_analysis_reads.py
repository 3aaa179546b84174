"""What the analysis reads from the store, pinned against a plain reference: every sample read
back one row at a time (`StoreReader.samples`) and grouped in Python. The analysis reads its
groups and series through bulk queries and NumPy; whatever shape the samples take (interleaved
metrics and series labels, values without a status of ok, missing values, several runs), the
groups, their order and every value must be the same."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from virtbench.analysis import analyse
from virtbench.analysis.build import MAX_TABLE_REPETITIONS
from virtbench.model import Better, Measurement, Metric
from virtbench.store import Store, StoreReader, TrialRecord

METRICS = [
    Metric("time_s", "s", Better.LOWER, "time of the trial", primary=True),
    Metric("ops", "ops/s", Better.HIGHER, "operations per second"),
    Metric("latency", "s", Better.LOWER, "per-request latency"),
    Metric("queue", "1", Better.LOWER, "queue length, every second"),
]
UNITS = {m.name: m.unit for m in METRICS}


def _trial(rng: np.random.Generator, variant_index: int, rep: int) -> list[Measurement]:
    """Per-trial values (one of them sometimes unmeasured or not ok), and series: per-request
    latencies without a series label interleaved with a queue series of two labels, one
    latency without a value, and a per-trial metric that also has a series."""
    ms: list[Measurement] = []
    for k in range(3):
        ms.append(Measurement("time_s", float(rng.normal(1 + variant_index, 0.1))))
        ms.append(Measurement("ops", None, status="too_fast") if (rep + k) % 4 == 0
                  else Measurement("ops", float(rng.normal(100, 5)),
                                   status="ok" if k else "partial"))
    for i in range(40 + 7 * rep):
        ms.append(Measurement("latency", float(rng.lognormal(-3, 0.4)), t=i * 0.05,
                              labels={"url": f"/p{i % 3}"}))
        if i % 5 == 0:
            ms.append(Measurement("queue", float(i % 7), t=i * 0.05,
                                  labels={"series": "rx" if i % 10 else "tx", "q": "0"}))
    ms.append(Measurement("latency", None, t=99.0, status="timeout"))
    ms.append(Measurement("ops", 5.0 + rep, t=1.0, labels={"series": "warm"}))
    return ms


def _fill(st: Store, name: str, reps: int, seed: int) -> str:
    run_id = st.create_run(experiment=name, description="", spec_yaml="", spec_path="",
                           seed=1, host=name, target="local", baseline="a", version="t")
    variants = [("a", {"k": 1}), ("b", {"k": 2}), ("c", {"k": 3})]
    st.add_variants(run_id, variants, "a")
    st.add_workload(run_id, "w", "test.w", 0, {}, METRICS)
    st.add_workload(run_id, "v", "test.v", 1, {}, METRICS[:1])
    rng = np.random.default_rng(seed)
    order = 0
    for rep in range(reps):
        for index, (variant, _knobs) in enumerate(variants):
            for wid in ("w", "v"):
                if wid == "v" and variant == "c":
                    continue  # a workload some variants lack
                # the later repetitions of a long run: one value each (a fast test)
                ms = _trial(rng, index, rep) if wid == "w" and rep < 4 else [
                    Measurement("time_s", float(rng.normal(2, 0.1)))]
                st.record_trial(run_id, TrialRecord(variant, wid, rep, order, False, "ok", "",
                                                    0.0, 1.0, "local", None, {}), ms, UNITS)
                order += 1
    return run_id


def _reference(st: StoreReader, run_id: str, prefix: str = "") -> dict[str, Any]:
    """Groups, per-repetition means, unmeasured counts and series from the samples read one
    by one, in the order the analysis documents (insertion order)."""
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    reps: dict[tuple[str, str, str], list[int]] = defaultdict(list)
    unmeasured: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    series: dict[tuple[int, str, str], dict[str, Any]] = {}
    for s in st.samples(run_id):
        key = (prefix + s.variant, s.workload_id, s.metric)
        if s.t is None:
            if s.value is not None:
                values[key].append(s.value)
                reps[key].append(s.repetition)
            if s.status != "ok":
                unmeasured[key][s.status] = unmeasured[key].get(s.status, 0) + 1
        elif s.value is not None:
            label = s.labels.get("series") or ""
            item = series.setdefault((s.trial_id, s.metric, label), {
                "variant": prefix + s.variant, "workload_id": s.workload_id, "metric": s.metric,
                "repetition": s.repetition, "labels": {"series": label} if label else {},
                "t": [], "values": []})
            item["t"].append(s.t)
            item["values"].append(s.value)
    per_rep: dict[tuple[str, str], dict[str, list[tuple[int, float]]]] = defaultdict(dict)
    for (variant, wid, metric), group in values.items():
        by_rep: dict[int, list[float]] = defaultdict(list)
        for rep, value in zip(reps[(variant, wid, metric)], group, strict=True):
            by_rep[rep].append(value)
        if max(by_rep) < MAX_TABLE_REPETITIONS:
            per_rep[(wid, metric)][variant] = [(rep, float(np.mean(v)))
                                               for rep, v in sorted(by_rep.items())]
    return {"values": dict(values), "unmeasured": dict(unmeasured),
            "series": list(series.values()), "per_rep": dict(per_rep)}


def _series_as_dicts(analysis: Any) -> list[dict[str, Any]]:
    return [{"variant": s.variant, "workload_id": s.workload_id, "metric": s.metric,
             "repetition": s.repetition, "labels": s.labels,
             "t": [float(x) for x in s.t], "values": [float(x) for x in s.values]}
            for s in analysis.series]


def _check(analysis: Any, ref: dict[str, Any]) -> None:
    assert set(analysis.values) == set(ref["values"])
    for key, expected in ref["values"].items():
        assert analysis.values[key].tolist() == expected, key  # same values, same order
    got_unmeasured = {(r.variant, r.workload_id, r.metric.name): r.unmeasured
                      for r in analysis.rows if r.unmeasured}
    assert got_unmeasured == ref["unmeasured"]
    assert _series_as_dicts(analysis) == ref["series"]
    for group, by_variant in ref["per_rep"].items():
        for variant, expected in by_variant.items():
            got = analysis.per_repetition[group][variant]
            assert [r for r, _ in got] == [r for r, _ in expected]
            assert [m for _, m in got] == pytest.approx([m for _, m in expected], rel=1e-12)


def test_groups_series_and_repetitions_match_the_samples_read_one_by_one(
        tmp_path: Path) -> None:
    st = Store(str(tmp_path / "s.db"))
    run_id = _fill(st, "one", reps=3, seed=1)
    ref = _reference(st, run_id)
    assert {s["labels"].get("series") for s in ref["series"]} == {None, "rx", "tx", "warm"}
    assert ref["unmeasured"] and ref["per_rep"]  # the shapes this test is about are there
    _check(analyse(st, [run_id]), ref)


def test_many_repetitions_have_no_per_repetition_table(tmp_path: Path) -> None:
    st = Store(str(tmp_path / "s.db"))
    run_id = _fill(st, "many", reps=MAX_TABLE_REPETITIONS + 1, seed=2)
    analysis = analyse(st, [run_id])
    _check(analysis, _reference(st, run_id))
    assert ("w", "time_s") not in analysis.per_repetition
    # trials reach the bound, but this metric's samples stop at repetition 3: its table stays
    assert [r for r, _ in analysis.per_repetition[("w", "ops")]["a"]] == [0, 1, 2, 3]


def test_runs_side_by_side_keep_each_runs_groups(tmp_path: Path) -> None:
    st = Store(str(tmp_path / "s.db"))
    first, second = _fill(st, "h1", reps=3, seed=3), _fill(st, "h2", reps=4, seed=4)
    analysis = analyse(st, [first, second])
    ref_first, ref_second = _reference(st, first, "h1/"), _reference(st, second, "h2/")
    merged = {
        "values": ref_first["values"] | ref_second["values"],
        "unmeasured": ref_first["unmeasured"] | ref_second["unmeasured"],
        "series": ref_first["series"] + ref_second["series"],
        "per_rep": {g: ref_first["per_rep"].get(g, {}) | ref_second["per_rep"].get(g, {})
                    for g in ref_first["per_rep"].keys() | ref_second["per_rep"].keys()},
    }
    _check(analysis, merged)


def test_without_series_the_result_table_is_the_same(tmp_path: Path) -> None:
    """What CSV shows (the result table) does not depend on the series it leaves unread."""
    from virtbench.report.text import render_csv

    st = Store(str(tmp_path / "s.db"))
    run_id = _fill(st, "one", reps=3, seed=5)
    full, tables_only = analyse(st, [run_id]), analyse(st, [run_id], with_series=False)
    assert full.series and not tables_only.series
    assert render_csv(tables_only) == render_csv(full)
