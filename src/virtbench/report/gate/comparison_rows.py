"""One comparison row as plain text, the same in every output format (terminal, JUnit, GitHub,
GitLab, Markdown): its name, ratio with interval, verdict, the gate's outcome and why. Stored
names are returned as they are: each format escapes them by its own rule."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from virtbench.model import Better
from virtbench.report.formatting import fmt_value
from virtbench.stats.verdict import ALPHA

if TYPE_CHECKING:
    from virtbench.decide.compare import Comparison, ComparisonRow
    from virtbench.model import Metric

__all__ = ["Outcome", "definition", "explanation", "failing", "outcome", "ratio_text",
           "run_ids", "several_variants", "summary_line", "threshold_text", "title",
           "verdict_text"]

Outcome = Literal["regression", "unjudged", "allowed", "ok", "no gate"]
"""regression and unjudged fail the gate; allowed is an unjudged row --allow-unjudged passes"""


def outcome(comparison: Comparison, row: ComparisonRow, allow_unjudged: bool) -> Outcome:
    if comparison.fail_pct is None:
        return "no gate"
    if row.regression:
        return "regression"
    if row.unjudged:
        return "allowed" if allow_unjudged else "unjudged"
    return "ok"


def failing(comparison: Comparison, allow_unjudged: bool) -> list[ComparisonRow]:
    """The rows that fail the gate (exit 1): regressions, and unjudged rows unless allowed."""
    return [row for row in comparison.rows
            if outcome(comparison, row, allow_unjudged) in ("regression", "unjudged")]


def run_ids(comparison: Comparison, side: Literal["base", "new"]) -> list[str]:
    """The ids of a side's runs (one, or several with `compare B1 B2 -- N1 N2`)."""
    runs = comparison.base_runs if side == "base" else comparison.new_runs
    return [r.id for r in runs] or [comparison.base.id if side == "base" else comparison.new.id]


def several_variants(comparison: Comparison) -> bool:
    return len({row.variant for row in comparison.rows}) > 1


def title(row: ComparisonRow, several: bool) -> str:
    """'workload · metric', with '(variant)' when the comparison has several."""
    return f"{row.workload_id} · {row.metric.name}" + (f" ({row.variant})" if several else "")


def _num(ratio: float) -> str:
    """Four decimals near 1 (1.0100 stays distinguishable from 1.0149), else 4 digits."""
    return f"{ratio:.4f}" if 0.1 <= ratio < 10 else f"{ratio:.4g}"


def ratio_text(row: ComparisonRow) -> str:
    """NEW/BASE with its 95 % interval: '1.0512 [1.0301, 1.0727]'; '–' without a ratio."""
    r = row.result
    if math.isnan(r.ratio):
        return "–"
    if math.isnan(r.ci_low):
        return _num(r.ratio)
    return f"{_num(r.ratio)} [{_num(r.ci_low)}, {_num(r.ci_high)}]"


def verdict_text(row: ComparisonRow) -> str:
    r = row.result
    text = {"insufficient": "too few values (n < 2)", "no-ratio": "no ratio (mean ≤ 0)"}.get(
        r.verdict, r.verdict)
    if r.verdict == "inconclusive":
        more = "many" if math.isinf(r.more_repetitions) else f"~{int(r.more_repetitions)}"
        if row.per_run_means:  # the repetitions of run means are runs
            text += f": {more} more runs/side"
        elif row.between_sd is not None and math.isinf(r.more_repetitions):
            text += ": drift between runs: more runs/side, not reps"
        else:
            text += f": {more} more reps/side"
    return text


def definition(metric: Metric, quote: Callable[[str], str] = str) -> str:
    """'s, lower is better: wall time of one operation' (unit, direction, description);
    ``quote`` escapes the stored parts (unit, description) for a format."""
    text = f"{quote(metric.unit or 'unitless')}, {metric.direction_text}"
    return f"{text}: {quote(metric.description)}" if metric.description else text


def threshold_text(comparison: Comparison, metric: Metric) -> str:
    """The gate's threshold for this metric, as a ratio bound."""
    if comparison.fail_pct is None:
        return "no gate (--fail-if-worse not given)"
    pct = comparison.fail_pct
    bound = (f"NEW/BASE above {1 + pct / 100:g}" if metric.better is Better.LOWER
             else f"NEW/BASE below {1 - pct / 100:g}")
    return f"fails when NEW is worse than BASE by more than {pct:g} % ({bound})"


def _p(p: float) -> str:
    return "–" if math.isnan(p) else f"{p:.3g}"


def explanation(comparison: Comparison, row: ComparisonRow) -> str:
    """One paragraph: means, ratio with its interval, verdict, p-value, threshold, definition
    (the text of a JUnit failure, a GitHub annotation or a Code Quality issue)."""
    r, unit = row.result, row.metric.unit
    if comparison.per_run_means:
        sizes = (f"mean of {r.n_base} run means", f"mean of {r.n_new} run means")
    else:
        sizes = (f"n = {r.n_base}", f"n = {r.n_new}")
    parts = [f"NEW/BASE = {ratio_text(row)} (ratio of means, 95 % CI)",
             f"BASE mean {fmt_value(r.mean_base, unit)} ({sizes[0]}), NEW mean "
             f"{fmt_value(r.mean_new, unit)} ({sizes[1]})",
             f"verdict: {verdict_text(row)}"]
    if comparison.fail_pct is not None:
        parts.append(f"one-sided p = {_p(row.p_worse_holm)} (Holm over {len(comparison.rows)} "
                     f"rows, α = {ALPHA:g})")
        if row.unjudged:
            parts.append(f"cannot judge: {row.unjudged}")
    parts.append(f"threshold: {threshold_text(comparison, row.metric)}")
    parts.append(f"variance model: {comparison.variance.text}"
                 + (f" (between-run SD {100 * row.between_sd:.2g} % of the mean added to each "
                    "side)" if row.between_sd is not None else ""))
    parts.append(f"{row.metric.name}: {definition(row.metric)}")
    return "; ".join(parts)


def _not_judged(comparison: Comparison) -> str:
    """How many shared metrics were left out for having no direction (no stored text)."""
    count = len(comparison.not_judged)
    if not count:
        return ""
    return (f"; {count} metric{'s' if count != 1 else ''} left out: no direction (counts "
            "that describe the trial are not judged)")


def summary_line(comparison: Comparison, allow_unjudged: bool) -> str:
    """The gate's outcome in one sentence."""
    model = f"; variance model: {comparison.variance.text}"
    if comparison.fail_pct is None:
        return (f"{len(comparison.rows)} rows compared; no gate (--fail-if-worse not given)"
                + _not_judged(comparison) + model)
    bad = len(comparison.regressions)
    unjudged = len(comparison.unjudged)
    text = (f"{bad} of {len(comparison.rows)} rows worse than BASE by more than "
            f"{comparison.fail_pct:g} % (one-sided α = {ALPHA:g}, Holm)")
    if unjudged:
        text += (f"; {unjudged} cannot be judged"
                 + (" (passed: --allow-unjudged)" if allow_unjudged else " (fail the gate)"))
    text += _not_judged(comparison)
    passed = not failing(comparison, allow_unjudged)
    return ("gate passed: " if passed else "gate failed: ") + text + model
