"""BASE vs NEW: a verdict per shared (variant, workload, metric) and the regression gate."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from virtbench.decide.comparability import Difference, differences
from virtbench.decide.runs import RunData
from virtbench.model import Better, Metric, VirtbenchError
from virtbench.stats import holm
from virtbench.stats._sample import SampleLike
from virtbench.stats.bayes import DEFAULT_PRIOR_RATIO
from virtbench.stats.counts import zero_baseline_increase_p
from virtbench.stats.verdict import ALPHA, RatioVerdict, ratio_verdict

__all__ = ["Comparison", "ComparisonRow", "compare_runs", "variant_pairs"]


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
    probability_worse: float = math.nan
    """--probability X: posterior P(NEW at least X % worse) under the stated prior
    (stats.bayes); nan when not asked for or without a ratio and its standard error"""

    def as_dict(self) -> dict[str, Any]:
        r = self.result
        return {"variant": self.variant, "workload_id": self.workload_id,
                "workload": self.workload, "metric": self.metric.name, "unit": self.metric.unit,
                "better": self.metric.better.value, "n_base": r.n_base, "n_new": r.n_new,
                "mean_base": r.mean_base, "mean_new": r.mean_new, "ratio": r.ratio,
                "ci_low": r.ci_low, "ci_high": r.ci_high, "verdict": r.verdict,
                "p_equivalent": r.p_equivalent, "p_worse": r.p_worse,
                "p_worse_holm": self.p_worse_holm, "regression": self.regression,
                "unjudged": self.unjudged or None,
                "probability_worse": self.probability_worse,
                "more_repetitions_per_side": r.more_repetitions}


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
                "equivalence_pct": self.equivalence_pct, "fail_if_worse_pct": self.fail_pct,
                "alpha": ALPHA, "differences": [d.as_dict() for d in self.differences],
                "rows": [row.as_dict() for row in self.rows],
                "regression": bool(self.regressions),
                "unjudged": len(self.unjudged),
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


def _selected(metric: Metric, workload_id: str, wanted: list[str]) -> bool:
    return not wanted or metric.name in wanted or f"{workload_id}.{metric.name}" in wanted \
        or f"{workload_id}:{metric.name}" in wanted


def compare_runs(base: RunData, new: RunData, *, equivalence_pct: float = 2.0,
                 fail_pct: float | None = None, metrics: list[str] | None = None,
                 probability_pct: float | None = None,
                 prior_ratio: float = DEFAULT_PRIOR_RATIO) -> Comparison:
    """Verdicts for every workload · metric (per variant) both runs have, and the gate.

    ``metrics`` selects metrics by name ('throughput_Bps') or 'workload_id.metric'; the gate's
    Holm correction runs over the selected rows that have a ratio. ``probability_pct`` adds
    each row's posterior P(NEW at least that % worse) (stats.bayes, prior ``prior_ratio``).
    """
    if not 0 < equivalence_pct < 100:
        raise VirtbenchError(f"--equivalence must be in (0, 100) %, got {equivalence_pct}")
    if fail_pct is not None and fail_pct < 0:
        raise VirtbenchError(f"--fail-if-worse must be ≥ 0 %, got {fail_pct}")
    pairs = variant_pairs(base, new)
    if not pairs:
        raise VirtbenchError(
            f"runs {base.id} and {new.id} share no variant (BASE: {', '.join(base.variants)}; "
            f"NEW: {', '.join(new.variants)})")
    wanted = list(metrics or [])
    known = {m.name for m in base.metrics.values()} | {f"{w}.{m}" for w, m in base.metrics}
    unknown = [m for m in wanted if m not in known and m.replace(":", ".", 1) not in known]
    if unknown:
        raise VirtbenchError(f"--metric: BASE has no metric {', '.join(unknown)}; it has "
                             f"{', '.join(sorted({m.name for m in base.metrics.values()}))}")
    rows: list[ComparisonRow] = []
    for (wid, mname), metric in base.metrics.items():
        if (wid, mname) not in new.metrics or not _selected(metric, wid, wanted):
            continue
        if fail_pct is not None and metric.better.value == "higher" and fail_pct >= 100:
            raise VirtbenchError(f"--fail-if-worse {fail_pct}: {wid} · {mname} is higher-is-"
                                 "better and cannot fall by 100 % or more")
        for label, bvar, nvar in pairs:
            bvals = base.values.get((bvar, wid, mname))
            nvals = new.values.get((nvar, wid, mname))
            if bvals is None or nvals is None:
                continue
            result = ratio_verdict(bvals, nvals, metric.better, equivalence_pct=equivalence_pct,
                                   fail_pct=fail_pct or 0.0)
            if result.verdict == "no-ratio":
                result = _count_from_zero(result, [float(v) for v in bvals],
                                          [float(v) for v in nvals], metric.better)
            rows.append(ComparisonRow(
                label, wid, base.workloads.get(wid, (wid, {}))[0], metric, result,
                probability_worse=math.nan if probability_pct is None else _probability_worse(
                    bvals, nvals, metric.better, probability_pct, prior_ratio)))
    if not rows:
        raise VirtbenchError(f"runs {base.id} and {new.id} share no measured workload · metric"
                             + (" among those selected with --metric" if wanted else ""))
    if fail_pct is not None:
        adjusted = holm([r.result.p_worse for r in rows])
        rows = [_gated(r, p) for r, p in zip(rows, adjusted, strict=True)]
    return Comparison(base, new, equivalence_pct, fail_pct, rows, differences(base, new),
                      probability_pct, prior_ratio)


def _probability_worse(base: SampleLike, new: SampleLike, better: Better, pct: float,
                       prior_ratio: float) -> float:
    """The row's posterior P(NEW at least ``pct`` % worse); nan without a ratio (a side with
    fewer than 2 values or a mean ≤ 0)."""
    import numpy as np

    from virtbench.stats.bayes import probability_worse
    from virtbench.stats.verdict import log_ratio_moments

    b, n = np.asarray(base, dtype=np.float64), np.asarray(new, dtype=np.float64)
    if b.size < 2 or n.size < 2 or b.mean() <= 0 or n.mean() <= 0:
        return math.nan
    moments = log_ratio_moments(np.array([b.mean()]), np.array([b.var(ddof=1)]),
                                np.array([b.size]), np.array([n.mean()]),
                                np.array([n.var(ddof=1)]), np.array([n.size]))
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
        return dataclasses.replace(row, p_worse_holm=p, unjudged=reason)
    regression = p < ALPHA
    result = row.result
    if regression and result.verdict == "equivalent":
        # The gate's threshold lies inside the equivalence margin: a row that fails the gate
        # is never shown as equivalent.
        result = dataclasses.replace(result, verdict="worse")
    return dataclasses.replace(row, result=result, p_worse_holm=p, regression=regression)
