"""Turn stored samples into an Analysis: summaries, speedups, tests, outliers, factor effects."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
import numpy.typing as npt

from virtbench.analysis.model import Analysis, MetricRow, Series, VariantInfo
from virtbench.model import Metric, VirtbenchError
from virtbench.stats import (
    choose_test,
    holm,
    mad_outliers,
    main_effects,
    speedup_ci,
    summarize,
)
from virtbench.store import Store

__all__ = ["analyse"]


def _factor_knob(variants: list[VariantInfo]) -> str | None:
    """The knob whose value is a list in every variant (a factorial sweep), if any."""
    if len(variants) < 2:
        return None
    common = set.intersection(*(set(v.knobs) for v in variants))
    for knob in sorted(common):
        if all(isinstance(v.knobs[knob], list) for v in variants):
            return knob
    return None


def analyse(store: Store, run_refs: list[str], confidence: float = 0.95,
            seed: int = 0, baseline: str | None = None) -> Analysis:
    """Analyse one run, or several runs side by side (variants become 'run-label/variant').

    ``baseline`` overrides the experiment's baseline, e.g. to express every guest CPU
    configuration's cost relative to host-passthrough.
    """
    runs = [store.run(ref) for ref in run_refs]
    several = len(runs) > 1
    variants: list[VariantInfo] = []
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    metric_defs: dict[tuple[str, str], Metric] = {}
    workloads: dict[str, tuple[str, str, dict[str, Any]]] = {}
    realisations: list[dict[str, Any]] = []
    facts: list[tuple[str, str, dict[str, Any]]] = []
    unmeasured: dict[tuple[str, str, str], dict[str, int]] = defaultdict(dict)
    trial_counts: dict[str, tuple[int, int]] = {}
    failures: list[dict[str, Any]] = []
    series: list[Series] = []
    labels = _run_labels(runs) if several else {runs[0].id: ""}

    def key(run_id: str, variant: str) -> str:
        return f"{labels[run_id]}/{variant}" if several else variant

    for run in runs:
        for name, knobs, is_baseline in store.variants(run.id):
            variants.append(VariantInfo(key(run.id, name), knobs,
                                        is_baseline and run is runs[0], run.id))
        for wid, name, params in store.workloads(run.id):
            workloads.setdefault(wid, (wid, name, params))
        for (wid, mname), metric in store.metrics(run.id).items():
            metric_defs.setdefault((wid, mname), metric)
        for variant, wid, mname, value in store.scalar_values(run.id):
            values[(key(run.id, variant), wid, mname)].append(value)
        for (variant, wid, mname, status), count in store.status_counts(run.id).items():
            unmeasured[(key(run.id, variant), wid, mname)][status] = count
        for item in store.realisations(run.id):
            realisations.append(item | {"variant": key(run.id, item["variant"])})
        facts += [(run.id, phase, data) for _id, phase, _t, data in store.facts(run.id)]
        series += _series(store, run.id, lambda v, r=run.id: key(r, v))
        trials = store.trials(run.id)
        ok = sum(1 for t in trials if t["status"] == "ok" and not t["warmup"])
        bad = [t for t in trials if t["status"] != "ok"]
        trial_counts[run.id] = (ok, len(bad))
        failures += [{"run_id": run.id, "variant": key(run.id, t["variant"]),
                      "workload_id": t["workload_id"], "repetition": t["repetition"],
                      "error": t["error"]} for t in bad]

    baseline = baseline or key(runs[0].id, runs[0].baseline)
    if baseline not in {v.name for v in variants}:
        raise VirtbenchError(f"baseline {baseline!r} is not a variant of the analysed runs; "
                             f"variants: {', '.join(v.name for v in variants)}")
    variants = [VariantInfo(v.name, v.knobs, v.name == baseline, v.run_id) for v in variants]
    wl_name = {wid: name for wid, name, _ in workloads.values()}
    rows: list[MetricRow] = []
    for info in variants:
        for (wid, mname), metric in metric_defs.items():
            sample = _array(values.get((info.name, wid, mname), []))
            missing = unmeasured.get((info.name, wid, mname), {})
            if sample.size == 0 and not missing:
                continue
            rows.append(MetricRow(
                variant=info.name, workload_id=wid, workload=wl_name.get(wid, wid),
                metric=metric, summary=summarize(sample, confidence) if sample.size else None,
                outliers=int(mad_outliers(sample).sum()) if sample.size >= 3 else 0,
                unmeasured=dict(missing)))

    # Comparisons with the baseline; Holm's correction within each (workload, metric) family.
    families: dict[tuple[str, str], list[MetricRow]] = defaultdict(list)
    for row in rows:
        families[(row.workload_id, row.metric.name)].append(row)
    for (wid, mname), family in families.items():
        base = _array(values.get((baseline, wid, mname), []))
        compared = []
        for row in family:
            if row.variant == baseline or base.size < 2:
                continue
            sample = _array(values.get((row.variant, wid, mname), []))
            if sample.size < 2:
                continue
            row.speedup = speedup_ci(base, sample, row.metric.better, confidence, seed=seed)
            row.significance = choose_test(base, sample)
            compared.append(row)
        adjusted = holm([r.significance.p_value for r in compared if r.significance])
        for row, p in zip(compared, adjusted, strict=True):
            row.p_holm = p

    factor_knob = _factor_knob(variants)
    effects = {}
    best = {}
    for (wid, mname), metric in metric_defs.items():
        present = [v for v in variants if values.get((v.name, wid, mname))]
        if not present:
            continue
        if factor_knob and len(present) >= 2:
            groups = {frozenset(map(str, v.knobs[factor_knob])): values[(v.name, wid, mname)]
                      for v in present}
            if len(groups) == len(present):
                effects[(wid, mname)] = main_effects(groups, metric.better, confidence,
                                                     seed=seed)
        means = {v.name: float(np.mean(values[(v.name, wid, mname)])) for v in present}
        pick = min if metric.better.value == "lower" else max
        name = pick(means, key=lambda n: means[n])
        best[(wid, mname)] = (name, means[name])

    return Analysis(runs=runs, baseline=baseline, variants=variants,
                    workloads=list(workloads.values()), rows=rows, main_effects=effects,
                    best=best, realisations=realisations, facts=facts,
                    trial_counts=trial_counts, failures=failures, factor_knob=factor_knob,
                    confidence=confidence, series=series)


def _series(store: Store, run_id: str, rename: Any) -> list[Series]:
    """Group time-stamped samples by (trial, metric, labels['series']); None values skipped.

    Other labels (a request's URL, hit or miss) stay per sample and do not split a series.
    """
    grouped: dict[tuple[int, str, str], Series] = {}
    for row in store.samples(run_id, series_only=True):
        if row.value is None or row.t is None:
            continue
        label_key = row.labels.get("series", "")
        item = grouped.get((row.trial_id, row.metric, label_key))
        if item is None:
            item = Series(rename(row.variant), row.workload_id, row.metric, row.repetition,
                          [], [], {"series": label_key} if label_key else {})
            grouped[(row.trial_id, row.metric, label_key)] = item
        item.t.append(row.t)
        item.values.append(row.value)
    return list(grouped.values())


def _array(values: list[float]) -> npt.NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64)


def _run_labels(runs: list[Any]) -> dict[str, str]:
    """Short, distinct labels: the host name when hosts differ, else experiment + id."""
    hosts = [r.host for r in runs]
    if len(set(hosts)) == len(hosts):
        return {r.id: r.host for r in runs}
    return {r.id: f"{r.experiment}@{r.id[:6]}" for r in runs}
