"""Turn stored samples into an Analysis: summaries, speedups, tests, outliers, factor effects."""

from __future__ import annotations

import warnings
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from virtbench.analysis.derived_views import FamilyReady, MetricView, family_order
from virtbench.analysis.noise import summarise_noise
from virtbench.analysis.report_model import Analysis, FirstVsRest, MetricRow, Series, VariantInfo
from virtbench.model import Better, Domain, Metric, VirtbenchError
from virtbench.stats import (
    MainEffect,
    choose_test,
    holm,
    mad_outliers,
    main_effects,
    speedup_ci,
    summarize,
)
from virtbench.store.reading import RunInfo, StoreReader

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


def analyse(store: StoreReader, run_refs: list[str], confidence: float = 0.95,
            seed: int = 0, baseline: str | None = None,
            compare_by: str | None = None, with_series: bool = True,
            on_family: Callable[[FamilyReady], None] | None = None) -> Analysis:
    """Analyse one run, or several runs side by side (variants become 'run-label/variant').

    ``baseline`` overrides the experiment's baseline, e.g. to express every guest CPU
    configuration's cost relative to host-passthrough. ``compare_by`` (default: the
    experiment's ``compare_by``) compares each variant with the one that differs only in that
    knob, set to the baseline's value (OVS-DPDK at 100 Mbit/s against OVS at 100 Mbit/s).
    ``with_series=False`` leaves the time-stamped samples unread (``series`` empty): for what
    shows only the result table (CSV), a million per-request samples are most of the reading.
    ``on_family`` is called with each (workload, metric) family with rows as soon as it is
    analysed, while the next is read (the HTML report's charts start then).
    """
    runs = [store.run(ref) for ref in run_refs]
    compare_by = compare_by if compare_by is not None else _spec_compare_by(runs[0].spec_yaml)
    families = _Families(runs, baseline, compare_by, confidence, seed, on_family)
    data = _gather(store, runs, with_series, families)
    families.finish(data)
    variants = families.variants
    return Analysis(runs=runs, baseline=families.baseline, variants=variants,
                    workloads=list(data.workloads.values()), rows=families.rows(),
                    main_effects={key: effects for key in data.metric_defs
                                  if (effects := families.done[key][1])},
                    best={key: best for key in data.metric_defs
                          if (best := families.done[key][2]) is not None},
                    realisations=data.realisations,
                    facts=data.facts, trial_counts=data.trial_counts, failures=data.failures,
                    factor_knob=families.factor_knob, confidence=confidence, series=data.series,
                    per_repetition=_few_repetitions(data.per_rep),
                    first_vs_rest=_first_vs_rest(data.per_rep, confidence, data.metric_defs),
                    notes=dict(data.notes),
                    values={k: _array(v) for k, v in data.values.items()},
                    compare_knob=compare_by, metric_defs=data.metric_defs, noise=families.noise)


_Family = tuple[list[tuple[int, MetricRow]], list[MainEffect], tuple[str, float] | None]
"""A family's rows (each with its variant's index), main effects and best variant."""


class _Families:
    """The analysis of one (workload, metric) family at a time: its rows (summaries,
    outliers, noisy trials), their comparison with their references (Holm within the
    family), its main effects and best variant; each family the moment the last analysed
    run's values of it are read (``family``), the others at the end (``finish``)."""

    def __init__(self, runs: list[RunInfo], baseline: str | None, compare_by: str | None,
                 confidence: float, seed: int,
                 on_family: Callable[[FamilyReady], None] | None) -> None:
        self.runs = runs
        self.baseline = baseline or ""
        self.compare_by = compare_by
        self.confidence = confidence
        self.seed = seed
        self.on_family = on_family
        self.done: dict[tuple[str, str], _Family] = {}
        self._set_up = False

    def _setup(self, data: _Gathered) -> None:
        """What every family needs: the baseline, the references, the noise; once every
        run's variants, metrics, trials and facts are read."""
        self._set_up = True
        self.baseline = self.baseline or data.key(self.runs[0].id, self.runs[0].baseline)
        self.marked = _marked_baseline(data.variants, self.baseline)
        self.noise = summarise_noise(data.stored_trials, data.facts, data.key)
        self.reference = _references(self.marked, self.baseline, self.compare_by)
        self.variants = self.marked
        if self.compare_by:
            self.variants = [VariantInfo(v.name, v.knobs, self.reference.get(v.name) is None,
                                         v.run_id) for v in self.marked]
        self.factor_knob = _factor_knob(self.variants)
        self.workload_names = {wid: name for wid, name, _ in data.workloads.values()}
        self.order = family_order(list(data.workloads),
                                  [(wid, m) for (wid, _n), m in data.metric_defs.items()])

    def family(self, data: _Gathered, wid: str, mname: str) -> None:
        if not self._set_up:
            self._setup(data)
        metric = data.metric_defs[(wid, mname)]
        rows = _family_rows(data, self.marked, self.workload_names, wid, metric,
                            self.confidence)
        for _index, row in rows:
            row.noisy = len(self.noise.marked.get((row.variant, row.workload_id), []))
        _compare_family([row for _index, row in rows], self.reference, data.values,
                        self.confidence, self.seed)
        effects = _family_effects(data, self.variants, self.factor_knob, wid, metric,
                                  self.confidence, self.seed)
        best = _family_best(data, self.variants, wid, metric)
        self.done[(wid, mname)] = (rows, effects, best)
        if self.on_family is not None and rows:
            view = MetricView(wid, self.workload_names.get(wid, wid), metric,
                              [row for _i, row in rows], best, list(effects))
            self.on_family(FamilyReady(view, self.order.index((wid, mname)), len(self.order),
                                       self.baseline, self.variants, self.factor_knob,
                                       self.confidence))

    def finish(self, data: _Gathered) -> None:
        """The families not analysed yet (a run without values of them, or none at all)."""
        if not self._set_up:
            self._setup(data)
        for wid, mname in data.metric_defs:
            if (wid, mname) not in self.done:
                self.family(data, wid, mname)

    def rows(self) -> list[MetricRow]:
        """Every family's rows, in variant order, each variant's in metric declaration
        order."""
        position = {key: i for i, key in enumerate(self.done)}
        indexed = [(index, position[key], row) for key, (rows, _e, _b) in self.done.items()
                   for index, row in rows]
        indexed.sort(key=lambda item: (item[0], item[1]))
        return [row for _index, _position, row in indexed]


MAX_NOTE_VALUES = 20  # distinct values kept of one trial note per (variant, workload)


@dataclass
class _Gathered:
    """Everything read from the store for the analysed runs, variants under their keys."""

    runs: list[RunInfo]
    labels: dict[str, str]
    variants: list[VariantInfo] = field(default_factory=list)
    values: dict[tuple[str, str, str], npt.NDArray[np.float64]] = field(default_factory=dict)
    metric_defs: dict[tuple[str, str], Metric] = field(default_factory=dict)
    workloads: dict[str, tuple[str, str, dict[str, Any]]] = field(default_factory=dict)
    realisations: list[dict[str, Any]] = field(default_factory=list)
    facts: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    unmeasured: defaultdict[tuple[str, str, str], dict[str, int]] = field(
        default_factory=lambda: defaultdict(dict))
    trial_counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    per_rep: defaultdict[tuple[str, str], dict[str, list[tuple[int, float]]]] = field(
        default_factory=lambda: defaultdict(dict))
    notes: defaultdict[tuple[str, str], dict[str, list[str]]] = field(
        default_factory=lambda: defaultdict(dict))
    stored_trials: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def key(self, run_id: str, variant: str) -> str:
        """A variant's name in the analysis: prefixed by its run's label when several."""
        return f"{self.labels[run_id]}/{variant}" if len(self.runs) > 1 else variant

    def add_run(self, store: StoreReader, run: RunInfo, with_series: bool = True,
                family_read: Callable[[str, str], None] | None = None) -> None:
        """Read one run; ``family_read(workload_id, metric)`` once each of its (workload,
        metric) families' values are read (the run's trials and facts are read before)."""
        key = partial(self.key, run.id)
        stored_variants = store.variants(run.id)
        for name, knobs, is_baseline in stored_variants:
            self.variants.append(VariantInfo(key(name), knobs,
                                             is_baseline and run is self.runs[0], run.id))
        for wid, name, params in store.workloads(run.id):
            self.workloads.setdefault(wid, (wid, name, params))
        for (wid, mname), metric in store.metrics(run.id).items():
            self.metric_defs.setdefault((wid, mname), metric)
        names = {name: key(name) for name, _knobs, _b in stored_variants}
        trials = store.trials(run.id)
        top: dict[tuple[str, str], int] = {}
        for trial in trials:
            pair = (trial["variant"], trial["workload_id"])
            top[pair] = max(top.get(pair, trial["repetition"]), trial["repetition"])
        self.facts += [(run.id, phase, data) for _id, phase, _t, data in store.facts(run.id)]
        self.add_trials(run.id, trials)
        _collect(store, run.id, names, top, self.values, self.unmeasured, self.per_rep,
                 family_read)
        self.realisations += [item | {"variant": key(item["variant"])}
                              for item in store.realisations(run.id)]
        if with_series:
            self.series += _series(store, run.id, key)

    def add_trials(self, run_id: str, trials: list[dict[str, Any]]) -> None:
        """The run's trials: their notes, counts of measured and failed, the failures."""
        self.stored_trials += [(run_id, t) for t in trials]
        measured = [t for t in trials if t["status"] == "ok" and not t["warmup"]]
        for trial in measured:
            _add_notes(self.notes[(self.key(run_id, trial["variant"]), trial["workload_id"])],
                       trial["notes"])
        bad = [t for t in trials if t["status"] != "ok"]
        self.trial_counts[run_id] = (len(measured), len(bad))
        self.failures += [{"run_id": run_id, "variant": self.key(run_id, t["variant"]),
                           "workload_id": t["workload_id"], "repetition": t["repetition"],
                           "error": t["error"]} for t in bad]


def _gather(store: StoreReader, runs: list[RunInfo], with_series: bool,
            families: _Families) -> _Gathered:
    """Every run read; each family analysed as the last run's values of it are read."""
    data = _Gathered(runs, _run_labels(runs) if len(runs) > 1 else {runs[0].id: ""})
    for run in runs:
        data.add_run(store, run, with_series, partial(families.family, data)
                     if run is runs[-1] else None)
    return data


def _add_notes(bucket: dict[str, list[str]], notes: dict[str, str]) -> None:
    """Add a trial's notes to the distinct values seen of each (at most MAX_NOTE_VALUES)."""
    for name, value in notes.items():
        seen = bucket.setdefault(name, [])
        if value not in seen and len(seen) < MAX_NOTE_VALUES:
            seen.append(value)


def _marked_baseline(variants: list[VariantInfo], baseline: str) -> list[VariantInfo]:
    """The variants with ``baseline`` (which must be one of them) marked as the baseline."""
    if baseline not in {v.name for v in variants}:
        raise VirtbenchError(f"baseline {baseline!r} is not a variant of the analysed runs; "
                             f"variants: {', '.join(v.name for v in variants)}")
    return [VariantInfo(v.name, v.knobs, v.name == baseline, v.run_id) for v in variants]


def _family_rows(data: _Gathered, variants: list[VariantInfo], workload_names: dict[str, str],
                 wid: str, metric: Metric, confidence: float) -> list[tuple[int, MetricRow]]:
    """One row per variant that measured the (workload, metric) or has unmeasured trials of
    it, with the variant's index."""
    rows: list[tuple[int, MetricRow]] = []
    for index, info in enumerate(variants):
        sample = _array(data.values.get((info.name, wid, metric.name), []))
        missing = data.unmeasured.get((info.name, wid, metric.name), {})
        if sample.size == 0 and not missing:
            continue
        rows.append((index, MetricRow(
            variant=info.name, workload_id=wid, workload=workload_names.get(wid, wid),
            metric=metric,
            summary=summarize(sample, confidence, metric.value_domain) if sample.size
            else None,
            outliers=int(mad_outliers(sample).sum()) if sample.size >= 3 else 0,
            unmeasured=dict(missing))))
    return rows


def _compare_family(family: list[MetricRow], reference: dict[str, str | None],
                    values: dict[tuple[str, str, str], npt.NDArray[np.float64]],
                    confidence: float, seed: int) -> None:
    """Each row of one (workload, metric) family: its speedup and test against its reference
    variant; Holm's correction within the family."""
    compared = []
    for row in family:
        ref = reference.get(row.variant)
        row.reference = ref
        if ref is None or row.metric.better is None:  # no direction: no speedup, no test
            continue
        base = _array(values.get((ref, row.workload_id, row.metric.name), []))
        sample = _array(values.get((row.variant, row.workload_id, row.metric.name), []))
        if sample.size >= 2 and base.size >= 2:
            _compare_row(row, base, sample, confidence, seed)
            compared.append(row)
    adjusted = holm([r.significance.p_value for r in compared if r.significance])
    for row, p in zip(compared, adjusted, strict=True):
        row.p_holm = p


def _compare_row(row: MetricRow, base: npt.NDArray[np.float64],
                 sample: npt.NDArray[np.float64], confidence: float, seed: int) -> None:
    better = row.metric.better
    if better is None:
        return
    # A baseline mean of 0 (no loss at all) has no ratio: nan, without a warning.
    with np.errstate(divide="ignore", invalid="ignore"):
        row.speedup = speedup_ci(base, sample, better, confidence, seed=seed)
    with warnings.catch_warnings():
        # scipy warns about precision loss for near-constant groups; the p-value it
        # returns is still the right one to report.
        warnings.simplefilter("ignore", RuntimeWarning)
        row.significance = choose_test(base, sample)


def _measured(data: _Gathered, variants: list[VariantInfo], wid: str,
              mname: str) -> list[VariantInfo]:
    return [v for v in variants if (v.name, wid, mname) in data.values]


def _family_effects(data: _Gathered, variants: list[VariantInfo], factor_knob: str | None,
                    wid: str, metric: Metric, confidence: float, seed: int) -> list[MainEffect]:
    """Main effects of the factorial sweep's factors on one (workload, metric)."""
    present = _measured(data, variants, wid, metric.name)
    if not factor_knob or len(present) < 2 or metric.better is None:
        return []  # no direction: no effect to rank
    groups = {frozenset(map(str, v.knobs[factor_knob])): data.values[(v.name, wid, metric.name)]
              for v in present}
    if len(groups) != len(present):
        return []
    # a factor never toggled alone has no main effect to show
    return [e for e in main_effects(groups, metric.better, confidence, seed=seed) if e.pairs > 0]


def _family_best(data: _Gathered, variants: list[VariantInfo], wid: str, metric: Metric
                 ) -> tuple[str, float] | None:
    """The variant with the best mean of one (workload, metric) with a direction, and that
    mean; a metric without one has no best configuration."""
    present = _measured(data, variants, wid, metric.name)
    if not present or metric.better is None:
        return None
    means = {v.name: float(np.mean(data.values[(v.name, wid, metric.name)])) for v in present}
    pick = min if metric.better is Better.LOWER else max
    name = pick(means, key=lambda n: means[n])
    return name, means[name]


def _spec_compare_by(spec_yaml: str) -> str | None:
    """The stored experiment's ``compare_by``, read without validating the whole spec (an
    imported run may name workloads this installation lacks)."""
    if "compare_by" not in spec_yaml and "\\" not in spec_yaml:
        # YAML cannot name the key without writing it or an escape (a double-quoted key's
        # \x5f): no parser needed, nor its import (a fiftieth of a second of every report)
        return None
    from virtbench.inputs.yamlfile import YamlInputError, load_yaml

    try:  # bounded: an imported run's text may be hostile (nested aliases)
        tree = load_yaml(spec_yaml, "the stored experiment", typ="safe")
    except YamlInputError:
        return None
    value = tree.get("compare_by") if isinstance(tree, dict) else None
    return str(value) if value else None


def _references(variants: list[VariantInfo], baseline: str,
                compare_by: str | None) -> dict[str, str | None]:
    """Each variant's reference variant (None: it is a reference itself)."""
    if not compare_by:
        return {v.name: (None if v.name == baseline else baseline) for v in variants}
    base = next(v for v in variants if v.name == baseline)
    if compare_by not in base.knobs:
        raise VirtbenchError(f"compare_by: the baseline variant {baseline!r} has no knob "
                             f"{compare_by!r}; its knobs: {', '.join(base.knobs) or 'none'}")
    target_value = base.knobs[compare_by]
    out: dict[str, str | None] = {}
    for v in variants:
        if v.knobs.get(compare_by) == target_value:
            out[v.name] = None
            continue
        wanted = {**v.knobs, compare_by: target_value}
        match = [w.name for w in variants if w.knobs == wanted and w.run_id == v.run_id]
        out[v.name] = match[0] if match else None
    return out


MAX_TABLE_REPETITIONS = 50


def _collect(store: StoreReader, run_id: str, names: dict[str, str],
             top: dict[tuple[str, str], int],
             values: dict[tuple[str, str, str], npt.NDArray[np.float64]],
             unmeasured: dict[tuple[str, str, str], dict[str, int]],
             per_rep: dict[tuple[str, str], dict[str, list[tuple[int, float]]]],
             family_read: Callable[[str, str], None] | None = None) -> None:
    """Values of every (variant, workload, metric) group, unmeasured counts by status, and
    per-repetition means (only where there are few repetitions: the studies' loop tables).
    ``top``: the highest repetition of the run's trials per (stored variant, workload);
    ``family_read(workload_id, metric)`` after each (workload, metric)'s groups."""
    repetitions: dict[tuple[str, str, str], npt.NDArray[np.int64]] = {}
    for (variant, wid, mname, status), count in store.status_counts(run_id).items():
        unmeasured[(names.get(variant, variant), wid, mname)][status] = count
    for (wid, mname) in store.metrics(run_id):
        for stored_name, name in names.items():
            if (top.get((stored_name, wid), -1) >= MAX_TABLE_REPETITIONS
                    and store.group_reaches(run_id, stored_name, wid, mname,
                                            MAX_TABLE_REPETITIONS)):
                # no per-repetition table for this group: its repetitions are not read
                group_values = store.group_values_only(run_id, stored_name, wid, mname)
            else:
                reps, group_values = store.group_values(run_id, stored_name, wid, mname)
                if reps.size:
                    repetitions[(name, wid, mname)] = reps
            if group_values.size:
                values[(name, wid, mname)] = group_values
        if family_read is not None:
            family_read(wid, mname)
    for group, reps in repetitions.items():
        if reps.max() >= MAX_TABLE_REPETITIONS:
            continue
        rep_array = reps
        sums = np.bincount(rep_array, weights=values[group])
        counts_per_rep = np.bincount(rep_array)
        variant, wid, mname = group
        per_rep[(wid, mname)][variant] = [
            (int(r), float(sums[r] / counts_per_rep[r])) for r in np.nonzero(counts_per_rep)[0]]


def _few_repetitions(per_rep: dict[tuple[str, str], dict[str, list[tuple[int, float]]]]
                     ) -> dict[tuple[str, str], dict[str, list[tuple[int, float]]]]:
    return {group: by_variant for group, by_variant in per_rep.items()
            if all(len(reps) <= MAX_TABLE_REPETITIONS for reps in by_variant.values())}


def _first_vs_rest(per_rep: dict[tuple[str, str], dict[str, list[tuple[int, float]]]],
                   confidence: float,
                   metric_defs: dict[tuple[str, str], Metric]) -> list[FirstVsRest]:
    out = []
    for (wid, metric), by_variant in _few_repetitions(per_rep).items():
        for variant, reps in by_variant.items():
            ordered = [value for _rep, value in sorted(reps)]
            if len(ordered) < 3 or ordered[0] == 0:
                continue
            metric_def = metric_defs.get((wid, metric))
            rest = summarize(ordered[1:], confidence,
                             metric_def.value_domain if metric_def else Domain.REAL)
            out.append(FirstVsRest(variant, wid, metric, ordered[0], rest,
                                   rest.mean / ordered[0]))
    return out


def _series(store: StoreReader, run_id: str, rename: Any) -> list[Series]:
    """Group time-stamped samples by (trial, metric, labels['series']); None values skipped.
    Series in the order of their first sample, each one's samples in insertion order.

    Other labels (a request's URL, hit or miss) stay per sample and do not split a series.
    Read one (variant, workload, metric) index range at a time, grouped with NumPy: the
    declared metrics' ranges first, every range of the run when those do not hold all its
    time-stamped samples (an undeclared metric's, or samples without a value).
    """
    expected = store.series_count(run_id)
    if not expected:
        return []
    ranges = [(wid, metric, variant) for wid, metric in store.metrics(run_id)
              for variant, _knobs, _b in store.variants(run_id)]
    found: list[tuple[float, Series]] = []
    seen = 0
    for wid, metric, variant in ranges:
        seen += _range_series(store, run_id, (wid, metric, variant), rename, found)
    if seen != expected:
        declared = set(ranges)
        for key in store.series_ranges(run_id):
            if key not in declared:
                _range_series(store, run_id, key, rename, found)
    found.sort(key=lambda item: item[0])
    return [series for _first, series in found]


def _range_series(store: StoreReader, run_id: str, key: tuple[str, str, str], rename: Any,
                  found: list[tuple[float, Series]]) -> int:
    """Append the series of one (workload, metric, variant) range, each with the id of its
    first sample; return how many samples the range had."""
    wid, metric, variant = key
    table, labels = store.range_series(run_id, variant, wid, metric)
    if not table.size:
        return 0
    _trials, trial_of = np.unique(table[:, 1], return_inverse=True)
    codes = trial_of.astype(np.int64)
    names: list[str] = []
    if labels is not None:
        index: dict[str, int] = {}
        label_of = np.fromiter((index.setdefault(label or "", len(index)) for label in labels),
                               np.int64, len(labels))
        names = list(index)
        codes = codes * len(names) + label_of
    order = np.argsort(codes, kind="stable")  # each group's samples stay in id order
    starts = np.flatnonzero(np.diff(codes[order], prepend=-1))
    for group in np.split(order, starts[1:]):
        first = group[0]
        label = names[int(codes[first]) % len(names)] if names else ""
        found.append((float(table[first, 0]), Series(
            rename(variant), wid, metric, int(table[first, 2]), table[group, 3], table[group, 4],
            {"series": label} if label else {})))
    return int(table.shape[0])


def _array(values: Sequence[float] | npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    return np.asarray(values, dtype=np.float64)


def _run_labels(runs: list[Any]) -> dict[str, str]:
    """Short, distinct labels: the host name when hosts differ, else experiment + id."""
    hosts = [r.host for r in runs]
    if len(set(hosts)) == len(hosts):
        return {r.id: r.host for r in runs}
    return {r.id: f"{r.experiment}@{r.id[:6]}" for r in runs}
