"""Study 004 (Varnish cache storage, 3 runs in a row on a warming cache): the study's per-run
table per variant (repetition k = run k+1) and the cold (run 1) vs warm (runs 2..R) comparison."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from virtbench.analysis import Analysis
from virtbench.analysis.report_model import FirstVsRest
from virtbench.model import Domain, Metric
from virtbench.report.formatting import fmt_no_ci, fmt_num, fmt_value
from virtbench.report.sections import Section, SectionPlugin
from virtbench.report.sections._common import metric_of, workload_ids
from virtbench.stats import percentile_ci, summarize

__all__ = ["SECTIONS", "web_sections"]

WORKLOAD = "web.load"
REQUEST_METRIC = "response_time"
# (metric, column title, quantile for a CI from the per-request samples, or None)
RUN_COLUMNS: tuple[tuple[str, str, float | None], ...] = (
    ("samples", "samples", None),
    ("failures", "failures", None),
    ("success_rate", "success rate", None),
    ("response_time_mean", "mean", None),
    ("response_time_median", "median", 0.5),
    ("response_time_p90", "p90", 0.9),
    ("response_time_p99", "p99", 0.99),
    ("hit_ratio_run", "Varnish hit ratio of the run", None),
    ("hit_ratio_client", "client hit ratio", None),
)
COLD_WARM_METRICS = ("response_time_mean", "response_time_median", "response_time_p90",
                     "response_time_p99", "time_to_first_byte_mean", "hit_ratio_run",
                     "hit_ratio_client", "success_rate", "failures", "backend_fetches_run")


def _per_run(analysis: Analysis, wid: str, metric: str, variant: str) -> dict[int, float]:
    return dict(analysis.per_repetition.get((wid, metric), {}).get(variant, []))


def _request_samples(analysis: Analysis, wid: str
                     ) -> dict[tuple[str, int], npt.NDArray[np.float64]]:
    """Per-request response times of each (variant, run), its series joined in their order;
    series without failed requests' times only, see _run_section."""
    parts: dict[tuple[str, int], list[npt.NDArray[np.float64]]] = {}
    for item in analysis.series:
        if item.workload_id == wid and item.metric == REQUEST_METRIC:
            parts.setdefault((item.variant, item.repetition), []).append(item.values)
    return {key: np.concatenate(arrays) for key, arrays in parts.items()}


def _run_section(analysis: Analysis, wid: str, variant: str, metrics: list[Metric],
                 requests: dict[tuple[str, int], npt.NDArray[np.float64]]) -> Section | None:
    columns = [(m, title, q) for name, title, q in RUN_COLUMNS
               if (m := metric_of(analysis, wid, name)) is not None]
    by_metric = {m.name: _per_run(analysis, wid, m.name, variant) for m, _t, _q in columns}
    runs = sorted({rep for values in by_metric.values() for rep in values})
    if not runs:
        return None
    level = f"{analysis.confidence:.0%}"
    rows = []
    no_ci = 0
    for rep in runs:
        samples = by_metric.get("samples", {}).get(rep)
        failures = by_metric.get("failures", {}).get(rep)
        times = requests.get((variant, rep))
        # The per-request series keeps a failed request's time when it got an answer (a 503):
        # the CI is that of the successful requests only when the counts agree.
        exact = (times is not None and samples is not None and failures is not None
                 and len(times) == round(samples - failures) and len(times) > 0)
        array = np.asarray(times, dtype=np.float64) if exact and times is not None else None
        cells = [str(rep + 1)]
        for metric, _title, q in columns:
            value = by_metric[metric.name].get(rep)
            text = fmt_value(value, metric.unit)
            if q is not None and value is not None:
                if array is not None:
                    _est, low, high = percentile_ci(array, q, analysis.confidence)
                    if not (math.isnan(low) or math.isnan(high)):
                        text += f" [{fmt_num(low)}, {fmt_num(high)}]"
                else:
                    no_ci += 1
            cells.append(text)
        rows.append(cells)
    paragraphs = [
        f"Variant {variant}, one row per run: repetition k is the study's run k+1 on the same "
        "cache, which is not emptied between runs (run 1 starts cold). Percentiles come with "
        f"their distribution-free {level} CI from the run's per-request response times: the "
        "order statistics x(l), x(u) with ranks from Binomial(n, q), which cover the true "
        f"quantile with probability ≥ {level}; a percentile stands alone when the run has too "
        "few requests for such a bound (p99 needs several hundred).",
        *(f"{m.name} ({m.unit}): {m.description}" for m in metrics
          if m.name in {name for name, _t, _q in RUN_COLUMNS}),
    ]
    warnings = []
    if no_ci:
        warnings.append(
            f"{variant}: {no_ci} percentile(s) without a CI: the run stored no per-request "
            "samples (per_request_samples: false), or some failed requests have a response "
            "time, so the stored times are not exactly the successful ones")
    return Section(
        key=f"web-runs-{wid}-{variant}",
        title=f"{wid}: per run — {variant}",
        paragraphs=paragraphs,
        columns=["run", *(f"{title} ({m.unit})" + (f" [{level} CI]" if q else "")
                          for m, title, q in columns)],
        rows=rows, warnings=warnings, metrics=[(wid, m.name) for m, _t, _q in columns])


def _cold_warm(analysis: Analysis, wid: str, metric: str, variant: str) -> FirstVsRest | None:
    for item in analysis.first_vs_rest:
        if (item.variant, item.workload_id, item.metric) == (variant, wid, metric):
            return item
    values = [v for _rep, v in sorted(_per_run(analysis, wid, metric, variant).items())]
    if len(values) < 2:
        return None
    rest = summarize(values[1:], analysis.confidence, metric_def.value_domain
                     if (metric_def := metric_of(analysis, wid, metric)) else Domain.REAL)
    ratio = rest.mean / values[0] if values[0] else math.nan
    return FirstVsRest(variant, wid, metric, values[0], rest, ratio)


def _cold_warm_section(analysis: Analysis, wid: str, variants: list[str]) -> Section | None:
    level = f"{analysis.confidence:.0%}"
    metrics = [m for name in COLD_WARM_METRICS if (m := metric_of(analysis, wid, name))]
    rows = []
    for variant in variants:
        for metric in metrics:
            item = _cold_warm(analysis, wid, metric.name, variant)
            if item is None:
                continue
            rest = item.rest
            warm = fmt_value(rest.mean, metric.unit)
            if rest.n >= 2 and not math.isnan(rest.ci_low):
                warm += f" [{fmt_num(rest.ci_low)}, {fmt_num(rest.ci_high)}]"
            elif rest.n == 2:  # too few for an interval: show both values and say so
                warm += f" ({fmt_no_ci(rest.n, rest.minimum, rest.maximum, metric.unit)})"
            change = (f"{100 * (item.ratio - 1):+.3g} %" if math.isfinite(item.ratio)
                      else "–")
            rows.append([variant, f"{metric.name} ({metric.unit})",
                         fmt_value(item.first, metric.unit), warm, str(rest.n),
                         fmt_num(item.ratio, 3), change])
    if not rows:
        return None
    return Section(
        key=f"web-cold-warm-{wid}",
        title=f"{wid}: cold (run 1) vs warm (runs 2..R)",
        paragraphs=[
            "Run 1 starts on an empty cache (cold); the later runs reuse what it cached "
            f"(warm). Warm: mean of runs 2..R with its {level} CI inside the metric's domain "
            "(Wilson for a ratio, log scale for a time or count; none from fewer than three "
            "warm runs, whose values are shown instead); ratio: warm mean / cold value, in the "
            "metric's own terms (below 1 for a "
            "time means faster when warm, above 1 for a hit ratio means more hits); change: "
            "100 × (ratio − 1) in %."],
        columns=["variant", "metric (unit)", "cold: run 1", f"warm: runs 2..R [{level} CI]",
                 "warm runs", "warm / cold", "change %"],
        rows=rows, metrics=[(wid, m.name) for m in metrics])


def web_sections(analysis: Analysis) -> list[Section]:
    sections: list[Section] = []
    for wid in workload_ids(analysis, WORKLOAD):
        metrics = analysis.metrics_of(wid)
        requests = _request_samples(analysis, wid)
        variants = [v.name for v in analysis.variants]
        for variant in variants:
            section = _run_section(analysis, wid, variant, metrics, requests)
            if section is not None:
                sections.append(section)
        cold_warm = _cold_warm_section(analysis, wid, variants)
        if cold_warm is not None:
            sections.append(cold_warm)
    return sections


SECTIONS = (SectionPlugin("web", web_sections),)
