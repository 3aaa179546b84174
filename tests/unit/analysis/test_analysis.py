"""From stored samples to report rows: comparisons, references, repetitions, factorial effects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from virtbench.analysis import analyse
from virtbench.analysis.derived_views import FamilyReady, metric_views
from virtbench.model import Better, Measurement, Metric, VirtbenchError
from virtbench.store import Store, TrialRecord

TIME = Metric("time_s", "s", Better.LOWER, "time", primary=True)


def _store(tmp_path: Path, variants: list[tuple[str, dict[str, Any]]], baseline: str,
           value_of: Any, reps: int = 6, spec: str = "name: x\n") -> Store:
    st = Store(str(tmp_path / "a.db"))
    run_id = st.create_run(experiment="x", description="", spec_yaml=spec, spec_path="",
                           seed=1, host="h", target="local", baseline=baseline, version="t")
    st.add_variants(run_id, variants, baseline)
    st.add_workload(run_id, "w", "test.w", 0, {}, [TIME])
    rng = np.random.default_rng(0)
    order = 0
    for rep in range(reps):
        for name, knobs in variants:
            value = value_of(name, knobs, rep) * (1 + rng.normal(0, 0.01))
            st.record_trial(run_id, TrialRecord(name, "w", rep, order, False, "ok", "", 0.0, 1.0,
                                                "local", None, {"path": f"p-{name}"}),
                            [Measurement("time_s", float(value))], {"time_s": "s"})
            order += 1
    return st


def test_speedup_against_baseline_and_holm(tmp_path: Path) -> None:
    st = _store(tmp_path, [("slow", {}), ("fast", {}), ("same", {})], "slow",
                lambda n, k, r: {"slow": 2.0, "fast": 1.0, "same": 2.0}[n])
    a = analyse(st, ["latest"])
    fast = a.row("fast", "w", "time_s")
    same = a.row("same", "w", "time_s")
    assert fast is not None and same is not None and fast.speedup and same.speedup
    assert fast.speedup.ci_low < 2.0 < fast.speedup.ci_high
    assert fast.significant and not same.significant
    assert a.row("slow", "w", "time_s").speedup is None  # type: ignore[union-attr]
    assert a.best[("w", "time_s")][0] == "fast"


def test_baseline_override(tmp_path: Path) -> None:
    st = _store(tmp_path, [("slow", {}), ("fast", {})], "slow",
                lambda n, k, r: {"slow": 2.0, "fast": 1.0}[n])
    a = analyse(st, ["latest"], baseline="fast")
    row = a.row("slow", "w", "time_s")
    assert row is not None and row.speedup and row.speedup.ratio == pytest.approx(0.5, rel=0.05)
    with pytest.raises(VirtbenchError, match="not a variant"):
        analyse(st, ["latest"], baseline="nope")


def test_compare_by_pairs_variants_that_differ_in_one_knob(tmp_path: Path) -> None:
    variants = [(f"switch={s},bg={b}", {"switch": s, "bg": b})
                for s in ("ovs", "dpdk") for b in (0, 100)]
    # dpdk is 1.25× faster at bg 0 and 2× faster at bg 100; bg itself doubles the time.
    def value(name: str, knobs: dict[str, Any], rep: int) -> float:
        base = 1.0 if knobs["bg"] == 0 else 2.0
        return base / ({0: 1.25, 100: 2.0}[knobs["bg"]] if knobs["switch"] == "dpdk" else 1)

    st = _store(tmp_path, variants, "switch=ovs,bg=0", value,
                spec="name: x\ncompare_by: switch\n")
    a = analyse(st, ["latest"])
    assert a.compare_knob == "switch"
    row = a.row("switch=dpdk,bg=100", "w", "time_s")
    assert row is not None and row.reference == "switch=ovs,bg=100"
    assert row.speedup is not None and row.speedup.ratio == pytest.approx(2.0, rel=0.03)
    other = a.row("switch=dpdk,bg=0", "w", "time_s")
    assert other is not None and other.speedup is not None
    assert other.speedup.ratio == pytest.approx(1.25, rel=0.03)
    assert {v.name for v in a.variants if v.is_baseline} == {"switch=ovs,bg=0",
                                                              "switch=ovs,bg=100"}
    plain = analyse(st, ["latest"], compare_by="")
    assert plain.row("switch=dpdk,bg=100", "w", "time_s").reference == "switch=ovs,bg=0"  # type: ignore[union-attr]


def test_factorial_main_effects_and_per_repetition(tmp_path: Path) -> None:
    variants: list[tuple[str, dict[str, Any]]] = [
        ("default", {"f": []}), ("a", {"f": ["a"]}), ("b", {"f": ["b"]}),
                ("a+b", {"f": ["a", "b"]})]
    st = _store(tmp_path, variants, "default",
                lambda n, k, r: (0.5 if "a" in k["f"] else 1.0) * (3.0 if r == 0 else 1.0))
    a = analyse(st, ["latest"])
    assert a.factor_knob == "f"
    effects = {e.factor: e for e in a.main_effects[("w", "time_s")]}
    assert effects["a"].ci_low < 2.0 < effects["a"].ci_high
    assert effects["b"].ci_low < 1.0 < effects["b"].ci_high
    reps = a.per_repetition[("w", "time_s")]["default"]
    assert [r for r, _v in reps] == list(range(6))
    first = next(f for f in a.first_vs_rest if f.variant == "default")
    assert first.ratio == pytest.approx(1 / 3, rel=0.05)  # a cold first repetition shows up
    assert a.notes[("a", "w")] == {"path": ["p-a"]}


def test_outliers_are_flagged_not_dropped(tmp_path: Path) -> None:
    st = _store(tmp_path, [("v", {})], "v",
                lambda n, k, r: 100.0 if r == 3 else 1.0, reps=10)
    a = analyse(st, ["latest"])
    row = a.row("v", "w", "time_s")
    assert row is not None and row.outliers == 1 and row.summary is not None
    assert row.summary.n == 10 and row.summary.maximum > 50


def test_each_family_is_handed_over_as_the_report_will_show_it(tmp_path: Path) -> None:
    st = Store(str(tmp_path / "a.db"))
    run_id = st.create_run(experiment="x", description="", spec_yaml="name: x\n",
                           spec_path="", seed=1, host="h", target="local", baseline="default",
                           version="t")
    variants: list[tuple[str, dict[str, Any]]] = [
        ("default", {"f": []}), ("a", {"f": ["a"]}), ("b", {"f": ["b"]}),
        ("a+b", {"f": ["a", "b"]})]
    st.add_variants(run_id, variants, "default")
    rate = Metric("rate", "1/s", Better.HIGHER, "rate")
    # declared before the primary metric that the report shows first
    st.add_workload(run_id, "w", "test.w", 0, {}, [rate, TIME])
    st.add_workload(run_id, "v", "test.v", 1, {}, [TIME])
    for rep in range(4):
        for name, knobs in variants:
            value = (0.5 if "a" in knobs["f"] else 1.0) * (1 + 0.01 * rep)
            for wid in ("w", "v"):
                st.record_trial(run_id, TrialRecord(name, wid, rep, rep, False, "ok", "", 0.0,
                                                    1.0, "local", None, {}),
                                [Measurement("time_s", value), Measurement("rate", 1 / value)],
                                {"time_s": "s", "rate": "1/s"})
    handed: list[FamilyReady] = []
    a = analyse(st, ["latest"], on_family=handed.append)
    views = metric_views(a)
    assert [(v.workload_id, v.metric.name) for v in views] == [
        ("w", "time_s"), ("w", "rate"), ("v", "time_s")]
    assert sorted(r.position for r in handed) == [0, 1, 2]  # each once, in the order read
    for ready in handed:
        view = views[ready.position]
        assert (ready.view.workload_id, ready.view.metric) == (view.workload_id, view.metric)
        assert len(ready.view.rows) == len(view.rows) == 4
        assert all(x is y for x, y in zip(ready.view.rows, view.rows, strict=True))
        assert (ready.view.best, ready.view.effects) == (view.best, view.effects)
        assert ready.view.effects  # the factorial's main effects are in
        assert (ready.families, ready.baseline, ready.factor_knob) == (3, "default", "f")
        assert [v.name for v in ready.variants] == [v.name for v in a.variants]
    st.close()
