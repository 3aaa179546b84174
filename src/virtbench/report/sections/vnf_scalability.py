"""Study 002 (VNF throughput and scalability): router throughput and CPU busy vs the number of
stressed neighbours, one block per host when several runs are compared, and a summary of every
host's degradation range and linear-fit slope."""

from __future__ import annotations

import numpy as np

from virtbench.analysis import Analysis, VariantInfo
from virtbench.net_qos.scalability import Scalability, scalability
from virtbench.report.formatting import fmt_num, fmt_p, fmt_value
from virtbench.report.sections import Section, SectionPlugin
from virtbench.report.sections._common import (
    change_from_row,
    fmt_change,
    fmt_mean_ci,
    metric_of,
    run_blocks,
    workload_ids,
)
from virtbench.stats import RatioCI, choose_test, percent_change_ci

__all__ = ["SECTIONS", "vnf_sections"]

WORKLOAD = "net.router-throughput"
KNOB = "neighbours"
THROUGHPUT = "throughput_gbps"
CPU = "cpu_busy_pct"
RETRANSMITS = "tcp_retransmits"


def _by_count(variants: list[VariantInfo]) -> dict[int, VariantInfo]:
    out: dict[int, VariantInfo] = {}
    for info in variants:
        value = info.knobs.get(KNOB)
        if isinstance(value, int) and not isinstance(value, bool):
            out.setdefault(value, info)
    return dict(sorted(out.items()))


def _fit(analysis: Analysis, wid: str, counts: dict[int, VariantInfo]) -> Scalability | None:
    samples = {n: analysis.values[(v.name, wid, THROUGHPUT)] for n, v in counts.items()
               if (v.name, wid, THROUGHPUT) in analysis.values}
    samples = {n: s for n, s in samples.items() if s.size}
    if len(samples) < 2 or sum(s.size for s in samples.values()) < 3:
        return None
    return scalability({n: s.tolist() for n, s in samples.items()})


def _change(analysis: Analysis, wid: str, variant: str, reference: str
            ) -> tuple[RatioCI | None, float | None]:
    """Percent change of mean throughput against ``reference`` (the same host's run at the
    baseline's neighbour count): the report's row when it compares exactly that, else computed
    from the per-trial values (p then not Holm-corrected)."""
    if variant == reference:
        return None, None
    row = analysis.row(variant, wid, THROUGHPUT)
    if row is not None and row.reference == reference:
        return change_from_row(row), row.p_holm
    base = analysis.values.get((reference, wid, THROUGHPUT))
    sample = analysis.values.get((variant, wid, THROUGHPUT))
    if base is None or sample is None or base.size < 2 or sample.size < 2:
        return None, None
    if float(np.mean(base)) == 0.0:
        return None, None
    return (percent_change_ci(base, sample, analysis.confidence, seed=0),
            choose_test(base, sample).p_value)


def vnf_sections(analysis: Analysis) -> list[Section]:
    sections: list[Section] = []
    ci = f"[{analysis.confidence:.0%} CI]"
    level = f"{analysis.confidence:.0%}"
    for wid in workload_ids(analysis, WORKLOAD):
        tput = metric_of(analysis, wid, THROUGHPUT)
        if tput is None:
            continue
        cpu = metric_of(analysis, wid, CPU)
        retrans = metric_of(analysis, wid, RETRANSMITS)
        unit = tput.unit
        summary_rows: list[list[str]] = []
        base = analysis.variant(analysis.baseline)
        base_count = base.knobs.get(KNOB) if base else None
        for label, variants in run_blocks(analysis):
            counts = _by_count(variants)
            if not counts:
                continue
            ref = (counts[base_count] if isinstance(base_count, int) and base_count in counts
                   else next(iter(counts.values())))
            rows = []
            for n, info in counts.items():
                row = analysis.row(info.name, wid, THROUGHPUT)
                cpu_row = analysis.row(info.name, wid, CPU) if cpu else None
                re_row = analysis.row(info.name, wid, RETRANSMITS) if retrans else None
                change, p = _change(analysis, wid, info.name, ref.name)
                rows.append([
                    str(n), str(n + 1),
                    str(row.summary.n) if row and row.summary else "0",
                    fmt_mean_ci(row.summary if row else None, unit),
                    fmt_change(change), fmt_p(p),
                    fmt_mean_ci(cpu_row.summary if cpu_row else None, "%"),
                    fmt_value(re_row.summary.mean if re_row and re_row.summary else None,
                              "segments")])
            fit = _fit(analysis, wid, counts)
            ref_count = next(n for n, v in counts.items() if v is ref)
            paragraphs = [
                f"Router throughput ({THROUGHPUT}, {unit}): {tput.description}. Mean over "
                f"the repetitions with its {level} CI, per number of stressed neighbours; the "
                "study's 'VNFs' are the router plus its neighbours. Change: 100 × (mean / mean "
                f"with {ref_count} neighbours on the same host − 1) in %, with its "
                f"{level} CI; p is Welch's t or Mann–Whitney U (Holm-corrected when the "
                "report compares the same pair, i.e. for the baseline's own run)."]
            if cpu:
                paragraphs.append(f"CPU busy ({CPU}, %): {cpu.description}.")
            if retrans:
                paragraphs.append(f"Retransmits ({RETRANSMITS}, segments, mean per trial): "
                                  f"{retrans.description}.")
            warnings = []
            if fit is not None:
                f = fit.fit
                paragraphs.append(
                    f"Degradation range (study 002's term): the smallest and largest drop of "
                    f"mean throughput from one neighbour count to the next: "
                    f"{fmt_value(fit.drop_min, unit)} to {fmt_value(fit.drop_max, unit)} (a "
                    "rise counts as a negative drop).")
                paragraphs.append(
                    f"Linear fit of throughput on neighbours over all {f.n} repetitions "
                    f"(ordinary least squares, not on the means): slope "
                    f"{fmt_num(f.slope)} {unit} per neighbour, {analysis.confidence:.0%} t "
                    f"interval (n − 2 df) {fmt_num(f.slope_ci_low)} to "
                    f"{fmt_num(f.slope_ci_high)}; intercept {fmt_value(f.intercept, unit)}; "
                    f"R² {fmt_num(f.r_squared, 3)}.")
                summary_rows.append([
                    label or analysis.runs[0].host, f"{min(counts)}–{max(counts)}",
                    f"{fmt_value(fit.drop_min, unit)} – {fmt_value(fit.drop_max, unit)}",
                    f"{fmt_num(f.slope)} [{fmt_num(f.slope_ci_low)}, "
                    f"{fmt_num(f.slope_ci_high)}]", fmt_num(f.r_squared, 3), str(f.n)])
            else:
                warnings.append("no degradation range or fit: throughput was measured at fewer "
                                "than two neighbour counts (or fewer than 3 trials)")
            title = f"{wid}: throughput vs stressed neighbours"
            sections.append(Section(
                key="-".join(p for p in ("vnf-scalability", wid, label) if p),
                title=f"{title} — {label}" if label else title,
                paragraphs=paragraphs,
                columns=["neighbours", "VNFs", "n", f"throughput ({unit}) {ci}",
                         f"change % {ci}", "p", f"CPU busy (%) {ci}",
                         "retransmits (segments)"],
                rows=rows, warnings=warnings,
                metrics=[(wid, m.name) for m in (tput, cpu, retrans) if m is not None]))
        if summary_rows:
            sections.append(Section(
                key=f"vnf-scalability-summary-{wid}",
                title=f"{wid}: scalability summary per host",
                paragraphs=[
                    "Per host (run): the range of neighbour counts measured; the degradation "
                    f"range (smallest – largest drop of mean throughput between consecutive "
                    f"counts, {unit}); the OLS slope of throughput on neighbours over all "
                    f"repetitions in {unit} per neighbour with its {analysis.confidence:.0%} t "
                    "interval; R² of that fit; and the number of trials fitted."],
                columns=["host", "neighbours", f"degradation range ({unit})",
                         f"slope ({unit}/neighbour) {ci}", "R²", "n"],
                rows=summary_rows))
    return sections


SECTIONS = (SectionPlugin("vnf-scalability", vnf_sections),)
