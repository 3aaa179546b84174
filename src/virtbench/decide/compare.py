"""BASE vs NEW: a verdict per shared (variant, workload, metric) and the regression gate.

Three variance models (docs/statistics.md): one run per side, runs taken as independent draws
(the trials are the sample); one run per side with a noise profile of NEW's host and experiment
file (virtbench.decide.calibration: the between-run variance σ_b² added to each side); several
runs per side (each run's mean one value: Welch on run means, drift estimated from the runs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from virtbench.decide.calibration import NoiseProfile
from virtbench.decide.comparability import Difference, differences
from virtbench.decide.runs import RunData
from virtbench.model import NOT_JUDGED, PROFILE_PREFIX, Better, Metric, VirtbenchError, better_text
from virtbench.stats import holm
from virtbench.stats._sample import SampleLike
from virtbench.stats.bayes import DEFAULT_PRIOR_RATIO
from virtbench.stats.counts import zero_baseline_increase_p
from virtbench.stats.verdict import ALPHA, RatioVerdict, ratio_verdict

__all__ = ["Comparison", "ComparisonRow", "VarianceModel", "compare_run_sets", "compare_runs",
           "variant_pairs"]

NO_PROFILE = ("runs independent (no profile: the verdict assumes runs don't drift; run "
              "`virtbench calibrate`)")


@dataclass(frozen=True)
class VarianceModel:
    """Which variance the verdicts assume, in words every output format shows."""

    kind: Literal["independent", "profile", "run-means"]
    text: str
    profile_id: int | None = None
    profile_runs: int = 0
    base_runs: int = 1
    new_runs: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "profile_id": self.profile_id,
                "profile_runs": self.profile_runs or None, "base_runs": self.base_runs,
                "new_runs": self.new_runs}


def independent_model(reason: str = "") -> VarianceModel:
    """One run per side, no profile: ``reason`` replaces the default explanation (e.g.
    '--no-profile')."""
    if not reason:
        return VarianceModel("independent", NO_PROFILE)
    return VarianceModel("independent", f"runs independent ({reason}: the verdict assumes "
                                        "runs don't drift)")


def profile_model(profile: NoiseProfile, applied: int, rows: int) -> VarianceModel:
    import datetime as dt

    when = dt.datetime.fromtimestamp(profile.created_at).strftime("%Y-%m-%d %H:%M")
    text = (f"noise profile from {profile.runs} runs on this host (calibrated {when}): "
            "between-run drift added to each side")
    if applied < rows:
        text += f"; {rows - applied} of {rows} rows have no profile entry and assume no drift"
    return VarianceModel("profile", text, profile.id, profile.runs)


def run_means_model(base_runs: int, new_runs: int) -> VarianceModel:
    return VarianceModel("run-means", f"run means of {base_runs} and {new_runs} runs (each run "
                                      "one value: drift estimated from the runs themselves)",
                         base_runs=base_runs, new_runs=new_runs)


@dataclass(frozen=True)
class ComparisonRow:
    variant: str
    """the variant's name ('base-name → new-name' when two single-variant runs are paired)"""
    workload_id: str
    workload: str
    metric: Metric
    result: RatioVerdict
    p_worse_holm: float = math.nan
    regression: bool = False
    """NEW worse than BASE by more than the gate's PCT (Holm-adjusted one-sided p < ALPHA)"""
    unjudged: str = ""
    """Why the gate could not judge this row (n < 2, no ratio, no p-value); '' when it could
    or when no gate was asked for"""
    between_sd: float | None = None
    """the noise profile's between-run SD (log scale) added to each side; None without one"""
    per_run_means: bool = False
    """n counts runs (each run's mean one value: `compare B1 B2 -- N1 N2`)"""
    probability_worse: float = math.nan
    """--probability X: posterior P(NEW at least X % worse) under the stated prior
    (stats.bayes); nan when not asked for or without a ratio and its standard error"""

    def as_dict(self) -> dict[str, Any]:
        r = self.result
        return {"variant": self.variant, "workload_id": self.workload_id,
                "workload": self.workload, "metric": self.metric.name, "unit": self.metric.unit,
                "better": better_text(self.metric.better), "n_base": r.n_base, "n_new": r.n_new,
                "mean_base": r.mean_base, "mean_new": r.mean_new, "ratio": r.ratio,
                "ci_low": r.ci_low, "ci_high": r.ci_high, "verdict": r.verdict,
                "p_equivalent": r.p_equivalent, "p_worse": r.p_worse,
                "p_worse_holm": self.p_worse_holm, "regression": self.regression,
                "unjudged": self.unjudged or None,
                "probability_worse": self.probability_worse,
                "more_repetitions_per_side": r.more_repetitions,
                "n_counts": "runs" if self.per_run_means else "values",
                "between_run_sd": self.between_sd}


@dataclass
class Comparison:
    base: RunData
    new: RunData
    equivalence_pct: float
    fail_pct: float | None
    rows: list[ComparisonRow]
    differences: list[Difference] = field(default_factory=list)
    probability_pct: float | None = None
    """--probability X: each row's P(NEW at least X % worse) was computed"""
    prior_ratio: float = DEFAULT_PRIOR_RATIO
    """that probability's prior: 95 % of its mass on ratios within [1/R, R]"""
    variance: VarianceModel = field(default_factory=independent_model)
    base_runs: list[RunData] = field(default_factory=list)
    """every BASE run (several with `compare B1 B2 -- N1 N2`); [] means [base]"""
    new_runs: list[RunData] = field(default_factory=list)
    not_judged: list[str] = field(default_factory=list)
    """'workload_id.metric' of the shared metrics left out because they have no direction
    (counts that describe the trial: no verdict, no gate decision)"""

    @property
    def per_run_means(self) -> bool:
        """n counts runs (their means), not values."""
        return self.variance.kind == "run-means"

    @property
    def regressions(self) -> list[ComparisonRow]:
        return [row for row in self.rows if row.regression]

    @property
    def unjudged(self) -> list[ComparisonRow]:
        """Rows the gate could not judge: a gate that passes them would fail open."""
        return [row for row in self.rows if row.unjudged]

    def as_dict(self) -> dict[str, Any]:
        def run(r: RunData) -> dict[str, Any]:
            return {"id": r.id, "experiment": r.experiment, "host": r.host, "source": r.source,
                    "started_at": r.started_at, "experiment_hash": r.digest}

        return {"base": run(self.base), "new": run(self.new),
                "base_runs": [run(r) for r in self.base_runs or [self.base]],
                "new_runs": [run(r) for r in self.new_runs or [self.new]],
                "variance_model": self.variance.as_dict(),
                "equivalence_pct": self.equivalence_pct, "fail_if_worse_pct": self.fail_pct,
                "alpha": ALPHA, "differences": [d.as_dict() for d in self.differences],
                "rows": [row.as_dict() for row in self.rows],
                "regression": bool(self.regressions),
                "unjudged": len(self.unjudged),
                "not_judged": {"metrics": self.not_judged, "why": NOT_JUDGED},
                "probability": None if self.probability_pct is None else {
                    "worse_by_pct": self.probability_pct, "prior": "log ratio ~ normal(0, sd) "
                    f"with 95 % on ratios within [1/{self.prior_ratio:g}, {self.prior_ratio:g}]",
                    "prior_ratio": self.prior_ratio}}


def variant_pairs(base: RunData, new: RunData) -> list[tuple[str, str, str]]:
    """(label, base variant, new variant): variants of the same name; two single-variant runs
    are paired whatever their variants are called."""
    shared = [name for name in base.variants if name in new.variants]
    if shared:
        return [(name, name, name) for name in shared]
    if len(base.variants) == 1 and len(new.variants) == 1:
        (b,), (n,) = base.variants, new.variants
        return [(f"{b} → {n}", b, n)]
    return []


def _selected(metric: Metric, workload_id: str, wanted: list[str],
              diagnostics: bool = False) -> bool:
    """``diagnostics``: the `profile.` metrics only (--explain's counters); otherwise never them
    (perf counters explain a difference, they are not a verdict or a gate input)."""
    if metric.name.startswith(PROFILE_PREFIX) != diagnostics:
        return False
    return not wanted or metric.name in wanted or f"{workload_id}.{metric.name}" in wanted \
        or f"{workload_id}:{metric.name}" in wanted


def _check_options(equivalence_pct: float, fail_pct: float | None) -> None:
    if not 0 < equivalence_pct < 100:
        raise VirtbenchError(f"--equivalence must be in (0, 100) %, got {equivalence_pct}")
    if fail_pct is not None and fail_pct < 0:
        raise VirtbenchError(f"--fail-if-worse must be ≥ 0 %, got {fail_pct}")


def _selection(base: RunData, metrics: list[str] | None) -> list[str]:
    wanted = list(metrics or [])
    verdicts = [m for m in base.metrics.values()
                if not m.name.startswith(PROFILE_PREFIX) and m.directed]
    known = {m.name for m in verdicts} | {f"{w}.{m.name}" for (w, _n), m in base.metrics.items()
                                          if m in verdicts}
    undirected = {m.name for m in base.metrics.values() if not m.directed} | {
        f"{w}.{m.name}" for (w, _n), m in base.metrics.items() if not m.directed}
    unknown = [m for m in wanted if m not in known and m.replace(":", ".", 1) not in known]
    described = [m for m in unknown if m in undirected or m.replace(":", ".", 1) in undirected]
    if described:
        raise VirtbenchError(f"--metric {', '.join(described)}: {NOT_JUDGED}")
    diagnostic = [m for m in unknown if m.startswith(PROFILE_PREFIX)
                  or f".{PROFILE_PREFIX}" in m or f":{PROFILE_PREFIX}" in m]
    if diagnostic:
        raise VirtbenchError(f"--metric {', '.join(diagnostic)}: `profile.` metrics are perf "
                             "counters that explain a difference, not verdicts or gate inputs; "
                             "--explain lists those that changed")
    if unknown:
        raise VirtbenchError(f"--metric: BASE has no metric {', '.join(unknown)}; it has "
                             f"{', '.join(sorted({m.name for m in verdicts}))}")
    return wanted


Values = list[npt.NDArray[np.float64]]
"""one array of values per run of a side"""
Judge = Callable[[str, Metric, Better, Values, Values],
                 tuple[RatioVerdict, float | None, float]]
"""(workload id, metric, its direction, BASE values per run, NEW values per run) -> (verdict,
the between-run
SD it assumed (None for none), P(NEW at least --probability % worse) (nan if not asked))"""


def not_judged(base: RunData, new: RunData, wanted: list[str]) -> list[str]:
    """'workload_id.metric' of the shared, selected metrics without a direction: compare
    leaves them out (and says so)."""
    return [f"{wid}.{mname}" for (wid, mname), metric in base.metrics.items()
            if not metric.directed and (wid, mname) in new.metrics
            and _selected(metric, wid, wanted)]


def _rows(base: RunData, new: RunData, bases: Sequence[RunData], news: Sequence[RunData],
          wanted: list[str], fail_pct: float | None, judge: Judge,
          diagnostics: bool = False) -> list[ComparisonRow]:
    """A row per shared workload · metric · variant pair, judged by ``judge`` (``diagnostics``:
    the `profile.` metrics only, which are otherwise left out); metrics without a direction
    are left out (:func:`not_judged` names them)."""
    pairs = variant_pairs(base, new)
    if not pairs:
        raise VirtbenchError(
            f"runs {base.id} and {new.id} share no variant (BASE: {', '.join(base.variants)}; "
            f"NEW: {', '.join(new.variants)})")
    rows: list[ComparisonRow] = []
    for (wid, mname), metric in base.metrics.items():
        if ((wid, mname) not in new.metrics or not _selected(metric, wid, wanted, diagnostics)
                or metric.better is None):
            continue
        if fail_pct is not None and metric.better is Better.HIGHER and fail_pct >= 100:
            raise VirtbenchError(f"--fail-if-worse {fail_pct}: {wid} · {mname} is higher-is-"
                                 "better and cannot fall by 100 % or more")
        for label, bvar, nvar in pairs:
            bvals = [r.values[(bvar, wid, mname)] for r in bases
                     if (bvar, wid, mname) in r.values]
            nvals = [r.values[(nvar, wid, mname)] for r in news
                     if (nvar, wid, mname) in r.values]
            if not bvals or not nvals:
                continue
            result, between_sd, probability = judge(wid, metric, metric.better, bvals, nvals)
            if result.verdict == "no-ratio":
                result = _count_from_zero(result, [float(v) for a in bvals for v in a],
                                          [float(v) for a in nvals for v in a], metric.better)
            rows.append(ComparisonRow(label, wid, base.workloads.get(wid, (wid, {}))[0],
                                      metric, result, between_sd=between_sd,
                                      probability_worse=probability))
    if not rows and not diagnostics:
        raise VirtbenchError(f"runs {base.id} and {new.id} share no measured workload · metric"
                             + (" among those selected with --metric" if wanted else ""))
    return rows


def _gate(rows: list[ComparisonRow], fail_pct: float | None) -> list[ComparisonRow]:
    if fail_pct is None:
        return rows
    adjusted = holm([r.result.p_worse for r in rows])
    return [_gated(r, p) for r, p in zip(rows, adjusted, strict=True)]


def compare_runs(base: RunData, new: RunData, *, equivalence_pct: float = 2.0,
                 fail_pct: float | None = None, metrics: list[str] | None = None,
                 profile: NoiseProfile | None = None, no_profile_reason: str = "",
                 probability_pct: float | None = None,
                 prior_ratio: float = DEFAULT_PRIOR_RATIO, diagnostics: bool = False
                 ) -> Comparison:
    """Verdicts for every workload · metric (per variant) both runs have, and the gate.

    The `profile.` metrics (perf counters) are left out; ``diagnostics`` compares them alone
    instead (--explain's counters; no rows when the runs have none).

    ``metrics`` selects metrics by name ('throughput_Bps') or 'workload_id.metric'; the gate's
    Holm correction runs over the selected rows that have a ratio. ``profile``: the noise
    profile of NEW's host and experiment file, whose between-run variance σ_b² of each
    workload · metric is added to each side (the baseline variant's σ_b stands for every
    variant); without it the runs are taken as independent draws (``no_profile_reason`` says
    why there is none, default: none stored). ``probability_pct`` adds each row's posterior
    P(NEW at least that % worse) (stats.bayes, prior ``prior_ratio``), under the same variance.
    """
    _check_options(equivalence_pct, fail_pct)
    wanted = _selection(base, metrics)
    applied = 0

    def judge(wid: str, metric: Metric, better: Better, bvals: Values, nvals: Values
              ) -> tuple[RatioVerdict, float | None, float]:
        nonlocal applied
        components = profile.for_metric(wid, metric.name) if profile is not None else None
        between_var, between_df = 0.0, math.inf
        if components is not None:
            applied += 1
            between_var, between_df = components.between_var, components.between_df
        result = ratio_verdict(bvals[0], nvals[0], better, equivalence_pct=equivalence_pct,
                               fail_pct=fail_pct or 0.0, between_var=between_var,
                               between_df=between_df)
        probability = (math.nan if probability_pct is None else _probability_worse(
            bvals[0], nvals[0], better, probability_pct, prior_ratio, between_var,
            between_df))
        return (result, components.between_sd if components is not None else None,
                probability)

    rows = _gate(_rows(base, new, [base], [new], wanted, fail_pct, judge, diagnostics), fail_pct)
    variance = (profile_model(profile, applied, len(rows)) if profile is not None
                else independent_model(no_profile_reason))
    return Comparison(base, new, equivalence_pct, fail_pct, rows, differences(base, new),
                      probability_pct, prior_ratio, variance=variance,
                      not_judged=[] if diagnostics else not_judged(base, new, wanted))


def compare_run_sets(bases: Sequence[RunData], news: Sequence[RunData], *,
                     equivalence_pct: float = 2.0, fail_pct: float | None = None,
                     metrics: list[str] | None = None, probability_pct: float | None = None,
                     prior_ratio: float = DEFAULT_PRIOR_RATIO) -> Comparison:
    """Several runs per side (each side from one experiment file): every run's mean is one
    value, and the verdicts are those of :func:`ratio_verdict` on the run means (Welch on the
    run means' log ratio), so run-to-run drift is measured by the runs themselves. A side
    needs two runs with values of a row for it to be judged."""
    if not bases or not news:
        raise VirtbenchError("compare BASE... -- NEW...: give runs on both sides of --")
    for side, runs in (("BASE", bases), ("NEW", news)):
        if len({r.digest for r in runs}) > 1:
            raise VirtbenchError(f"the {side} runs come from different experiment files (their "
                                 "hashes differ); each side of `--` must be runs of one file")
        if len({r.id for r in runs}) < len(runs):
            raise VirtbenchError(f"a {side} run is given twice; name each run once")
    _check_options(equivalence_pct, fail_pct)
    base, new = bases[0], news[0]
    wanted = _selection(base, metrics)

    def judge(wid: str, metric: Metric, better: Better, bvals: Values, nvals: Values
              ) -> tuple[RatioVerdict, None, float]:
        base_means = np.array([a.mean() for a in bvals])
        new_means = np.array([a.mean() for a in nvals])
        probability = (math.nan if probability_pct is None else _probability_worse(
            base_means, new_means, better, probability_pct, prior_ratio))
        return ratio_verdict(base_means, new_means, better,
                             equivalence_pct=equivalence_pct, fail_pct=fail_pct or 0.0), None, \
            probability

    rows = _gate([dataclasses.replace(row, per_run_means=True)
                  for row in _rows(base, new, bases, news, wanted, fail_pct, judge)], fail_pct)
    return Comparison(base, new, equivalence_pct, fail_pct, rows, differences(base, new),
                      probability_pct, prior_ratio, variance=run_means_model(len(bases), len(news)),
                      base_runs=list(bases), new_runs=list(news),
                      not_judged=not_judged(base, new, wanted))


def _probability_worse(base: SampleLike, new: SampleLike, better: Better, pct: float,
                       prior_ratio: float, between_var: float = 0.0,
                       between_df: float = math.inf) -> float:
    """The row's posterior P(NEW at least ``pct`` % worse), its likelihood the gate's log-ratio
    moments (with the noise profile's drift when given); nan without a ratio (a side with
    fewer than 2 values or a mean ≤ 0)."""
    from virtbench.stats.bayes import probability_worse
    from virtbench.stats.verdict import log_ratio_moments

    b, n = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    if b.size < 2 or n.size < 2 or b.mean() <= 0 or n.mean() <= 0:
        return math.nan
    moments = log_ratio_moments(np.array([b.mean()]), np.array([b.var(ddof=1)]),
                                np.array([b.size]), np.array([n.mean()]),
                                np.array([n.var(ddof=1)]), np.array([n.size]),
                                between_var=between_var, between_df=between_df)
    return float(probability_worse(moments, better, pct, prior_ratio)[0])


def _count_from_zero(result: RatioVerdict, base: Sequence[float], new: Sequence[float],
                     better: Better) -> RatioVerdict:
    """A count that BASE saw 0 times in every trial: judged by the exact test on counts
    (virtbench.stats.counts) instead of a ratio; any other 'no-ratio' stays as it is."""
    p = zero_baseline_increase_p(base, new)
    if p is None:
        return result
    if not any(new):  # zero on both sides: no change
        return dataclasses.replace(result, verdict="equivalent", p_worse=1.0)
    significant = p < ALPHA
    if better is Better.LOWER:
        return dataclasses.replace(result, verdict="worse" if significant else "inconclusive",
                                   p_worse=p)
    return dataclasses.replace(result, verdict="better" if significant else "inconclusive",
                               p_worse=1.0)


_UNJUDGED = {"insufficient": "fewer than 2 values on a side",
             "no-ratio": "a mean ≤ 0 that is not a count from zero: no ratio"}


def _gated(row: ComparisonRow, p: float) -> ComparisonRow:
    """The gate's reading of one row: a regression, or why it cannot be judged."""
    if math.isnan(p):
        reason = _UNJUDGED.get(row.result.verdict, "no p-value (no variance on either side)")
        if row.per_run_means and row.result.verdict == "insufficient":
            reason = "fewer than 2 runs with values on a side (run means)"
        return dataclasses.replace(row, p_worse_holm=p, unjudged=reason)
    regression = p < ALPHA
    result = row.result
    if regression and result.verdict == "equivalent":
        # The gate's threshold lies inside the equivalence margin: a row that fails the gate
        # is never shown as equivalent.
        result = dataclasses.replace(result, verdict="worse")
    return dataclasses.replace(row, result=result, p_worse_holm=p, regression=regression)
