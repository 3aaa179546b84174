"""Every stored run of one experiment on one host over time, per metric, with change points."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from virtbench.decide.runs import experiment_digest, host_fingerprint
from virtbench.model import Better, Domain, Metric, VirtbenchError, better_text
from virtbench.stats.changepoints import change_points
from virtbench.stats.intervals import MIN_INTERVAL_VALUES
from virtbench.stats.verdict import ratio_verdict

__all__ = ["History", "MetricHistory", "RunPoint", "Step", "build_history", "select_runs"]

CONFIDENCE = 0.95
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class RunPoint:
    run_id: str
    started_at: float
    n: int
    mean: float
    ci_low: float
    """95 % CI of the run's mean inside the metric's domain (see ``_points``); nan with fewer
    than MIN_INTERVAL_VALUES values, as in the report"""
    ci_high: float
    no_ci_reason: str = ""
    """Why there is no interval (the report's words), empty when there is one."""


@dataclass(frozen=True)
class Step:
    """A change point: the mean of the runs from ``index`` on differs from the runs before."""

    index: int
    """position in the series of the first run after the change"""
    last_before: str
    first_after: str
    runs_before: int
    runs_after: int
    ratio: float
    """mean of the run means after / before (segments up to the neighbouring change points)"""
    ci_low: float
    ci_high: float
    p_value: float

    @property
    def change_pct(self) -> float:
        return 100.0 * (self.ratio - 1.0)


@dataclass
class MetricHistory:
    variant: str
    workload_id: str
    workload: str
    metric: Metric
    points: list[RunPoint]
    steps: list[Step] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "workload_id": self.workload_id,
                "workload": self.workload, "metric": self.metric.name,
                "unit": self.metric.unit, "better": better_text(self.metric.better),
                "runs": [p.__dict__ for p in self.points],
                "change_points": [s.__dict__ | {"change_pct": s.change_pct} for s in self.steps]}


@dataclass
class History:
    experiment: str
    experiment_hash: str | None
    """None when runs of every experiment file version are included (--any-spec)"""
    host: str | None
    fingerprint: str | None
    """None when runs of every host are included (--any-host)"""
    run_ids: list[str]
    excluded: dict[str, int]
    """why runs of the experiment were left out -> how many"""
    series: list[MetricHistory]

    def as_dict(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "experiment_hash": self.experiment_hash,
                "host": self.host, "host_fingerprint": self.fingerprint,
                "runs": self.run_ids, "excluded": self.excluded,
                "series": [s.as_dict() for s in self.series]}


def select_runs(st: Any, experiment: str | None, host: str | None = None, *,
                any_spec: bool = False, any_host: bool = False,
                include_calibration: bool = False) -> tuple[list[Any], History]:
    """The runs of one experiment (name, or a run of it; default the latest run's), with the
    same experiment hash and host fingerprint as the reference run (the run given, else the
    latest one, on ``host`` if given) unless relaxed, and without the A/A runs of
    `virtbench calibrate` unless ``include_calibration`` (they are the baseline measured K
    times in a row: not a point of the configuration's history). Returns the runs in time
    order and an empty History describing the selection."""
    runs = st.runs()
    if not runs:
        raise VirtbenchError(f"the store {st.shown} holds no runs yet")
    given = None
    if experiment is None:
        name = runs[-1].experiment
    elif any(r.experiment == experiment for r in runs):
        name = experiment
    else:  # a run: its experiment, compared by its own file hash and host
        given = st.run(experiment)
        name = given.experiment
    candidates = [r for r in runs if r.experiment == name]
    if host is not None:
        candidates = [r for r in candidates if r.host == host]
        if not candidates:
            hosts = sorted({r.host for r in runs if r.experiment == name})
            raise VirtbenchError(f"--host {host}: no run of {name} on that host; hosts: "
                                 f"{', '.join(hosts)}")
    calibration_runs = 0
    if not include_calibration:
        kept = [r for r in candidates if r.calibration is None]
        calibration_runs = len(candidates) - len(kept)
        if not kept:
            raise VirtbenchError(f"{name} has only calibration runs ({calibration_runs}) here; "
                                 "--include-calibration shows them")
        candidates = kept
    reference = given if given is not None and given in candidates else candidates[-1]
    facts = st.facts_of_runs([r.id for r in candidates])
    digest = experiment_digest(reference.spec_yaml)
    fingerprint = host_fingerprint(reference.host, facts.get(reference.id, {}))
    excluded: dict[str, int] = defaultdict(int)
    if calibration_runs:
        excluded["calibration run (--include-calibration includes it)"] = calibration_runs
    chosen = []
    for r in candidates:
        if not any_spec and experiment_digest(r.spec_yaml) != digest:
            excluded["other experiment file (--any-spec includes it)"] += 1
        elif not any_host and host_fingerprint(r.host, facts.get(r.id, {})) != fingerprint:
            excluded["other host or CPU (--any-host includes it)"] += 1
        else:
            chosen.append(r)
    return chosen, History(name, None if any_spec else digest,
                           None if any_host else reference.host,
                           None if any_host else fingerprint, [r.id for r in chosen],
                           dict(excluded), [])


def _points(runs: list[Any], moments: dict[str, tuple[int, float, float]], domain: Domain
            ) -> list[RunPoint]:
    """Each run's mean and CI from the moments of its per-trial values, by the report's rule
    (virtbench.stats.intervals.mean_interval): no interval below MIN_INTERVAL_VALUES values,
    and never outside the metric's domain — proportions by the same Wilson interval (effective
    n) as the report, positive quantities on the log scale (delta method: the report's Cox
    interval needs the values' logs), real ones by Student t."""
    ids = [r.id for r in runs if r.id in moments]
    if not ids:
        return []
    from scipy import special  # the t quantile (scipy.stats.t.ppf calls it)

    n = np.array([moments[i][0] for i in ids], dtype=np.float64)
    total = np.array([moments[i][1] for i in ids])
    squares = np.array([moments[i][2] for i in ids])
    mean = total / n
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        var = np.maximum(0.0, (squares - total * mean) / (n - 1))
        t = special.stdtrit(np.maximum(n - 1, 1), 0.5 + CONFIDENCE / 2)
        half = t * np.sqrt(var / n)
        low, high = mean - half, mean + half
        if domain is not Domain.REAL:
            # positive means: the interval of the log of the mean, never below 0; a mean of 0
            # or below (values that contradict the domain) keeps t, as the report falls back
            rel = half / mean
            low = np.where(mean > 0, mean * np.exp(-rel), low)
            high = np.where(mean > 0, mean * np.exp(rel), high)
        if domain is Domain.PROPORTION:
            wilson_low, wilson_high = _wilson(mean, var, n, t)
            inside = (mean >= 0) & (mean <= 100)
            low = np.where(inside, wilson_low, low)
            high = np.where(inside, wilson_high, high)
    enough = n >= MIN_INTERVAL_VALUES
    low = np.where(enough, low, math.nan)
    high = np.where(enough, high, math.nan)
    started = {r.id: r.started_at for r in runs}
    return [RunPoint(i, started[i], int(n[k]), float(mean[k]), float(low[k]), float(high[k]),
                     _no_ci_reason(int(n[k])))
            for k, i in enumerate(ids)]


def _no_ci_reason(n: int) -> str:
    if n >= MIN_INTERVAL_VALUES:
        return ""
    return f"{n} value{'s' if n != 1 else ''}: an interval needs at least {MIN_INTERVAL_VALUES}"


def _wilson(mean: FloatArray, var: FloatArray, n: FloatArray, z: FloatArray
            ) -> tuple[FloatArray, FloatArray]:
    """The report's Wilson score interval with the effective sample size (stats.intervals),
    in percent, from the mean and variance of per-trial percentages; t for z as there."""
    p = mean / 100.0
    var_mean = var / 1e4 / n
    n_eff = p * (1.0 - p) / var_mean
    denom = 1.0 + z * z / n_eff
    centre = (p + z * z / (2.0 * n_eff)) / denom
    half = z / denom * np.sqrt(p * (1.0 - p) / n_eff + z * z / (4.0 * n_eff * n_eff))
    low = 100.0 * np.maximum(0.0, centre - half)
    high = 100.0 * np.minimum(1.0, centre + half)
    constant = var_mean == 0.0  # every trial gave the same percentage
    return np.where(constant, mean, low), np.where(constant, mean, high)


def _steps(series: MetricHistory) -> list[Step]:
    means = np.array([p.mean for p in series.points])
    found = change_points(means)
    steps = []
    for cp in found:
        before = means[cp.before[0]:cp.before[1]]
        after = means[cp.after[0]:cp.after[1]]
        # the ratio and its interval do not depend on the direction (only the verdict does,
        # which a step does not keep): a metric without one still shows where it changed
        r = ratio_verdict(before, after, series.metric.better or Better.LOWER)
        steps.append(Step(cp.index, series.points[cp.index - 1].run_id,
                          series.points[cp.index].run_id, before.size, after.size,
                          r.ratio, r.ci_low, r.ci_high, cp.p_value))
    return steps


def build_history(st: Any, experiment: str | None = None, host: str | None = None, *,
                  metrics: list[str] | None = None, any_spec: bool = False,
                  any_host: bool = False, include_calibration: bool = False) -> History:
    """Run means with CIs per (variant, workload, metric) over the selected runs, in time
    order, with change points (see :mod:`virtbench.stats.changepoints`)."""
    runs, history = select_runs(st, experiment, host, any_spec=any_spec, any_host=any_host,
                                include_calibration=include_calibration)
    wanted = list(metrics or [])
    definitions: dict[tuple[str, str], Metric] = {}
    for run in reversed(runs[-3:]):  # the latest runs' declarations win
        for key, metric in st.metrics(run.id).items():
            definitions.setdefault(key, metric)
    names = {wid: name for wid, name, _p in st.workloads(runs[-1].id)}
    grouped: dict[tuple[str, str, str], dict[str, tuple[int, float, float]]] = defaultdict(dict)
    for run_id, variant, wid, mname, n, total, squares in st.group_moments(history.run_ids):
        grouped[(variant, wid, mname)][run_id] = (n, total, squares)
    if wanted:
        known = {m for _w, m in definitions} | {f"{w}.{m}" for w, m in definitions}
        unknown = [m for m in wanted if m not in known]
        if unknown:
            have = ", ".join(sorted({m for _w, m in definitions}))
            raise VirtbenchError(f"--metric: no metric {', '.join(unknown)} in "
                                 f"{history.experiment}; it has {have}")
    variant_order = {name: i for i, (name, _k, _b) in enumerate(st.variants(runs[-1].id))}
    for (variant, wid, mname) in sorted(grouped, key=lambda k: (
            k[1], not definitions.get((k[1], k[2]), _NO_METRIC).primary, k[2],
            variant_order.get(k[0], len(variant_order)), k[0])):
        metric = definitions.get((wid, mname))
        if metric is None or (wanted and mname not in wanted and f"{wid}.{mname}" not in wanted):
            continue
        series = MetricHistory(variant, wid, names.get(wid, wid), metric,
                               _points(runs, grouped[(variant, wid, mname)],
                                       metric.value_domain))
        series.steps = _steps(series)
        history.series.append(series)
    return history


_NO_METRIC = Metric("", "", Better.LOWER, "")  # sorts groups whose metric is undeclared
