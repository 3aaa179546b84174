"""The report's Explain section: per profiled workload, each variant against the baseline (the
functions whose share of the samples changed most, the `profile.` counters that differ, which
frames stayed unresolved, the differential flame graph) and each variant's flame graph.

Flame graphs are inline SVG (report/flamegraph.py, every stored name escaped there) searched by
the page's script, with a link that saves the same graph as a standalone SVG file (a data: URL
built here, never a path). Every other value is text for the autoescaping templates.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from virtbench.analysis import Analysis
from virtbench.analysis.derived_views import anchor
from virtbench.decide.explain import Explanation, WorkloadExplanation
from virtbench.model import PROFILE_PREFIX
from virtbench.report.explain_text import estimate_text, share_pair, unresolved_text
from virtbench.report.flamegraph import flame_svg
from virtbench.report.formatting import fmt_value
from virtbench.report.gate.comparison_rows import ratio_text, verdict_text

__all__ = ["compare_context", "explain_anchor", "explain_context"]


def explain_anchor(workload_id: str) -> str:
    return anchor("explain", workload_id)


class _Graphs:
    """Numbers the page's flame graphs: ids and file names come from the count alone."""

    def __init__(self, prefix: str = "flame") -> None:
        self.count = 0
        self.prefix = prefix

    def graph(self, stacks: dict[Any, float], *, title: str, subtitle: str,
              base: dict[Any, float] | None = None) -> dict[str, Any]:
        self.count += 1
        svg_id = f"{self.prefix}-{self.count}"
        inline = flame_svg(stacks, title=title, subtitle=subtitle, base=base,
                           standalone=False, svg_id=svg_id)
        standalone = flame_svg(stacks, title=title, subtitle=subtitle, base=base)
        href = "data:image/svg+xml;base64," + base64.b64encode(standalone.encode()).decode()
        return {"id": svg_id, "svg": Markup(inline),  # our own SVG, names escaped in it
                "href": href, "filename": f"{svg_id}{'-diff' if base is not None else ''}.svg",
                "title": title}


def _function_rows(item: Explanation) -> list[dict[str, str]]:
    return [{"function": c.frame.name, "kind": c.frame.kind.value,
             "self": share_pair(c.self_base, c.self_new),
             "self_diff": estimate_text(c.self_diff, signed=True),
             "total": share_pair(c.total_base, c.total_new),
             "total_diff": estimate_text(c.total_diff, signed=True),
             "significant": "yes" if c.significant else ""}
            for c in item.functions]


def _counter_rows(analysis: Analysis, workload_id: str, variant: str) -> list[dict[str, str]]:
    """The `profile.` metrics of ``variant`` that differ significantly from the baseline (the
    report's own test, Holm-corrected across the report's comparisons)."""
    out = []
    for metric in analysis.metrics_of(workload_id):
        if not metric.name.startswith(PROFILE_PREFIX):
            continue
        row = analysis.row(variant, workload_id, metric.name)
        base = analysis.row(analysis.baseline, workload_id, metric.name)
        if row is None or base is None or not row.significant or row.summary is None \
                or base.summary is None:
            continue
        out.append({"metric": metric.name, "base": fmt_value(base.summary.mean, metric.unit),
                    "new": fmt_value(row.summary.mean, metric.unit),
                    "test": f"{row.p_holm:.2g}" if row.p_holm is not None
                    and math.isfinite(row.p_holm) else "–"})
    return out


def _compared_counters(item: Explanation) -> list[dict[str, str]]:
    """`compare --explain`'s counters: compare rows whose verdict is better or worse."""
    return [{"metric": row.metric.name,
             "base": fmt_value(row.result.mean_base, row.metric.unit),
             "new": fmt_value(row.result.mean_new, row.metric.unit),
             "test": f"{ratio_text(row)} {verdict_text(row)}"} for row in item.counters]


def _comparison(item: Explanation, graphs: _Graphs, workload_id: str,
                counters: list[dict[str, str]], counter_test: str,
                plain: bool) -> dict[str, Any]:
    return {
        "base": item.base, "new": item.new, "base_trials": item.base_trials,
        "new_trials": item.new_trials, "functions": _function_rows(item),
        "counters": counters, "counter_test": counter_test,
        "unresolved": unresolved_text(item), "notes": list(item.notes),
        "scope": item.scope_text[0].upper() + item.scope_text[1:] + ".",
        "graph": graphs.graph(item.new_stacks, base=item.base_stacks,
                              title=f"{workload_id}: {item.base} → {item.new}",
                              subtitle=f"{item.base_trials} → {item.new_trials} profiled "
                                       "trials"),
        "plain": [graphs.graph(stacks, title=f"{workload_id} · {side}",
                               subtitle=f"{trials} profiled trials")
                  for side, stacks, trials in ((item.base, item.base_stacks, item.base_trials),
                                               (item.new, item.new_stacks, item.new_trials))]
        if plain else []}


def compare_context(items: Sequence[Explanation], prefix: str = "flame"
                    ) -> list[dict[str, Any]]:
    """`serve`'s compare page: each explanation of BASE → NEW (decide.explain.explain_runs)
    with its differential flame graph and both sides' plain ones; ``prefix`` starts the
    graphs' element ids (one per comparison on a page: ids stay unique)."""
    graphs = _Graphs(prefix)
    return [{"workload_id": item.workload_id,
             **_comparison(item, graphs, item.workload_id, _compared_counters(item),
                           "NEW/BASE [95 % CI], verdict", plain=True)}
            for item in items]


def explain_context(analysis: Analysis, explained: Sequence[WorkloadExplanation]
                    ) -> list[dict[str, Any]]:
    """What templates/report_body.html.j2 shows in its Explain section, one entry per
    profiled workload."""
    graphs = _Graphs()
    names = [v.name for v in analysis.variants]
    out: list[dict[str, Any]] = []
    for w in explained:
        profiled = {v.variant for v in w.variants}
        notes = [f"variant {name}: no profile stored for this workload"
                 for name in names if name not in profiled]
        if analysis.baseline not in profiled and w.variants:
            notes.append(f"the baseline {analysis.baseline} has no profile: no variant is "
                         "compared with it")
        comparisons = []
        for item in w.comparisons:
            comparisons.append(_comparison(
                item, graphs, w.workload_id, _counter_rows(analysis, w.workload_id, item.new),
                "p (Holm)", plain=False))
        variants = [{"name": v.variant, "trials": v.trials,
                     "unresolved": "–" if math.isnan(v.unresolved_pct)
                     else f"{v.unresolved_pct:.1f} %",
                     "graph": graphs.graph(v.stacks, title=f"{w.workload_id} · {v.variant}",
                                           subtitle=f"{v.trials} profiled trials")}
                    for v in w.variants]
        out.append({"workload_id": w.workload_id, "anchor": explain_anchor(w.workload_id),
                    "notes": notes, "comparisons": comparisons, "variants": variants})
    return out
